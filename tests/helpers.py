"""What several test files share, imported the same way everywhere: ``from helpers import …``.

(Fixtures live in conftest.py; a test file never imports another test file.)

- :func:`solutions` — the reference solutions beside the notebooks, by path;
- :data:`MULTI30K` / :func:`multi30k_files` — the Multi30k files from ``TC_DATA_MIRROR`` (CI points it at a
  local copy) or the clone's ``data/``, nothing else;
- :func:`run_in_fast_mode` — one notebook top to bottom in fast mode, as committed or solved, in a copy of the
  course (English and 中文版), and what its output must say either way (:func:`check_as_committed`,
  :func:`check_solved`);
- the learner's build cells and their reference files (:func:`build_cell`, :func:`reference`,
  :func:`load_module`, :func:`function_bodies`) and :func:`failed_with`, which the exercise tests share;
- the 术语表 reader (:func:`parse_glossary`, :func:`avoided_uses`, …) that the 中文版 and i18n tests share;
- :func:`reference_code_in` — the exercises' reference code found in a set of files (a wheel, an install, a release).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import json
import os
import re
import sys
import types
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import transformer_course as tc
from transformer_course.data import BOS, EOS, MIRROR_ENV, PAD, UNK, multi30k_filename

REPO = Path(__file__).resolve().parent.parent

# ---- the reference solutions ------------------------------------------------------------------------------------

SOLUTIONS_DIR = REPO / "notebooks" / "solutions"


@functools.cache
def solutions(name: str):
    """The reference solutions ``notebooks/solutions/<name>.py`` (e.g. "nb01_masks") as a module.

    They live beside the notebooks, not in the package (a student's install holds none), so tests import them by
    path, under a private module name that no ``import`` statement can reach."""
    path = SOLUTIONS_DIR / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no reference solutions {path}; give the module's name, e.g. solutions('nb01_masks')")
    spec = importlib.util.spec_from_file_location(f"_reference_solutions_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before running it: dataclasses and pickling look their module up there
    spec.loader.exec_module(module)
    return module


# ---- the Multi30k files -----------------------------------------------------------------------------------------


def multi30k_folder() -> Path | None:
    """The folder that holds the six Multi30k files: ``$TC_DATA_MIRROR`` when it is a local folder, else the
    clone's ``data/`` when the files were downloaded there; None when neither holds them."""
    for folder in (os.environ.get(MIRROR_ENV, ""), str(REPO / "data")):
        if folder and "://" not in folder and Path(folder).is_dir():
            if all(
                (Path(folder) / multi30k_filename(s, l)).is_file()
                for s in ("train", "val", "test")
                for l in ("de", "en")
            ):
                return Path(folder).resolve()
    return None


MULTI30K = multi30k_folder()
NO_MULTI30K = f"the Multi30k files are in neither ${MIRROR_ENV} nor data/; set {MIRROR_ENV}=/path/to/multi30k"
needs_multi30k = pytest.mark.skipif(MULTI30K is None, reason=NO_MULTI30K)


# ---- running a notebook -----------------------------------------------------------------------------------------
#
# The execution tests run a notebook with nbclient in fast mode (``TC_FAST=1``), with the ``python3`` kernel, as a
# learner's "Restart Kernel and Run All Cells" would, in a copy of the course's folder layout
# (``tmp/course/notebooks/``, the package, data/, figures/ and solutions/ linked in), so that a run never touches
# the learner's own ``notebooks/my_transformer/`` and does not depend on the order the tests run in. nbformat,
# nbclient and course_tools.classroom are imported where they are used: most tests that import this
# module run no notebook.

NOTEBOOKS_DIR = REPO / "notebooks"
CELL_TIMEOUT_S = 300  # per cell; a whole notebook in fast mode takes seconds to a few minutes
KERNEL_STARTUP_S = 180  # nbclient's default, 60 s, is too short on a busy 2-core CI machine
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# the checkers' blank answers, in English and in the 中文版: this exercise's, or an earlier file's it builds on
NOT_DONE = ("not done yet", "还没有完成", "is not written yet", "还没有写好")
# tc.learner's lines in both languages (exercises/zh/learner.json): a fallback's mark, what names it as not the
# learner's, the line that says whose model it is ("cell N: 模型是…"), the package's model, the learner's own
FALLBACK, NOT_YOURS = ("fallback", "后备"), ("not yours", "不是你的")
MODEL_IS = ("the model is", ": 模型是", ": 模型部分是", ": 模型不是")
PACKAGE_MODEL, YOUR_MODEL = ("the model is the package's", "模型是包的"), ("the model is yours", "模型是你的")


def failing_cell_report(nb, path: Path) -> str:
    """The first cell whose outputs hold an error: its index, its source and the error, without colour codes."""
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                trace = ANSI.sub("", "\n".join(output.get("traceback", [])))
                return (
                    f"{path.name}: cell {index} failed\n--- source ---\n{cell.source}\n"
                    f"--- error: {output['ename']}: {output['evalue']} ---\n{trace[-3000:]}"
                )
    return f"{path.name}: execution failed before any cell reported an error"


def course_copy(tmp_path: Path, language: str = "en") -> Path:
    """A course folder in ``tmp_path`` with the repository's package, data/, runs/, docs/, figures/ and solutions/
    linked in; returns the folder its notebooks run in (``notebooks/`` or ``notebooks/zh/``)."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    for name in ("transformer_course", "data", "runs", "docs", "pyproject.toml"):
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    for name in ("figures", "solutions", "GLOSSARY.md"):
        if (NOTEBOOKS_DIR / name).exists():
            (root / "notebooks" / name).symlink_to(NOTEBOOKS_DIR / name)
    here = root / "notebooks" / "zh" if language == "zh" else root / "notebooks"
    here.mkdir(exist_ok=True)
    return here


def write_earlier_files(notebook: Path, folder: Path) -> list[str]:
    """Into ``folder``/my_transformer/, what the build cells of the notebooks before ``notebook`` (beside it)
    write: the state a learner who ran them in order is in."""
    import nbformat

    from course_tools.classroom.convert import build_file
    from transformer_course.learner import FILES

    written = []
    for file, writer in FILES.items():
        if writer[:2] >= notebook.name[:2] or not (notebook.parent / writer).exists():
            continue
        for cell in nbformat.read(notebook.parent / writer, as_version=4).cells:
            if cell.cell_type == "code" and build_file(cell.source) == file:
                (folder / "my_transformer").mkdir(exist_ok=True)
                (folder / "my_transformer" / "__init__.py").touch()
                (folder / "my_transformer" / file).write_text(cell.source.partition("\n")[2] + "\n", encoding="utf-8")
                written.append(file)
    return written


def run_in_fast_mode(path: Path, monkeypatch, tmp_path, solved: bool = False) -> list[str]:
    """Execute notebook ``path`` top to bottom in fast mode, as committed or ``solved``, in a copy of the course
    (see above); a failure names the cell, its source and its error. Returns the lines the notebook printed or
    displayed, cell by cell.

    As committed, the notebook's ``my_transformer/`` holds what the build cells of the notebooks before it write
    as committed (blanks); solved, every notebook of its folder has its blanks filled from notebooks/solutions/
    (course_tools.classroom.solve), and ``my_transformer/`` is what the solved build cells write."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from course_tools.classroom.solve import solve_notebooks
    from course_tools.kernels import notebook_client

    monkeypatch.setenv("TC_FAST", "1")  # the kernel inherits this environment
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    here = course_copy(tmp_path, "zh" if path.parent.name == "zh" else "en")
    if solved:
        solve_notebooks(here, path.parent, NOTEBOOKS_DIR / "solutions")  # the whole folder: earlier build cells too
    else:
        for other in path.parent.glob("[0-9][0-9]_*.ipynb"):
            (here / other.name).write_bytes(other.read_bytes())
    write_earlier_files(here / path.name, here)
    nb = nbformat.read(here / path.name, as_version=4)
    try:
        with notebook_client(
            nb, timeout=CELL_TIMEOUT_S, startup_timeout=KERNEL_STARTUP_S, resources={"metadata": {"path": str(here)}}
        ) as client:
            client.execute()
    except nbclient.exceptions.CellTimeoutError as error:
        pytest.fail(f"{path.name}: a cell ran longer than {CELL_TIMEOUT_S} s in fast mode\n{error}", pytrace=False)
    except nbclient.exceptions.CellExecutionError:
        pytest.fail(failing_cell_report(nb, path), pytrace=False)
    return printed_lines(nb)


def printed_lines(nb) -> list[str]:
    """Every line the executed notebook printed or displayed as text, prefixed with its cell's index."""
    lines = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            lines += [f"cell {index}: {line}" for line in ANSI.sub("", text).splitlines()]
    return lines


def check_as_committed(path: Path, lines: list[str]) -> None:
    """A notebook as a learner receives it: every ❌ says "not done yet", every fallback says it is not theirs."""
    import nbformat

    from course_tools.classroom.convert import build_stubs

    wrong = [line for line in lines if "❌" in line and not any(word in line for word in NOT_DONE)]
    assert not wrong, f"{path.name} as committed: a check fails other than 'not done yet':\n" + "\n".join(wrong)
    unnamed = [  # "a fallback, not yours"
        line for line in lines if any(w in line for w in FALLBACK) and not any(w in line for w in NOT_YOURS)
    ]
    assert not unnamed, f"{path.name}: a fallback not named as such:\n" + "\n".join(unnamed)
    english = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
    if any(
        build_stubs(c.source) for n in english for c in nbformat.read(n, as_version=4).cells if c.cell_type == "code"
    ):
        assert not [line for line in lines if any(w in line for w in YOUR_MODEL)], f"{path.name}: 'yours' of blanks"


def check_solved(path: Path, lines: list[str]) -> None:
    """A solved notebook: every check ✅, none ❌, no "not done yet", no fallback."""
    import nbformat

    from course_tools.classroom.convert import build_file
    from transformer_course.learner import FILES

    bad = [line for line in lines if "❌" in line or any(word in line for word in (*NOT_DONE, "a fallback", "后备"))]
    assert not bad, f"{path.name} solved:\n" + "\n".join(bad)
    if ".check_" in path.read_text(encoding="utf-8"):
        assert any("✅" in line for line in lines), f"{path.name} solved: no check printed ✅"
    if path.name.startswith("08_"):  # the learner-written model trains: the default, and the variant once
        model_lines = [line for line in lines if any(w in line for w in MODEL_IS)]  # 07's build cell has its switches
        assert model_lines and not any(w in model_lines[0] for w in PACKAGE_MODEL), model_lines
        cells = nbformat.read(path.parent / FILES["decoder.py"], as_version=4).cells
        if any(build_file(c.source) == "decoder.py" and "positional" in c.source for c in cells):
            assert not any(w in line for w in PACKAGE_MODEL for line in model_lines), model_lines


# ---- the learner's build cells and their reference files (the exercise tests) --------------------------------

REFERENCE_FILES = SOLUTIONS_DIR / "my_transformer"  # the reference my_transformer/ the build cells are solved to
EARLIER = ("attention.py", "multi_head.py", "norm_residual.py", "embeddings.py")  # notebooks 02–05's files


def failed_with(result, *words) -> bool:
    """The check failed and its message names the mistake: every one of ``words``, case ignored."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def load_module(path: Path, name: str):
    """The Python file ``path`` imported as module ``name`` (registered in sys.modules before it runs, as
    dataclasses and pickling need)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def build_cell(notebook: Path, file: str) -> str:
    """What the notebook's build cell ``%%writefile my_transformer/<file>`` writes (that first line dropped)."""
    import nbformat

    first = f"%%writefile my_transformer/{file}"
    sources = [
        cell.source.partition("\n")[2]
        for cell in nbformat.read(notebook, as_version=4).cells
        if cell.cell_type == "code" and cell.source.partition("\n")[0].strip() == first
    ]
    if len(sources) != 1:
        raise AssertionError(f"{notebook.name} has {len(sources)} cells that start with {first}; expected one")
    return sources[0]


def reference(module: str):
    """notebooks/solutions/my_transformer/<module>.py, imported as a package of its own (relative imports work)."""
    missing = [f for f in EARLIER if not (REFERENCE_FILES / f).is_file()]
    if missing:
        pytest.skip(f"notebooks/solutions/my_transformer/ lacks {', '.join(missing)} (the reference files of 02–05)")
    name = "_reference_my_transformer"
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(REFERENCE_FILES)]
        sys.modules[name] = package
    return importlib.import_module(f"{name}.{module}")


