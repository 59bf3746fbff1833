"""Run one submission where it cannot reach the course: a child process in its own mount, pid and network namespaces.

The grader (:mod:`.judge`, in nbgrader's own process) copies the one submission into a scratch folder and calls
:func:`run`, which starts ``unshare --mount --pid --net --fork --mount-proc`` (util-linux; ``--user --map-root-user``
added when the grader is not root). Inside, before any student code runs, :func:`inside`:

- makes a private copy of the mount table and hides what the student may not see, each under an empty tmpfs:
  the course folder (``source/``, ``release/``, ``autograded/``, ``gradebook.db``, the other assignments), the
  repository the package was installed from (its ``notebooks/solutions``, ``tests/``), ``/tmp`` and ``/home``; it
  binds back, read-only, only what the grading needs: the installed package, these tools, the Python environment
  and the data folder;
- makes the root file system read-only and gives the child a fresh ``/dev/shm``: it writes only to the scratch
  folder (bound back read-write) and to the private tmpfs mounts, which vanish with it;
- has no network (a fresh network namespace with no interface up; the kernel talks to its client over unix
  sockets in the scratch folder);
- sets resource limits (CPU seconds, file size, address space; processes when it runs as ``nobody``), a scrubbed
  environment (no variable of the teacher's but the few the course reads), and drops its privileges: as root, it
  becomes ``nobody`` with no capability; otherwise it keeps the user's own id in the user namespace and drops
  every capability, so it cannot undo a mount;
- then executes the notebook (:func:`execute`: nbclient and a fresh kernel, both inside).

The process that ran :func:`inside` is the pid namespace's first process: when it ends, the kernel ends and so
does every process the student started (a detached child, a fork, a daemon thread's process), and the parent kills
the whole namespace at its time limit. Where ``unshare`` is missing or not permitted, :func:`run` falls back to a
plain child process in its own session with the same limits and environment, killed as a process group; what no
longer holds there is in docs/teaching.md ("Grading at a process boundary").
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["SPEC", "Isolation", "execute", "inside", "isolation", "run", "run_notebook"]

SPEC = ".tc_sandbox.json"  # what to run, written by the parent into the scratch folder
EXECUTED = ".tc_executed.ipynb"  # the notebook with its outputs, written by the child (read as untrusted data)
RECORDS = ".tc_records"  # the checks' observations (judge.py), one file per check
STAGE_CANDIDATES = ("/mnt", "/media", "/srv", "/opt")  # an existing folder to mount a staging tmpfs on
NOBODY = 65534
PASSED_ENV = ("LANG", "LC_ALL", "TC_FAST", "TC_DATA_MIRROR", "TC_CHECKPOINT", "TC_LANGUAGE")


class Isolation(str):
    """How the child is isolated: ``"namespaces"`` (root: mounts, pid, net, then nobody), ``"user-namespaces"``
    (not root: the same in a user namespace, capabilities dropped) or ``"process"`` (a plain child process)."""


def _can_unshare(user: bool) -> bool:
    if shutil.which("unshare") is None:
        return False
    flags = ["--user", "--map-root-user"] if user else []
    try:
        done = subprocess.run(
            ["unshare", *flags, "--mount", "--pid", "--net", "--fork", "--mount-proc", "true"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def isolation() -> Isolation:
    """The strongest isolation this machine permits (``TC_SANDBOX=process`` asks for the fallback)."""
    if os.environ.get("TC_SANDBOX") == "process":
        return Isolation("process")
    if os.geteuid() == 0 and _can_unshare(user=False):
        return Isolation("namespaces")
    if _can_unshare(user=True):
        return Isolation("user-namespaces")
    return Isolation("process")


def _hidden(course: Path) -> list[str]:
    """Folders the child may not see: the course, the repository the package comes from, /tmp, /home, /root."""
    import transformer_course

    package = Path(transformer_course.__file__).resolve().parent
    found = [str(course.resolve()), "/tmp", "/home", "/root", "/var/tmp"]
    if any((package.parent / name).exists() for name in ("pyproject.toml", ".git", "notebooks")):
        found.append(str(package.parent))  # a checkout (an editable install): its solutions and tests hidden
    return [f for f in dict.fromkeys(found) if _exists(f) and Path(f).is_dir()]


def _kept() -> list[str]:
    """Folders the child needs, bound back read-only where a hidden folder covers them."""
    import transformer_course

    package = Path(transformer_course.__file__).resolve().parent
    tools = Path(__file__).resolve().parents[1]
    kept = [str(package), str(tools), sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix)]
    kept.append(str(Path(os.path.realpath(sys.executable)).parents[1]))  # the interpreter a venv links to
    data = package.parent / "data"
    if data.is_dir():
        kept.append(str(data))
    for name in ("TC_DATA_MIRROR", "TC_CHECKPOINT"):
        if os.environ.get(name):
            kept.append(os.environ[name])
    return [k for k in dict.fromkeys(kept) if k and _exists(k) and k != "/"]


def _exists(path: str) -> bool:
    """Whether ``path`` exists for this user: a folder a non-root teacher may not enter counts as absent."""
    try:
        return Path(path).exists()
    except OSError:  # PermissionError: a parent this user cannot enter
        return False


def environment(scratch: Path) -> dict[str, str]:
    """The child's environment: nothing of the teacher's but PATH, the language and the course's own variables."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env.update(
        PATH=os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        HOME=str(scratch),
        TMPDIR=str(scratch),
        MPLCONFIGDIR=str(scratch / ".mpl"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONNOUSERSITE="1",
        JUPYTER_RUNTIME_DIR=str(scratch / ".runtime"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    env.setdefault("TC_FAST", "1")
    return env


def run(scratch: Path, course: Path, spec: dict, wall_s: float, mode: Isolation | None = None) -> tuple[Isolation, str]:
    """Execute the notebook ``spec["notebook"]`` of ``scratch`` in a child isolated by ``mode`` (default: the
    strongest this machine permits); kill it and all it started after ``wall_s`` seconds. Returns the mode and the
    child's own log (stdout and stderr, the last 20,000 characters)."""
    mode = mode or isolation()
    scratch = Path(scratch).resolve()
    spec = dict(spec, scratch=str(scratch), hide=_hidden(course), keep=_kept(), mode=str(mode))
    (scratch / RECORDS).mkdir(exist_ok=True)
    (scratch / SPEC).write_text(json.dumps(spec), encoding="utf-8")
    if mode == "namespaces":  # the child runs as nobody: it owns the scratch folder, nothing else
        for path in [scratch, *scratch.rglob("*")]:
            os.lchown(path, NOBODY, NOBODY)
    entry = [sys.executable, "-m", "course_tools.classroom.sandbox", "inside", str(scratch / SPEC)]
    if mode == "process":
        command = [sys.executable, "-m", "course_tools.classroom.sandbox", "execute", str(scratch / SPEC)]
    else:
        user = ["--user", "--map-root-user"] if mode == "user-namespaces" else []
        command = ["unshare", *user, "--mount", "--pid", "--net", "--fork", "--mount-proc", "--kill-child", *entry]
    env = environment(scratch) | {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    process = subprocess.Popen(
        command,
        cwd=scratch,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=(lambda: _limits(spec)) if mode == "process" else None,
    )
    try:
        log, _ = process.communicate(timeout=wall_s)
    except subprocess.TimeoutExpired:
        log = b""
    finally:
        _kill_group(process)
    text = log.decode("utf-8", "replace")[-20000:]
    return mode, text


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _limits(spec: dict, nproc: bool = False) -> None:
    """The child's resource limits: CPU seconds, file size, address space (and processes, as nobody)."""
    limits = {
        resource.RLIMIT_CPU: int(spec.get("cpu_s", 3600)),
        resource.RLIMIT_FSIZE: int(spec.get("file_mb", 256)) * 2**20,
        resource.RLIMIT_AS: int(spec.get("address_gib", 64)) * 2**30,
        resource.RLIMIT_CORE: 0,
    }
    if nproc:
        limits[resource.RLIMIT_NPROC] = int(spec.get("nproc", 512))
    for which, value in limits.items():
        hard = resource.getrlimit(which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


def inside(spec_path: str) -> int:
    """The first process of the namespaces: hide the course, limit, drop privileges, then :func:`execute`."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    scratch = spec["scratch"]
    _mount("--make-rprivate", "/")
    stage = next((s for s in STAGE_CANDIDATES if os.path.isdir(s)), None)
    if stage is None:
        raise SystemExit("no folder to stage the mounts on (/mnt, /media, /srv or /opt)")
    _mount("-t", "tmpfs", "-o", "size=1m,mode=755", "tmpfs", stage)
    hide = [h for h in spec["hide"] if os.path.isdir(h)]
    hide = [h for h in hide if not any(h != o and h.startswith(o.rstrip("/") + "/") for o in hide)]  # outermost
    keep = [k for k in spec["keep"] if any(k == h or k.startswith(h.rstrip("/") + "/") for h in hide)]
    keep = [k for k in keep if not any(k != o and k.startswith(o.rstrip("/") + "/") for o in keep)]  # outermost
    kept = {}
    for i, path in enumerate([*keep, scratch]):
        kept[path] = f"{stage}/{i}"
        os.makedirs(kept[path])
        _mount("--rbind", path, kept[path])
    try:
        _mount("-o", "remount,bind,ro", "/")
    except subprocess.CalledProcessError:
        pass  # a locked root mount (a user namespace in a container): the tmpfs and binds below still hold
    for path in sorted(hide, key=len):
        _mount("-t", "tmpfs", "-o", "size=64m,mode=1777", "tmpfs", path)
    if os.path.isdir("/dev/shm"):
        _mount("-t", "tmpfs", "-o", "size=256m,mode=1777", "tmpfs", "/dev/shm")
    for path, staged in kept.items():
        os.makedirs(path, exist_ok=True)
        _mount("--rbind", staged, path)
        if path != scratch:
            _mount("-o", "remount,bind,ro", path)
    subprocess.run(["umount", "-l", stage], capture_output=True)
    _limits(spec, nproc=spec["mode"] == "namespaces")
    os.chdir(scratch)
    python = [sys.executable, "-m", "course_tools.classroom.sandbox", "execute", spec_path]
    if shutil.which("setpriv") is None:
        os.execv(python[0], python)
    drop = ["setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
    if spec["mode"] == "namespaces":
        drop += [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    os.execvp("setpriv", [*drop, *python])
    return 1


def execute(spec_path: str) -> int:
    """Run the notebook with nbclient and a fresh kernel (both in the sandbox, :func:`run_notebook`); write it with
    its outputs to ``EXECUTED``."""
    import nbformat

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    scratch = Path(spec["scratch"])
    os.environ["TC_RECORDS"] = str(scratch / RECORDS)
    nb = nbformat.read(scratch / spec["notebook"], as_version=4)
    run_notebook(nb, spec, scratch)
    nbformat.write(nb, scratch / EXECUTED)
    sys.stdout.flush()
    os._exit(0)  # now: a client whose kernel died would wait on its sockets at exit (zmq), and nothing else is left


def run_notebook(nb, spec: dict, scratch: Path, client_class=None) -> None:
    """Execute ``nb`` in place. A kernel that is slow to start is tried again with twice the time, up to
    ``start_tries`` times (the budget in whole seconds, as nbclient takes it); a kernel that dies (``os._exit``, a
    crash) or a cell that fails ends the run, and what ran until then stays in ``nb``."""
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    client_class = client_class or NotebookClient
    startup = max(1, math.ceil(float(spec.get("startup_timeout", 60))))
    for _ in range(int(spec.get("start_tries", 3))):
        manager = AsyncKernelManager(transport="ipc", ip=str(scratch / ".kernel"), kernel_name="python3")
        client = client_class(
            nb,
            km=manager,
            timeout=spec.get("timeout", 120),
            startup_timeout=startup,
            interrupt_on_timeout=True,
            allow_errors=True,
            iopub_timeout=spec.get("iopub_timeout", 60),
            raise_on_iopub_timeout=False,
            extra_arguments=spec.get("extra_arguments", []),
            record_timing=bool(spec.get("record_timing")),
            resources={"metadata": {"path": str(scratch)}},
            error_on_timeout=spec.get("error_on_timeout"),
        )
        started = time.monotonic()
        try:
            client.execute()
            return
        except DeadKernelError as error:
            print(f"the kernel died: {error}", flush=True)
            return
        except (RuntimeError, TimeoutError) as error:
            ran = any(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
            if ran or "respond" not in str(error) and not isinstance(error, TimeoutError):
                print(f"grading stopped: {type(error).__name__}: {error}", flush=True)
                return
            print(f"the kernel did not start in {time.monotonic() - started:.0f} s; trying again", flush=True)
            startup *= 2
        except Exception as error:  # the run stops; what ran is kept
            print(f"grading stopped: {type(error).__name__}: {error}", flush=True)
            return
    print(f"the kernel did not start in {int(spec.get('start_tries', 3))} tries; nothing ran", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("inside", "execute"):
        raise SystemExit("usage: python -m course_tools.classroom.sandbox inside|execute SPEC")
    sys.exit((inside if sys.argv[1] == "inside" else execute)(sys.argv[2]))
