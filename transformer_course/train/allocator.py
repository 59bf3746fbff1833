"""Let a CPU training process reuse the memory of the large tensors it frees.

PyTorch's CPU tensors come from the C library's ``malloc``, which has no cache for large blocks: glibc hands
out a block above its mmap threshold (at most 32 MiB by default) as fresh pages from the kernel and returns
them at ``free``. A ``multi30k-cpu`` step makes several (2,160 × 8,000) float tensors of 69 MB (the
logits, their log-probabilities, their gradient), so every step faults in fresh pages, each zeroed by the
kernel before any arithmetic (``python benchmarks/gemm_fraction.py`` counts the page faults of a step with
and without this). :func:`keep_freed_memory` raises glibc's mmap and trim
thresholds (``mallopt``) so that blocks up to 1 GiB come from the heap and freed ones are reused.
PyTorch's CPU performance tuning guide recommends a caching allocator (jemalloc, tcmalloc) for the same reason.

The price: the process keeps the memory of its largest step instead of returning it to the system between
steps. ``train`` (the command line) calls it; ``fit`` does not, so a notebook's kernel keeps glibc's defaults.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["keep_freed_memory", "KEEP_LIMIT"]

KEEP_LIMIT = 1 << 30  # bytes: blocks up to this size come from the heap and stay there when freed
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (glibc's malloc.h)
_applied = False


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds to :data:`KEEP_LIMIT` for this process; True where that took
    effect (Linux with glibc), False elsewhere (macOS, Windows, musl), where nothing changes."""
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # glibc only: musl's mallopt accepts the call and ignores it  # noqa: B018
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _applied = mallopt(_M_MMAP_THRESHOLD, KEEP_LIMIT) == 1 and mallopt(_M_TRIM_THRESHOLD, KEEP_LIMIT) == 1
    return _applied
