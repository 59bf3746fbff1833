"""The grading kernel's guard: a runaway cell scores zero, and every other cell is still graded.

nbgrader runs each submission in a fresh IPython kernel; ``nbgrader_config.py`` (written by
``python -m transformer_course classroom``) starts that kernel with :func:`kernel_arguments`, whose
``--IPKernelApp.exec_lines`` calls :func:`install` before the notebook's first cell. The guard then:

- **limits memory**: the kernel's data segment (``RLIMIT_DATA``: heap and private writable mappings, so a
  Python list, a ``bytearray`` or a torch tensor) may grow ``memory_gib`` beyond what it held at start, so a
  growing list or tensor raises ``MemoryError`` (torch: ``RuntimeError: … can't allocate memory``) inside the
  cell instead of waking the system's OOM killer, which would end the kernel and lose the submission;
- **frees what such a cell held**: after an out-of-memory error the names the cell bound or rebound are removed
  from the notebook's namespace (one printed line names them) and garbage collected, with the locals of the
  traceback's frames, so the next cells have their memory back;
- **caps each cell's printed text** at ``output_mb`` MB (stdout and stderr together); beyond it the text is
  dropped and one line says so, so a print loop cannot flood the grader;
- **says why a runaway scores zero**: before the traceback of a timeout (nbgrader interrupts the cell with
  SIGINT, which the guard's handler turns into ``KeyboardInterrupt``; a ``KeyboardInterrupt`` the cell raises
  itself is shown as its error, with no such line) or of an out-of-memory error it prints one line, in the
  notebook's language (:mod:`transformer_course.i18n`), e.g. "this cell ran longer than 120 s and was stopped: it
  scores 0; the other cells were graded". In a cell that is not graded itself (a solution cell: its exercise is
  graded by the checker cells after it) the grader (:mod:`.autograde`, which knows the cells' metadata) puts
  :data:`TIMEOUT_UNGRADED` in that line's place. The error output stays, so nbgrader scores a graded cell zero.

The guard itself writes only to stdout: any stderr output would zero a graded cell. The memory limit needs Linux
(``/proc/self/status``); elsewhere only the output cap and the lines are installed.
"""

from __future__ import annotations

import gc
import re
import resource
import signal
import sys
import threading
import traceback
from contextlib import contextmanager
from pathlib import Path

from transformer_course.i18n import register, t

__all__ = [
    "DEFAULT_MEMORY_GIB",
    "TIMEOUT",
    "TIMEOUT_UNGRADED",
    "ungraded_timeout",
    "DEFAULT_OUTPUT_MB",
    "OutputCap",
    "bound_names",
    "execute_config",
    "is_out_of_memory",
    "install",
    "kernel_arguments",
    "remove_names",
]

DEFAULT_MEMORY_GIB = 4.0  # beyond the kernel's start (torch loaded); fast 08, 11, 09, 10 peaked 0.37, 0.35, 0.26, 0.22
DEFAULT_OUTPUT_MB = 1.0  # printed text per cell
OUTPUT_LINES = 900  # and lines per cell: nbgrader keeps 1000 (LimitOutput), so the guard's lines stay in view
IOPUB_TIMEOUT_S = 60  # after a reply, for its last outputs (the guard's clean-up of a big list); nbclient's is 4

TIMEOUT = "this cell ran longer than {seconds} s and was stopped: it scores 0; the other cells were graded"
TIMEOUT_UNGRADED = (
    "this cell ran longer than {seconds} s and was stopped; it is not graded itself: the graded cells after it check "
    "what it defined"
)
MEMORY = "this cell used more than {gib} GiB of memory and was stopped: it scores 0; the other cells were graded"
FREED = "to give the memory back, the names this cell bound were removed: {names}"
DROPPED = "… the rest of this cell's output (over {mb} MB or {lines} lines) was dropped"
register(
    "zh",
    {
        TIMEOUT: "此单元格运行超过 {seconds} 秒，已被停止：得 0 分；其他单元格照常评分",
        TIMEOUT_UNGRADED: "此单元格运行超过 {seconds} 秒，已被停止；它本身不计分：后面的评分单元格核对它定义的内容",
        MEMORY: "此单元格使用的内存超过 {gib} GiB，已被停止：得 0 分；其他单元格照常评分",
        FREED: "为归还内存，已删除此单元格绑定的名称：{names}",
        DROPPED: "…… 此单元格其余的输出（超过 {mb} MB 或 {lines} 行）已丢弃",
    },
)

CPU_ALLOCATION_FAILED = re.compile(r"can't allocate memory|not enough memory", re.I)  # torch's CPU allocator
IPYTHON_NAMES = re.compile(r"_+|_i+|_i?\d+|In|Out|exit|quit|get_ipython")  # the shell's own bookkeeping


