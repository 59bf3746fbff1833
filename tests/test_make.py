"""The learner's command: ``make course`` installs what a learner needs and opens JupyterLab, as root too.

Containers and cloud notebooks often run as root, where JupyterLab refuses to start without ``--allow-root``;
the Makefile adds the flag only when the user is root. ``make course`` installs the ``[notebooks]`` extra,
not the maintainers' ``[dev]`` (nbgrader, pytest, ruff); ``make test`` and ``make test-fast`` install ``[dev]``.

The end-to-end test reuses the running virtual environment through the Makefile's ``VENV`` variable (a folder
whose ``bin`` is this interpreter's, with the install stamp in place, so make installs nothing), starts
JupyterLab headless on a port the server picks itself, fetches ``/lab`` and stops it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")
needs_make = pytest.mark.skipif(MAKE is None, reason="make is not installed")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
MAKEFILE_VARIABLES = ("PYTHON", "VENV", "TORCH_SPEC", "TORCH_PIP_ARGS", "PYTEST_ARGS", "LAB_ARGS")


def own_make_env(**extra: str) -> dict:
    """This environment without the variables of a make that runs the tests: ``make test-fast TORCH_SPEC=…``
    passes its command-line variables down through MAKEFLAGS and the environment."""
    ours = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", *MAKEFILE_VARIABLES}
    env = {k: v for k, v in os.environ.items() if k not in ours}
    return {**env, **extra}


def dry_run(*args: str) -> str:
    """The commands ``make -n …`` would run (none is run)."""
    out = subprocess.run([MAKE, "-n", *args], cwd=REPO, env=own_make_env(), capture_output=True, text=True, check=True)
    return out.stdout


@needs_make
def test_make_course_installs_the_notebooks_extra_not_the_maintainers_tools(tmp_path):
    commands = dry_run("course", f"VENV={tmp_path / 'fresh'}")
    assert 'pip install -e ".[notebooks]"' in commands
    assert "[dev]" not in commands and "nbgrader" not in commands
    torch_line = commands.index('pip install "torch==2.13.0"')  # torch first and on its own
    assert torch_line < commands.index('pip install -e ".[notebooks]"')


@needs_make
def test_make_test_and_test_fast_install_the_dev_extra(tmp_path):
    for target in ("test", "test-fast"):
        assert 'pip install -e ".[dev]"' in dry_run(target, f"VENV={tmp_path / 'fresh'}"), target


@needs_make
def test_make_course_adds_allow_root_only_for_root(tmp_path):
    venv = reused_venv(tmp_path)
    [lab] = [line for line in dry_run("course", f"VENV={venv}").splitlines() if "jupyter lab" in line]
    assert ("--allow-root" in lab) == IS_ROOT, lab


def reused_venv(tmp_path: Path) -> Path:
    """A VENV folder for make whose bin/ is the running interpreter's, already 'installed' for the course."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.executable).parent, target_is_directory=True)
    (venv / ".installed-notebooks").touch()  # newer than pyproject.toml: make installs nothing
    return venv


@pytest.mark.slow  # starts JupyterLab (seconds)
@needs_make
def test_make_course_starts_jupyterlab_and_serves_the_lab_page(tmp_path):
    pytest.importorskip("jupyterlab")
    venv, runtime = reused_venv(tmp_path), tmp_path / "runtime"
    env = own_make_env(
        JUPYTER_RUNTIME_DIR=str(runtime),  # where the server writes its port and token
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),  # no user settings
        JUPYTER_PLATFORM_DIRS="1",
    )
    lab_args = "--no-browser --port=0 --ServerApp.token=tc-test --ServerApp.ip=127.0.0.1"
    server = subprocess.Popen(
        [MAKE, "course", f"VENV={venv}", f"LAB_ARGS={lab_args}"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # make, jupyter and its children: one process group to stop
    )
    try:
        info = server_info(runtime, server)
        with urllib.request.urlopen(f"http://127.0.0.1:{info['port']}/lab?token=tc-test", timeout=60) as page:
            assert page.status == 200
            html = page.read().decode("utf-8")
        assert "<title>JupyterLab</title>" in html
        assert info["root_dir"] == str(REPO / "notebooks")  # opened on notebooks/
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.communicate(timeout=60)


def server_info(runtime: Path, server: subprocess.Popen) -> dict:
    """The running server's jpserver-PID.json (port, token, root_dir), once it has written it."""
    deadline = time.monotonic() + 180  # a guard against a hang, not a speed target
    while True:
        found = sorted(runtime.glob("jpserver-*.json"))
        if found:
            try:
                return json.loads(found[0].read_text())
            except json.JSONDecodeError:  # being written
                pass
        if server.poll() is not None:
            pytest.fail(f"make course ended (exit {server.returncode}):\n{server.stdout.read()[-3000:]}")
        assert time.monotonic() < deadline, "JupyterLab did not start within 180 s"
        time.sleep(0.2)
