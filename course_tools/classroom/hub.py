"""The course for a hub's students: one wheel of the package alone, with no solution a student kernel can read.

    python -m transformer_course classroom OUT --hub    # also writes OUT/hub/transformer_course-<version>-py3-none-any.whl
    pip install OUT/hub/transformer_course-0.2.0-py3-none-any.whl      # in the students' kernel environment

``pip install -e .`` (what the repository's Makefile does) leaves the package in the repository, so
``Path(transformer_course.__file__).parents[1] / "notebooks/solutions"`` is one line away from every student's
kernel; ``pip install .`` copies only the package, but from a repository that holds the solutions. The hub
wheel is made from the package folder itself: every file of ``transformer_course/`` (no ``__pycache__``, no
hidden files), its metadata (dependencies and extras from ``pyproject.toml``, or from the installed
distribution), and one added empty marker, ``transformer_course/exercises/SEALED``: with it, the checkers a
student runs while working do not judge quiz letters or bug lines (the graded hidden tests do), and the checker
modules' answer digests are left out (``"sealed:N"``; :mod:`.verdict`), so nothing in the wheel tells a right
answer from a wrong one. It never holds ``notebooks/``. A package folder with a ``solutions`` or ``notebooks`` folder inside is refused.

The wheel is written by this module (a zip file with ``*.dist-info``: PEP 427), not by a build backend, so
the teacher's machine needs no setuptools and the wheel holds exactly the files listed above; it is the same
byte for byte from the same files.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import zipfile
from pathlib import Path

import transformer_course
from transformer_course.files import atomic_write_bytes

from ..folders import plan_writes, read_manifest, remove_written, write_manifest
from .verdict import strip_digests

__all__ = ["HUB_FOLDER", "PACKAGE_DIR", "SEALED", "hub_wheel", "package_files", "write_hub_wheel"]

PACKAGE_DIR = Path(transformer_course.__file__).resolve().parent  # transformer_course/, wherever it is installed
HUB_FOLDER = "hub"
SEALED = "transformer_course/exercises/SEALED"  # the marker the checkers read: this install is a class's
NAME = "transformer_course"
FORBIDDEN = ("solutions", "notebooks")  # folders that would put answers in reach of a student kernel
CHECKER = re.compile(r"^transformer_course/exercises/nb\d\d_\w+\.py$")  # a checker module: its digests left out
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip file can say: the same wheel from the same files


def package_files(package: Path = PACKAGE_DIR) -> dict[str, bytes]:
    """The files of ``package`` as the wheel holds them: ``transformer_course/…`` → content. Raises ValueError
    with one line when the folder holds a ``solutions`` or ``notebooks`` folder, or is not the package."""
    package = Path(package)
    if not (package / "__init__.py").is_file() or not (package / "exercises").is_dir():
        raise ValueError(f"{package} is not the transformer_course package (no __init__.py or exercises/)")
    files = {}
    for path in sorted(package.rglob("*")):
        parts = path.relative_to(package).parts
        if any(part.startswith(".") or part == "__pycache__" for part in parts) or path.suffix in (".pyc", ".pyo"):
            continue
        if path.is_dir() and path.name in FORBIDDEN:
            raise ValueError(
                f"{path} is inside the package; move it out: the hub wheel must not ship a {path.name} folder"
            )
        if path.is_file():
            files["/".join((NAME, *parts))] = path.read_bytes()
    for name in [n for n in files if CHECKER.match(n)]:  # the answers' digests stay with the graded hidden tests
        files[name] = strip_digests(files[name].decode("utf-8"))[0].encode("utf-8")
    files[SEALED] = b""
    return files


def project_metadata(package: Path = PACKAGE_DIR) -> list[str]:
    """The wheel's METADATA fields after Name and Version (``"Summary: …"``, ``"Requires-Dist: …"`` …): from
    the ``pyproject.toml`` beside the package (a checkout), else from the installed distribution."""
    pyproject = Path(package).parent / "pyproject.toml"
    project = {}
    if pyproject.is_file():
        import tomllib

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    if project.get("name") != NAME:
        from importlib import metadata

        try:
            installed = metadata.metadata(NAME)
        except metadata.PackageNotFoundError:
            return []
        keep = ("Summary", "License", "Requires-Python", "Requires-Dist", "Provides-Extra")
        return [f"{key}: {value}" for key in keep for value in installed.get_all(key) or []]
    fields = [f"Summary: {project.get('description', '')}", f"License: {project.get('license', {}).get('text', '')}"]
    fields += [f"Requires-Python: {project['requires-python']}"] if "requires-python" in project else []
    fields += [f"Requires-Dist: {r}" for r in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        fields.append(f"Provides-Extra: {extra}")
        for requirement in requirements:
            spec, _, marker = requirement.partition(";")
            marker = f"({marker.strip()}) and " if marker.strip() else ""
            fields.append(f'Requires-Dist: {spec.strip()}; {marker}extra == "{extra}"')
    return fields


def dist_info(version: str, package: Path = PACKAGE_DIR) -> dict[str, bytes]:
    """The ``*.dist-info`` files but RECORD: METADATA, WHEEL, entry_points.txt."""
    metadata = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version}", *project_metadata(package)]
    wheel = ["Wheel-Version: 1.0", "Generator: course_tools.classroom.hub", "Root-Is-Purelib: true"]
    folder = f"{NAME}-{version}.dist-info"
    return {
        f"{folder}/METADATA": ("\n".join(metadata) + "\n").encode(),
        f"{folder}/WHEEL": ("\n".join([*wheel, "Tag: py3-none-any"]) + "\n").encode(),
        f"{folder}/entry_points.txt": b"[console_scripts]\ntransformer-course = transformer_course.__main__:main\n",
    }


def package_version(package: Path = PACKAGE_DIR) -> str:
    """``__version__`` as ``transformer_course/__init__.py`` writes it (read, not imported)."""
    text = (Path(package) / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.M)
    if match is None:
        raise ValueError(f"{package / '__init__.py'} sets no __version__ = '...'; the wheel's name needs it")
    return match.group(1)


def hub_wheel(package: Path | None = None) -> tuple[str, bytes]:
    """(file name, content) of the hub wheel of ``package`` (default: :data:`PACKAGE_DIR`, this package)."""
    package = Path(package) if package is not None else PACKAGE_DIR
    version = package_version(package)
    files = package_files(package) | dist_info(version, package)
    record_name = f"{NAME}-{version}.dist-info/RECORD"
    record = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(content)}")
            archive.writestr(zip_entry(name), content)
        record.append(f"{record_name},,")
        archive.writestr(zip_entry(record_name), "\n".join(record) + "\n")
    return f"{NAME}-{version}-py3-none-any.whl", buffer.getvalue()


def zip_entry(name: str) -> zipfile.ZipInfo:
    entry = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    entry.external_attr = 0o644 << 16  # -rw-r--r--
    entry.compress_type = zipfile.ZIP_DEFLATED
    return entry


def write_hub_wheel(out: str | Path, command: str, wheel: tuple[str, bytes] | None = None) -> Path:
    """Write ``OUT/hub/<wheel>`` (``wheel``: :func:`hub_wheel`'s (name, content), made now when None) into a course
    folder the classroom build owns (``command``: the builder its manifest names) and add it to the manifest; an
    older hub wheel the build wrote is removed. Returns the wheel's path."""
    out = Path(out)
    name, content = wheel if wheel is not None else hub_wheel()
    target = f"{HUB_FOLDER}/{name}"
    written = read_manifest(out, digests=True) or {}  # each file the build wrote, and its SHA-256
    plan_writes(out, [target], set(written))  # a file the build did not write is never replaced
    remove_written(out, {f for f in written if f.startswith(f"{HUB_FOLDER}/") and f != target})
    atomic_write_bytes(out / target, content)
    kept = {f: digest for f, digest in written.items() if not f.startswith(f"{HUB_FOLDER}/")}
    write_manifest(out, command, {**kept, target: hashlib.sha256(content).hexdigest()})
    return out / target
