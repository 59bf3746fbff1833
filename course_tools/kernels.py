"""A notebook client whose kernel cannot collide with another kernel started at the same moment.

Over TCP, jupyter_client finds five free ports, closes them, and writes their numbers into the kernel's
connection file; the kernel binds them a moment later. A second kernel started in that moment, by another test
worker or another tool, can be handed the same port, and the first then dies before it replies ("Address already
in use", "Kernel died before replying to kernel_info"). Over IPC each kernel's sockets are files in a folder of its
own, so two kernels share nothing. ZeroMQ has no IPC transport on Windows: there the kernel stays on TCP.

Every tool and test that executes a notebook builds its client with :func:`notebook_client`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["notebook_client"]


@contextmanager
def notebook_client(nb, **options) -> Iterator[object]:
    """An ``nbclient.NotebookClient`` for ``nb`` (``options`` as it takes them; ``kernel_name`` defaults to
    python3) whose kernel talks over IPC sockets in a new folder, removed when the block ends. The client owns its
    kernel manager, so ``execute()`` shuts the kernel down as it does by default."""
    import nbclient
    from traitlets.config import Config

    options.setdefault("kernel_name", "python3")
    if "km" in options or "config" in options:
        raise TypeError("notebook_client builds the kernel manager's config itself; pass neither km nor config")
    if os.name == "nt":
        yield nbclient.NotebookClient(nb, **options)
        return
    folder = tempfile.mkdtemp(prefix="tc-kernel-")  # short: a socket's path must fit in about 100 bytes
    try:
        config = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "k")}})
        yield nbclient.NotebookClient(nb, config=config, **options)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