def function_bodies(tree: ast.Module) -> dict[str, list]:
    """(Class.)function → its body after the docstring, for every function of a parsed file: a scaffold's and
    its reference's compare body by body."""
    found = {}
    for node in ast.walk(tree):
        for child in getattr(node, "body", []):
            if isinstance(child, ast.FunctionDef):
                owner = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
                found[owner + child.name] = child.body[1:] if ast.get_docstring(child) is not None else child.body
    return found


# ---- the 术语表 (notebooks/zh/GLOSSARY.md) ------------------------------------------------------------------------

NOTEBOOKS = NOTEBOOKS_DIR  # the same folder, under the name the 中文版 tests use
ZH = NOTEBOOKS / "zh"
GLOSSARY_EN = NOTEBOOKS / "GLOSSARY.md"
GLOSSARY_ZH = ZH / "GLOSSARY.md"
README = REPO / "README.md"
ENGLISH = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
CHINESE = sorted(ZH.glob("[0-9][0-9]_*.ipynb"))
CJK = re.compile(r"[\u4e00-\u9fff]")
NUMBERS = re.compile(r"\[(\d\d(?:, \d\d)*)\]$")  # the notebook numbers that end an entry: [02, 03]
ZH_SECTION = "## 中文版"


@dataclass(frozen=True)
class Avoided:
    variant: str  # the word the prose must not use
    exceptions: tuple[str, ...]  # longer phrases in which it is fine (the note's 除外：…)