def kernel_arguments(timeout_s: int, memory_gib: float = DEFAULT_MEMORY_GIB, output_mb: float = DEFAULT_OUTPUT_MB):
    """The kernel's command-line arguments for ``c.Execute.extra_arguments``: nbgrader's default (no history
    file) and the line that installs the guard (binding no name in the notebook's namespace)."""
    call = f"install(timeout_s={timeout_s!r}, memory_gib={memory_gib!r}, output_mb={output_mb!r})"
    line = f"__import__({__name__!r}, fromlist=['install']).{call}"
    return ["--HistoryManager.hist_file=:memory:", f"--IPKernelApp.exec_lines={[line]!r}"]


def execute_config(timeout_s: int, memory_gib: float = DEFAULT_MEMORY_GIB) -> list[str]:
    """The lines of ``nbgrader_config.py`` that set how nbgrader runs a submission's cells."""
    return [
        "# A cell that runs longer than this is interrupted: it scores zero, and grading goes on with the next cell.",
        f"c.Execute.timeout = {timeout_s}",
        "c.Execute.interrupt_on_timeout = True",
        "c.Execute.startup_timeout = 180  # seconds for a kernel to start on a busy grading machine",
        "# After the interrupt, wait this long for the cell's last output (a huge list takes seconds to free), then go",
        "# on without it: raising instead (nbgrader's default) would remove the whole submission.",
        f"c.Execute.iopub_timeout = {IOPUB_TIMEOUT_S}",
        "c.Execute.raise_on_iopub_timeout = False",
        f"# The kernel's guard (course_tools.classroom.kernel_guard): a notebook may use {memory_gib:g} GiB",
        f"# beyond its kernel's start, a cell may print {DEFAULT_OUTPUT_MB:g} MB ({OUTPUT_LINES} lines); a runaway",
        "# cell scores zero with a line saying why.",
        f"c.Execute.extra_arguments = {kernel_arguments(timeout_s, memory_gib)!r}",
        f"c.LimitOutput.max_lines = 1000  # nbgrader keeps 1000 lines of output; the guard stops at {OUTPUT_LINES}",
    ]


def is_out_of_memory(error: BaseException) -> bool:
    """True for Python's ``MemoryError`` and for torch's failed CPU allocation (a ``RuntimeError``)."""
    return isinstance(error, MemoryError) or (
        isinstance(error, RuntimeError) and CPU_ALLOCATION_FAILED.search(str(error)) is not None
    )


def bound_names(namespace: dict, before: dict[str, int]) -> list[str]:
    """The names of ``namespace`` that are new or bound to another object than in ``before`` (name → ``id``),
    without the shell's own (``_``, ``_i3``, ``Out`` …)."""
    return sorted(
        name for name, value in namespace.items() if before.get(name) != id(value) and not IPYTHON_NAMES.fullmatch(name)
    )


def remove_names(namespace: dict, names: list[str]) -> None:
    """Delete ``names`` from ``namespace`` and collect the garbage they leave."""
    for name in names:
        namespace.pop(name, None)
    gc.collect()


class OutputCap:
    """At most ``cap`` characters and ``max_lines`` lines of printed text per cell (stdout and stderr together;
    :meth:`reset` starts a cell); beyond them the text is dropped and ``notice()`` is written once, to stdout
    (never to stderr)."""

    def __init__(self, cap: int, max_lines: int, notice) -> None:
        self.cap, self.max_lines, self.notice, self.notice_write = cap, max_lines, notice, None
        self.reset()

    def reset(self) -> None:
        self.written, self.lines, self.dropped = 0, 0, False

    def wrap(self, write, stdout: bool):
        """``write`` (a stream's), capped; stdout's own write is the one the notice goes through."""
        if stdout:
            self.notice_write = write

        def capped(text, *args, **kwargs):
            if self.dropped:
                return len(text)
            lines = text.count("\n")
            if self.written + len(text) <= self.cap and self.lines + lines <= self.max_lines:
                self.written, self.lines = self.written + len(text), self.lines + lines
                return write(text, *args, **kwargs)
            room = text[: max(self.cap - self.written, 0)].split("\n")[: self.max_lines - self.lines]
            self.dropped = True
            write("\n".join(room))
            (self.notice_write or write)(f"\n{self.notice()}\n")
            return len(text)

        return capped

    def say(self, line: str) -> None:
        """Print the guard's own ``line`` to stdout, past the cap."""
        (self.notice_write or sys.stdout.write)(line + "\n")

    def install(self, shell) -> None:
        """Cap ``sys.stdout`` and ``sys.stderr`` of ``shell``'s cells. IPython 9 wraps each stream's ``write`` for
        the length of a cell to keep its output in the history (``shell._tee``): the cap goes outside that
        wrapper, so dropped text is not kept either."""
        tee = getattr(shell, "_tee", None)
        if tee is None:  # an IPython without _tee: cap the streams once
            sys.stdout.write = self.wrap(sys.stdout.write, stdout=True)
            sys.stderr.write = self.wrap(sys.stderr.write, stdout=False)
            return

        @contextmanager
        def capped_tee(channel):
            with tee(channel):
                stream = getattr(sys, channel)
                write = stream.write
                stream.write = self.wrap(write, stdout=channel == "stdout")
                try:
                    yield
                finally:
                    stream.write = write

        shell._tee = capped_tee


