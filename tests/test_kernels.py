"""Every notebook the tools and tests execute gets a kernel on IPC sockets in a folder of its own, so two kernels
started at once by two test workers cannot be handed the same TCP port (course_tools.kernels)."""

import glob
import os
import re
import tempfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from course_tools.kernels import notebook_client  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

WHERE = """import ipykernel, json, os
info = json.load(open(ipykernel.get_connection_file()))
print(info["transport"], os.path.dirname(info["ip"]), os.getpid())"""


@pytest.mark.slow
@pytest.mark.skipif(os.name == "nt", reason="ZeroMQ has no IPC transport on Windows; the kernel stays on TCP there")
def test_the_kernel_talks_over_ipc_in_a_folder_of_its_own_that_is_removed_with_the_kernel():
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "tc-kernel-*")))
    runs = []
    for _ in range(2):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(WHERE)])
        with notebook_client(nb, timeout=60) as client:
            client.execute()
        transport, folder, pid = nb.cells[0].outputs[0]["text"].split()
        runs.append((transport, folder, int(pid)))
    assert [r[0] for r in runs] == ["ipc", "ipc"]
    assert runs[0][1] != runs[1][1], "two kernels shared a socket folder"
    for _, folder, pid in runs:
        assert not os.path.exists(folder), f"the kernel's socket folder {folder} was left behind"
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # the client owned its kernel and shut it down
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "tc-kernel-*"))) <= before


def test_a_caller_that_brings_its_own_kernel_manager_or_config_is_told_what_to_drop():
    nb = nbformat.v4.new_notebook()
    for option in ("km", "config"):
        with pytest.raises(TypeError, match="pass neither km nor config"):
            with notebook_client(nb, **{option: None}):
                pass


def test_nothing_in_the_project_builds_a_notebook_client_on_tcp():
    """A client built anywhere else than course_tools.kernels would start its kernel on TCP ports again; the
    classroom's sandbox builds its own kernel manager, on IPC, to retry a slow start."""
    built = re.compile(r"NotebookClient\(|KernelManager\(")
    found = []
    for folder in ("course_tools", "transformer_course", "benchmarks", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if built.search(line) and not line.lstrip().startswith("#"):
                    found.append((path.relative_to(REPO).as_posix(), number, line.strip()))
    outside = [f for f in found if f[0] not in ("course_tools/kernels.py", "tests/test_kernels.py")]
    assert all(f[0] == "course_tools/classroom/sandbox.py" and 'transport="ipc"' in f[2] for f in outside), outside