@dataclass(frozen=True)
class Term:
    english: str
    chosen: str
    explanation: str
    avoided: tuple[Avoided, ...]

    @property
    def forms(self) -> set[str]:
        """Every way the chosen column may be written: 交叉注意力（编码器-解码器注意力） gives 交叉注意力,
        编码器-解码器注意力 and 交叉注意力编码器-解码器注意力; 注意力头 / 头 gives both."""
        found = set()
        for alternative in re.split(r"\s+/\s+", self.chosen.replace("`", "")):
            found.add(alternative.strip())
            if "（" in alternative:
                found.add(re.sub(r"（.*?）", "", alternative).strip())
                found.update(re.findall(r"（(.*?)）", alternative))
                found.add(alternative.replace("（", "").replace("）", ""))
        return {form for form in found if form}


def split_outside_brackets(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` that is not inside （） or ()."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "（(" and 1 or 0
        depth -= ch in "）)" and 1 or 0
        if ch == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in parts + [current] if p.strip()]


def parse_avoided(text: str) -> tuple[Avoided, ...]:
    """``数值（指 value 时；除外：数值稳定、数值上）、询问`` → 数值 with two exceptions, and 询问."""
    found = []
    for part in split_outside_brackets(text, "、"):
        variant, _, note = part.partition("（")
        exceptions = re.search(r"除外：([^；）]*)", note)
        found.append(Avoided(variant.strip(), tuple(split_outside_brackets(exceptions[1], "、")) if exceptions else ()))
    return tuple(found)


def table_cells(line: str) -> list[str]:
    """The cells of one markdown table row; ``\\|`` is a pipe inside a cell."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def parse_glossary(path: Path) -> list[Term]:
    """The rows of the 术语表: | English | 中文 | 说明 | 避免 |. A malformed row raises ValueError naming its line."""
    terms = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|"):
            continue
        cells = table_cells(line)
        if len(cells) != 4:
            raise ValueError(
                f"{path.name} line {number}: {len(cells)} cells, expected | English | 中文 | 说明 | 避免 |"
            )
        if cells[0] == "English" or set(cells[0]) <= set("-: "):
            continue  # the header and the line under it
        terms.append(Term(cells[0], cells[1], cells[2], parse_avoided(cells[3])))
    if not terms:
        raise ValueError(f"{path.name} holds no table rows | English | 中文 | 说明 | 避免 |")
    return terms


def english_glossary(path: Path = GLOSSARY_EN) -> dict[str, str]:
    """The English glossary: term → its notebook numbers (the ``[NN, NN]`` that ends its paragraph)."""
    entries = {}
    for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
        if match := re.match(r"\*\*(.+?)\*\* — ", paragraph):
            numbers = NUMBERS.search(paragraph.strip())
            entries[match[1]] = numbers[1] if numbers else ""
    return entries


def glossary_problems(zh_path: Path = GLOSSARY_ZH, en_path: Path = GLOSSARY_EN) -> list[str]:
    """What is wrong with the 术语表: a missing English term, other notebook numbers, a chosen form that is
    neither Chinese nor the English word kept, a term listed twice."""
    terms = parse_glossary(zh_path)
    by_english = {t.english: t for t in terms}
    problems = [f"{english!r} is listed twice" for english, n in Counter(t.english for t in terms).items() if n > 1]
    for english, numbers in english_glossary(en_path).items():
        term = by_english.get(english)
        if term is None:
            problems.append(f"{english!r} of {en_path.name} has no row (| {english} | 中文 | 说明 | 避免 |)")
            continue
        found = NUMBERS.search(term.explanation)
        if (found[1] if found else "") != numbers:
            problems.append(f"{english!r}: the explanation must end with [{numbers}] as in {en_path.name}")
    for term in terms:
        if not NUMBERS.search(term.explanation):
            problems.append(f"{term.english!r}: the explanation must end with the notebook numbers, e.g. [02]")
        kept = term.english.replace("`", "").lower()
        for form in re.split(r"\s+/\s+", term.chosen.replace("`", "")):
            if not form or not (CJK.search(form) or form.lower() in kept):
                problems.append(f"{term.english!r}: chosen form {form!r} is neither Chinese nor the English term kept")
    return sorted(set(problems))


# ---- reading the Chinese prose ----------------------------------------------------------------------------------


def cell_source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def prose_lines(markdown: str) -> list[str]:
    """The lines of ``markdown`` with fenced code blocks, `code` spans, $math$, link targets and HTML tags
    blanked: what remains is read as Chinese prose."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append("")
            continue
        if fenced:
            lines.append("")
            continue
        line = re.sub(r"`[^`]*`", " ", line)
        line = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", line)
        line = re.sub(r"\]\([^)]*\)", "]", line)
        lines.append(re.sub(r"<[^>]+>", " ", line))
    return lines


def readme_section(path: Path = README) -> str:
    """The README's 中文版 section: from its heading to the next ``## `` heading."""
    text = path.read_text(encoding="utf-8")
    start = text.find(f"\n{ZH_SECTION}\n")
    if start < 0:
        return ""
    end = text.find("\n## ", start + len(ZH_SECTION) + 2)
    return text[start : end if end > 0 else len(text)]


def chinese_texts(folder: Path = ZH, readme: Path = README) -> list[tuple[str, str, Path]]:
    """Every piece of Chinese prose: (where, markdown, the folder its links are relative to)."""
    texts = []
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                texts.append((f"{path.name} cell {cell.get('id')}", cell_source(cell), folder))
    texts.append((f"{readme.name} {ZH_SECTION}", readme_section(readme), readme.parent))
    return texts


def occurrences_not_covered(line: str, variant: str, covers: list[str]) -> int:
    """How often ``variant`` occurs in ``line`` outside every longer phrase of ``covers`` that holds it
    (自注意力 covers the 注意力 inside it)."""
    count = 0
    for match in re.finditer(re.escape(variant), line):
        start = match.start()
        count += not any(
            line.startswith(phrase, start - inner.start())
            for phrase in covers
            for inner in re.finditer(f"(?={re.escape(variant)})", phrase)
            if start >= inner.start()
        )
    return count


def avoided_uses(texts: list[tuple[str, str]], terms: list[Term]) -> list[str]:
    """One line per use of an avoided variant: where, which variant, what to write instead, and the line."""
    chosen = sorted({form for term in terms for form in term.forms}, key=len, reverse=True)
    found = []
    for where, markdown in texts:
        for line in prose_lines(markdown):
            for term in terms:
                for avoided in term.avoided:
                    if not avoided.variant or avoided.variant not in line:
                        continue
                    covers = [
                        p for p in (*avoided.exceptions, *chosen) if avoided.variant in p and p != avoided.variant
                    ]
                    if occurrences_not_covered(line, avoided.variant, covers):
                        found.append(f"{where}: {avoided.variant!r} (write {term.chosen}) in: {line.strip()}")
    return found


# ---- the reference code, wherever it might leak (classroom tests) -----------------------------------------------


def without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return body[1:] if has_docstring and isinstance(body[0].value.value, str) else body


def body_dump(function: ast.FunctionDef) -> str:
    """A function's statements without its docstring, as a syntax tree: the same code whatever its docstring,
    comments or layout."""
    return ast.dump(ast.Module(body=without_docstring(function.body), type_ignores=[]))


def exercise_definitions() -> list[tuple[str, object, ast.FunctionDef | ast.ClassDef]]:
    """(notebook, solutions module, definition) of every function and class a learner writes: a stub in a notebook
    (its body ends with ``raise NotImplementedError``) answered by the definition of that name in its module (a
    :class:`course_tools.classroom.ReferenceModule`)."""
    import nbformat

    from course_tools.classroom import ReferenceModule
    from course_tools.classroom.cells import is_stub_raise, parse_cell

    found = []
    for path in ENGLISH:
        modules = list(SOLUTIONS_DIR.glob(f"nb{path.name[:2]}_*.py"))
        if not modules:
            continue
        reference = ReferenceModule.read(modules[0])
        stubs = {
            node.name
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code" and (tree := parse_cell(cell.source)) is not None
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and any(map(is_stub_raise, ast.walk(node)))
        }
        found += [
            (path.name, reference, node)
            for node in reference.tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in stubs
        ]
    return found


def reference_code_in(files: dict[str, str]) -> list[str]:
    """The exercises' reference code found in ``files`` (name → text): the source of a reference function or class
    as written, or, in a Python file, a function whose statements are those of a reference function or method."""
    bodies = {}
    for name, text in files.items():
        try:
            tree = ast.parse(text) if name.endswith(".py") else None
        except SyntaxError:
            tree = None
        for node in ast.walk(tree) if tree is not None else []:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and without_docstring(node.body):
                bodies.setdefault(body_dump(node), f"{name}: {node.name}")
    offenders = []
    for notebook, reference, definition in exercise_definitions():
        where = f"{reference.path.name}: {definition.name} ({notebook}'s exercise)"
        offenders += [
            f"{where} as written, in {name}" for name, text in files.items() if reference.segment(definition) in text
        ]
        functions = [definition] if isinstance(definition, ast.FunctionDef) else definition.body
        offenders += [
            f"{where}, the statements of {f.name}, in {bodies[body_dump(f)]}"
            for f in functions
            if isinstance(f, ast.FunctionDef) and body_dump(f) in bodies
        ]
    return offenders


# ---- random models with peaked distributions, for the decoders' tests (test_decode, test_decode_fast)


def random_model(norm_first=False, vocab=20, seed=0, eos_bias=4.0, suppress_specials=True):
    """A random model with peaked next-word distributions that ends sentences at different lengths
    (an untouched random model spreads its probability thinly and rarely says </s>)."""
    torch.manual_seed(seed)
    model = tc.make_model(
        vocab,
        vocab,
        N=2,
        d_model=32,
        d_ff=64,
        h=4,
        dropout=0.0,
        max_len=64,
        norm_first=norm_first,
        tie_embeddings="none",
    )
    with torch.no_grad():
        model.generator.proj.weight.mul_(4.0)
        model.generator.proj.bias.normal_(0.0, 1.0)
        if suppress_specials:  # as after training: <pad>, <unk> and <s> are never the next word
            model.generator.proj.bias[[PAD, UNK, BOS]] = -20.0
        model.generator.proj.bias[EOS] += eos_bias
    return model.eval()


def random_src(lengths, vocab=20, seed=1):
    """(batch, max(lengths)) word ids >= 4, padded with PAD, and its padding mask."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (len(lengths), max(lengths)), generator=g)  # (B, S)
    for i, n in enumerate(lengths):
        src[i, n:] = PAD
    return src, tc.padding_mask(src, PAD)


def reference_in_language(text: str, notebook: Path) -> str:
    """A reference file's text as a notebook's build cell writes it: the 中文版 carries its comments and docstrings
    in Chinese (``course_tools.edition.zh.to_chinese``), its code unchanged."""
    if notebook.parent.name != "zh":
        return text
    from course_tools.edition.zh import to_chinese

    return to_chinese(text)


def first_difference(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def top2_gap(logits: torch.Tensor) -> float:
    """The gap between the two largest logits of one step: a near-tie when it is at rounding size."""
    top = logits.topk(2).values
    return float(top[0] - top[1])