def data_bytes() -> int | None:
    """The process's data segment now (``VmData`` of ``/proc/self/status``), or None where there is no /proc."""
    status = Path("/proc/self/status")
    if not status.exists():
        return None
    found = re.search(r"^VmData:\s+(\d+) kB", status.read_text(), re.M)
    return int(found.group(1)) * 1024 if found else None


def set_data_limit(limit: int | None) -> None:
    if limit is not None:
        hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
        resource.setrlimit(resource.RLIMIT_DATA, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def install(
    timeout_s: int, memory_gib: float = DEFAULT_MEMORY_GIB, output_mb: float = DEFAULT_OUTPUT_MB, shell=None
) -> None:
    """Guard the running IPython kernel (``shell``: the current one); see the module's docstring."""
    shell = shell or get_ipython_shell()
    start = data_bytes()
    limit = None if start is None or memory_gib <= 0 else start + int(memory_gib * 2**30)
    before: dict[str, int] = {}

    output = OutputCap(int(output_mb * 1e6), OUTPUT_LINES, lambda: t(DROPPED, mb=f"{output_mb:g}", lines=OUTPUT_LINES))
    output.install(shell)

    cell = {"interrupted": False}

    def on_sigint(signum, frame):  # the grader's interrupt (a timeout), told apart from a cell's own raise
        cell["interrupted"] = True
        raise KeyboardInterrupt

    def pre_run_cell(info=None) -> None:
        output.reset()
        before.clear()
        before.update({name: id(value) for name, value in shell.user_ns.items()})
        cell["interrupted"] = False
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, on_sigint)

    def report(self, etype, value, tb, tb_offset) -> None:
        if is_out_of_memory(value):
            output.say(t(MEMORY, gib=f"{memory_gib:g}"))
            names = [n for n in bound_names(self.user_ns, before) if n not in self.user_ns_hidden]
            if names:
                remove_names(self.user_ns, names)
                output.say(t(FREED, names=", ".join(names)))
        else:
            output.say(t(TIMEOUT, seconds=timeout_s))
        self.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
        traceback.clear_frames(tb)  # the interrupted functions' locals (a huge list) are freed now
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            if hasattr(sys, name):
                setattr(sys, name, None)
        gc.collect()

    def on_runaway(self, etype, value, tb, tb_offset=None):
        timed_out = issubclass(etype, KeyboardInterrupt) and cell["interrupted"]
        if not (is_out_of_memory(value) or timed_out):  # a KeyboardInterrupt the cell raised itself: its error
            self.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
            return None
        main = threading.current_thread() is threading.main_thread()
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None  # a late timeout waits
        set_data_limit(None if limit is None else limit + 2**28)  # room to print and clean up
        try:
            report(self, etype, value, tb, tb_offset)
        except BaseException:  # IPython would drop a handler that raises: show the cell's error as it is instead
            self.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
        finally:
            set_data_limit(limit)
            if main:
                signal.signal(signal.SIGINT, interrupt)
        return None

    shell.events.register("pre_run_cell", pre_run_cell)
    shell.set_custom_exc((KeyboardInterrupt, MemoryError, RuntimeError), on_runaway)
    set_data_limit(limit)


def get_ipython_shell():
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("the grading guard runs inside an IPython kernel; none is running here")
    return shell


def ungraded_timeout(outputs: list, timeout_s: int) -> None:
    """In the outputs of a cell that is not graded, the timeout's line (en or zh) says so instead of "it scores 0"."""
    from transformer_course.i18n import get_language, set_language

    language = get_language()
    try:
        pairs = []
        for lang in ("en", "zh"):
            set_language(lang)
            pairs.append((t(TIMEOUT, seconds=timeout_s), t(TIMEOUT_UNGRADED, seconds=timeout_s)))
    finally:
        set_language(language)
    for output in outputs:
        if output.get("output_type") == "stream" and isinstance(output.get("text"), str):
            for said, meant in pairs:
                output["text"] = output["text"].replace(said, meant)
