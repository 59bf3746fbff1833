"""The classroom edition: ``python -m transformer_course classroom OUT`` writes an nbgrader course
folder from the notebooks and their reference solutions, and the real nbgrader grades it into its real gradebook.

The fast tests read the notebooks and the solutions modules; the end-to-end tests (marked ``slow``; their
shared set-up took 139 s on the 2-core development machine) run nbgrader's own commands in the course folder on notebooks 01 and 02 in fast mode:
generate_assignment → submissions (the reference solutions; a plausible mistake; an exercise that raises;
one that never returns) → autograde → generate_feedback, and reads the scores from ``gradebook.db``.
Run only these with ``pytest -m classroom``.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from classroom_helpers import (  # noqa: E402
    BEGIN,
    CHEATS,
    END,
    NOTEBOOKS_DIR,
    SOLUTIONS_DIR,
    feedback,
    nbgrader,
    scores,
    solution_regions,
    submit,
    submit_release,
)

from course_tools.classroom import (  # noqa: E402
    POINTS_RULE,
    ConventionError,
    ReferenceModule,
    build_course,
    convert_notebook,
    main,
)
from course_tools.classroom.build_cells import build_file, build_references  # noqa: E402
from course_tools.classroom.course import COURSE_NOTEBOOK, has_exercises  # noqa: E402
from course_tools.classroom.release_text import names_solutions, released_markdown  # noqa: E402

from helpers import exercise_definitions, reference_code_in, without_docstring  # noqa: E402

pytestmark = pytest.mark.classroom

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p for p in NOTEBOOKS_DIR.glob("*.ipynb") if COURSE_NOTEBOOK.match(p.name))
GRADING_TIMEOUT_S = (
    30  # per cell while grading; the slowest cell of 01/02 (the imports) took 9.7 s on the busy 2-core dev box
)


def meaningful_lines(code: str) -> list[str]:
    """A region's code lines that would give a solution away: not blank, not a comment, not a bare `return x`."""
    lines = [line.split("  #")[0].strip() for line in code.splitlines()]
    return [line for line in lines if line and not line.startswith("#") and not re.fullmatch(r"return \w+", line)]


# --- the convention, on every notebook ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_converts_to_an_nbgrader_source_notebook(path: Path, tmp_path):
    [assignment] = build_course(tmp_path, NOTEBOOKS_DIR, SOLUTIONS_DIR, only=[path.name[:2]])
    assert not [a for a in assignment.assets if (NOTEBOOKS_DIR / a).resolve().is_relative_to(SOLUTIONS_DIR.resolve())]
    written = nbformat.read(tmp_path / "source" / assignment.name / path.name, as_version=4)
    nbformat.validate(written)
    original = nbformat.read(path, as_version=4)
    markdown = [c.source for c in written.cells if c.cell_type == "markdown"]
    assert markdown == [released_markdown(c.source) for c in original.cells if c.cell_type == "markdown"], (
        "markdown cells are copied unchanged except the solution links"
    )
    assert not [text for text in markdown if names_solutions(text)], "a markdown cell still names solutions/"
    kinds = []
    for cell in written.cells:
        meta = cell.metadata.get("nbgrader")
        if meta and meta["solution"]:
            assert solution_regions(cell.source), f"solution cell {meta['grade_id']} has no BEGIN/END SOLUTION region"
            kinds.append("solution")
        if meta and meta["grade"]:
            assert meta["locked"] and meta["points"] >= 1 and not meta["solution"]
            assert BEGIN not in cell.source and END not in cell.source
            assert hidden_cell(cell.source)["calls"], f"graded cell {meta['grade_id']} has no hidden test"
            kinds.append("graded")
    if has_exercises(original):  # something was checked: the exercises became solution and graded cells
        assert {"solution", "graded"} <= set(kinds), f"{path.name} has exercises but converted to {kinds}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_solution_cells_hold_the_statements_of_the_reference_functions(path: Path):
    """Each function stub, converted, runs the statements of the solutions module's function of that name."""
    modules = list(SOLUTIONS_DIR.glob(f"nb{path.name[:2]}_*.py"))
    if not modules:
        pytest.skip(f"{path.name} has no solutions module")
    exercises = ReferenceModule.read(modules[0])
    nb = nbformat.read(path, as_version=4)
    builds = build_references(nb, SOLUTIONS_DIR)  # a build cell's stubs are solved from solutions/my_transformer/
    converted = convert_notebook(nb, path.name, exercises, builds)
    written = {s.grade_id: s.names for s in converted.solutions}
    assert written, f"{path.name} has a solutions module but converts to no solution cell"
    compared = set()
    for cell in converted.notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        file = build_file(cell.source)
        reference = builds[file] if file is not None else exercises
        source = cell.source.partition("\n")[2] if file is not None else cell.source
        for node in ast.parse(source).body if grade_id in written else []:
            if isinstance(node, ast.FunctionDef) and node.name in written[grade_id]:
                ref = reference.definition(node.name, ast.FunctionDef)
                ours = [s for s in without_docstring(node.body) if not isinstance(s, (ast.Import, ast.ImportFrom))]
                assert [ast.dump(s) for s in ours] == [ast.dump(s) for s in without_docstring(ref.body)], node.name
                compared.add(node.name)
            if isinstance(node, ast.ClassDef) and node.name in written[grade_id]:
                ref_methods = {
                    m.name: m for m in reference.definition(node.name, ast.ClassDef).body if hasattr(m, "body")
                }
                for method in [m for m in node.body if isinstance(m, ast.FunctionDef)]:
                    ours = [
                        s for s in without_docstring(method.body) if not isinstance(s, (ast.Import, ast.ImportFrom))
                    ]
                    theirs = without_docstring(ref_methods[method.name].body)
                    assert [ast.dump(s) for s in ours] == [ast.dump(s) for s in theirs], f"{node.name}.{method.name}"
                compared.add(node.name)
        top_level = [r for r in solution_regions(source) if not r[:1].isspace()]  # not inside a function stub
        answers = ast.parse("\n".join(top_level)).body if grade_id in written else []
        for node in answers:  # `name = <the reference's answer>` inside the solution region, not the `...` stub
            for name in [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]:
                if name in written[grade_id]:
                    assert not any(isinstance(n, ast.Constant) and n.value is ... for n in ast.walk(node.value)), name
                    compared.add(name)
    names = {name for group in written.values() for name in group}
    assert compared == names, f"{path.name}: solutions not compared with the reference: {sorted(names - compared)}"


def test_the_points_rule_is_the_one_the_module_docstring_states():
    import course_tools.classroom as classroom

    docstring = " ".join(classroom.__doc__.split())
    assert " ".join(POINTS_RULE.split()) in docstring.replace("- **Points**: ", "")


# --- the convention on small made-up notebooks: what converts, and the one-line errors --------------------------


def made_up(tmp_path: Path, cells: list[str], solutions: str):
    """A notebook of code cells and its solutions module nb42_made_up.py, converted."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    (tmp_path / "nb42_made_up.py").write_text(solutions, encoding="utf-8")
    return convert_notebook(nb, "42_made_up.ipynb", ReferenceModule.read(tmp_path / "nb42_made_up.py"))


CHECKERS = "from transformer_course.exercises import nb01_masks as ex\n"


def hidden_cell(source: str) -> dict:
    """What a graded cell's hidden test gives :func:`course_tools.classroom.verdict.grade`."""
    hidden = re.search(r"^### BEGIN HIDDEN TESTS\n(.*?)^### END HIDDEN TESTS$", source, re.M | re.S)
    assert hidden, f"no hidden test in:\n{source}"
    call = ast.parse(hidden.group(1)).body[-1]
    return ast.literal_eval(call.value.args[0])


def visible_part(source: str) -> list[str]:
    """The lines of a graded cell the student sees and runs (after its header and hidden test)."""
    return source.partition("### END HIDDEN TESTS\n")[2].splitlines()


def test_answers_keep_their_lines_and_get_the_reference_values_after_them(tmp_path):
    conversion = made_up(
        tmp_path,
        [CHECKERS, 'q1 = ...  # "a" or "b"\nq2 = ...  # a number\nex.check_quiz(q1=q1, q2=q2);'],
        "import math\nQ1 = 'b'\nq2 = round(math.pi, 2)\n",
    )
    solution, graded = conversion.notebook.cells[1], conversion.notebook.cells[2]
    assert solution.source == (
        f'q1 = ...  # "a" or "b"\nq2 = ...  # a number\n{BEGIN}\nimport math\nq1 = \'b\'\nq2 = round(math.pi, 2)\n{END}'
    )
    assert graded.metadata["nbgrader"]["points"] == 2  # a quiz: 1 point per answer
    assert hidden_cell(graded.source)["calls"] == [["check_quiz", 2]]
    assert visible_part(graded.source) == [  # answers: the self-check tells their form only
        "from transformer_course.exercises import sealed",
        "",
        "with sealed():",
        "    ex.check_quiz(q1=q1, q2=q2);",
    ]


def test_a_class_stub_gets_each_stubbed_method_body_and_keeps_the_lines_it_shows(tmp_path):
    stub = (
        "class Doubler(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # your code here\n"
        "    def forward(self, x):\n"
        '        """x (B, d) → (B, d)."""\n'
        "        raise NotImplementedError\n"
    )
    reference = (
        "from torch import nn\n\n\nclass Doubler(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
        "        self.d = d\n\n    def forward(self, x):\n        return 2 * x  # (B, d)\n"
    )
    conversion = made_up(tmp_path, [CHECKERS + "from torch import nn", stub, "ex.check_doubler(Doubler);"], reference)
    assert conversion.notebook.cells[1].source == (
        "class Doubler(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
        f"        {BEGIN}\n        self.d = d\n        {END}\n"
        f'    def forward(self, x):\n        """x (B, d) → (B, d)."""\n        {BEGIN}\n        return 2 * x  # (B, d)\n'
        f"        {END}"
    )
    assert conversion.graded[0].points == 2  # a class to write


def test_an_answer_given_to_a_checker_may_be_named_after_the_checker_or_be_an_entry_of_its_dict(tmp_path):
    conversion = made_up(
        tmp_path,
        [CHECKERS + "answer_1 = ...\nq1 = ...", "ex.check_question_heads(answer_1)\nex.check_quiz(q1=q1)"],
        "question_heads = 'b'\nQUIZ = {'q1': 512 / 8}\n",
    )
    assert conversion.notebook.cells[0].source.endswith(f"{BEGIN}\nanswer_1 = 'b'\nq1 = 512 / 8\n{END}")


def test_an_import_the_reference_needs_goes_inside_the_solution(tmp_path):
    conversion = made_up(
        tmp_path,
        [CHECKERS + "def root(x):\n    raise NotImplementedError", "ex.check_root(root);"],
        "import math\n\n\ndef root(x):\n    return math.sqrt(x)\n",
    )
    assert f"    {BEGIN}\n    import math\n    return math.sqrt(x)\n    {END}" in conversion.notebook.cells[0].source


def test_a_cell_with_an_exercise_and_its_checker_is_split_and_an_if_condition_is_kept(tmp_path):
    conversion = made_up(
        tmp_path,
        [CHECKERS + "def f(x):\n    raise NotImplementedError\n# check it\nif ex.check_f(f):\n    print(f(2))"],
        "def f(x):\n    return x + 1\n",
    )
    solution, graded = conversion.notebook.cells
    assert solution.metadata["nbgrader"]["solution"] and graded.metadata["nbgrader"]["grade"]
    assert visible_part(graded.source) == ["# check it", "if ex.check_f(f):", "    print(f(2))"]
    cell = hidden_cell(graded.source)
    assert cell["calls"] == [["check_f", 2]] and cell["aliases"] == {"ex": "nb01_masks"}
    assert cell["text"] == "# check it\nif ex.check_f(f):\n    print(f(2))"


def test_two_checker_calls_in_one_cell_are_each_graded_and_their_points_add_up(tmp_path):
    conversion = made_up(
        tmp_path,
        [
            CHECKERS + "def f(x):\n    raise NotImplementedError\nanswer = ...",
            "ex.check_f(f)\nex.check_answer(answer);",
        ],
        "def f(x):\n    return x\n\n\nANSWER = 3\n",
    )
    graded = conversion.notebook.cells[1]
    assert graded.metadata["nbgrader"]["points"] == 2 + 1  # a function to write, then an answer
    assert hidden_cell(graded.source)["calls"] == [["check_f", 2], ["check_answer", 1]]
    assert visible_part(graded.source) == ["ex.check_f(f)", "ex.check_answer(answer);"]  # code too: not sealed


@pytest.mark.parametrize(
    ("cells", "solutions", "message"),
    [
        (
            ["def g(x):\n    raise NotImplementedError", "ex.check_g(g)"],
            "def f(x):\n    return x\n",
            "defines no function 'g'",
        ),
        (
            ["def f(y):\n    raise NotImplementedError", "ex.check_f(f)"],
            "def f(x):\n    return x\n",
            "name their parameters",
        ),
        (["def f(x):\n    raise NotImplementedError"], "def f(x):\n    return x\n", "no checker is given f"),
        (["ex.check_quiz(q1=...)"], "", "write the answers as `name = ...` lines"),
        (
            ["def f(x):\n    raise NotImplementedError", "for _ in range(2):\n    ex.check_f(f)"],
            "def f(x):\n    return x\n",
            "may not run",
        ),
        (["answer = ...", "ex.check_a(answer)"], "", "looked for answer, ANSWER, a, A;"),
        (["raise NotImplementedError"], "", "outside a function or class stub"),
        (['shapes = {"q": None}\nex.check_shapes(shapes)'], "", "shapes is written in the checker's cell"),
    ],
    ids=[
        "unknown-name",
        "other-parameters",
        "no-checker",
        "ellipsis-in-checker",
        "checker-in-loop",
        "no-answer",
        "bare-raise",
        "answer-in-checker-cell",
    ],
)
def test_a_broken_convention_stops_the_build_with_one_line_that_names_the_cell(tmp_path, cells, solutions, message):
    with pytest.raises(ConventionError, match=re.escape(message)) as error:
        made_up(tmp_path, [CHECKERS, *cells], solutions)
    assert "\n" not in str(error.value) and str(error.value).startswith("42_made_up.ipynb")


def test_the_command_line_writes_the_folder_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    out = tmp_path / "course"
    args = [str(out), "--notebooks", str(NOTEBOOKS_DIR), "--solutions", str(SOLUTIONS_DIR), "--only", "01"]
    assert main(args) == 0
    assert (out / "source" / "nb01" / "01_masks.ipynb").is_file() and (out / "README.md").is_file()
    config = (out / "nbgrader_config.py").read_text()
    assert "c.Execute.timeout = 120" in config and "c.Execute.interrupt_on_timeout = True" in config
    assert "c.CourseDirectory.course_id = 'transformer_course'" in config
    capsys.readouterr()
    assert main(args) == 1  # the folder exists: no silent overwrite
    assert main([str(tmp_path / "x"), "--notebooks", str(NOTEBOOKS_DIR), "--only", "99"]) == 1
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and "--force" in errors[0] and "choose from" in errors[1]


def test_the_pictures_a_notebook_shows_travel_with_its_assignment(tmp_path):
    notebooks = tmp_path / "notebooks"
    (notebooks / "figures").mkdir(parents=True)
    for name in ("a.svg", "b.png", "unused.png"):
        (notebooks / "figures" / name).write_text("<svg/>")
    cells = [
        nbformat.v4.new_markdown_cell("![the model](figures/a.svg) and [the next notebook](01_next.ipynb)"),
        nbformat.v4.new_code_cell('from IPython.display import Image\nImage(filename="figures/b.png")'),
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebooks / "00_pictures.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), notebooks / "01_next.ipynb")
    build_course(tmp_path / "course", notebooks, tmp_path, only=["00"])
    copied = sorted(
        p.relative_to(tmp_path / "course" / "source" / "nb00").as_posix()
        for p in (tmp_path / "course" / "source" / "nb00").rglob("*")
        if p.is_file()
    )
    assert copied == ["00_pictures.ipynb", "figures/a.svg", "figures/b.png"]


def test_an_assignment_that_imports_the_learners_files_gets_those_of_the_notebooks_before_it(tmp_path):
    build_course(tmp_path / "course", NOTEBOOKS_DIR, only=["02", "03", "07"])
    source = tmp_path / "course" / "source"
    files = {nb: sorted(p.name for p in (source / nb / "my_transformer").glob("*.py")) for nb in ("nb03", "nb07")}
    assert files["nb03"] == ["__init__.py", "attention.py"]  # notebook 02 writes it; 03 writes multi_head.py itself
    assert files["nb07"] == [
        "__init__.py",
        "attention.py",
        "embeddings.py",
        "encoder.py",
        "multi_head.py",
        "norm_residual.py",
    ]
    assert not (source / "nb02" / "my_transformer").exists()  # notebook 02 writes the first file itself


def test_a_notebooks_link_to_its_reference_solutions_does_not_travel_with_the_assignment(tmp_path):
    notebooks = tmp_path / "notebooks"
    (notebooks / "solutions").mkdir(parents=True)
    (notebooks / "solutions" / "nb00_linked.py").write_text("ANSWER = 42\n")
    (notebooks / "solutions" / "README.md").write_text("Try first.\n")
    cells = [
        nbformat.v4.new_markdown_cell(
            "[solutions/nb00_linked.py](solutions/nb00_linked.py), [all](solutions/README.md)"
        ),
        nbformat.v4.new_code_cell(CHECKERS + "answer = ...\nex.check_answer(answer)"),
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebooks / "00_linked.ipynb")
    [assignment] = build_course(tmp_path / "course", notebooks, only=["00"])  # default: notebooks/solutions
    assert assignment.conversion.solutions[0].names == ["answer"]  # the reference was read from there
    copied = [p.name for p in (tmp_path / "course" / "source" / "nb00").rglob("*") if p.is_file()]
    assert copied == ["00_linked.ipynb"]


def test_the_reference_solutions_live_beside_the_notebooks_not_in_the_package():
    import importlib.util

    assert importlib.util.find_spec("transformer_course.solutions") is None
    assert SOLUTIONS_DIR == NOTEBOOKS_DIR / "solutions" and (SOLUTIONS_DIR / "README.md").is_file()
    with_exercises = {p.name[:2] for p in NOTEBOOKS if has_exercises(nbformat.read(p, as_version=4))}
    assert with_exercises == {p.name[2:4] for p in SOLUTIONS_DIR.glob("nb*_*.py")}  # one module per notebook


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_notebook_links_its_reference_solutions_where_jupyterlab_opens_them(path: Path):
    modules = sorted(SOLUTIONS_DIR.glob(f"nb{path.name[:2]}_*.py"))
    if not modules:
        pytest.skip(f"{path.name} has no solutions module")
    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    link = f"solutions/{modules[0].name}"
    assert f"]({link})" in text, f"{path.name}: link [{link}]({link}) in its exercise section"
    assert "transformer_course/solutions" not in text, f"{path.name} still sends learners to the package's solutions"


@pytest.mark.slow
def test_python_dash_m_runs_the_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "course_tools.classroom", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "OUT" in done.stdout


# --- end to end with the real nbgrader ------------------------------------------------------------------------------

# A plausible mistake in notebook 01's local_mask (a window one key too wide), and code that fails in other ways.
MISTAKE = ("local_mask", "return torch.ones(size, size, dtype=torch.bool).tril().triu(-window)[None, None]")
RAISES = 'raise RuntimeError("a bug in the learner\'s code")'
NEVER_RETURNS = "while True:\n    pass"


def last_function_exercise(assignment) -> str:
    """The last function the learner writes in a notebook (no later exercise calls it), alone in its cell."""
    functions = [
        node.name
        for cell in assignment.conversion.notebook.cells
        if cell.metadata.get("nbgrader", {}).get("solution")
        and len(solution_regions(cell.source)) == 1
        and build_file(cell.source) is None  # a build cell (%%writefile) is not a function exercise of its own
        for node in ast.parse(cell.source).body
        if isinstance(node, ast.FunctionDef)
    ]
    assert functions, f"{assignment.notebook.name} has no function exercise for the end-to-end test"
    return functions[-1]


def grading(assignment, function: str) -> tuple[set[str], float]:
    """The graded cells that check ``function``, and their points."""
    cells = [g for g in assignment.conversion.graded if function in g.given]
    assert cells, f"no graded cell checks {function}"
    return {g.grade_id for g in cells}, sum(g.points for g in cells)


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """Notebooks 01 and 02 as a course, released, submitted by three students, autograded, with feedback."""
    pytest.importorskip("nbgrader", reason="the classroom extra: pip install -e '.[classroom]'")
    course = tmp_path_factory.mktemp("classroom") / "course"
    nb01, nb02 = build_course(course, NOTEBOOKS_DIR, SOLUTIONS_DIR, only=["01", "02"], timeout=GRADING_TIMEOUT_S)
    nbgrader(course, "generate_assignment", "nb0[12]")
    raises, never_returns = last_function_exercise(nb01), last_function_exercise(nb02)
    submit(course, "alice", "nb01")  # the reference solutions
    submit(course, "alice", "nb02")
    submit(course, "bob", "nb01", {MISTAKE[0]: MISTAKE[1]})
    submit(course, "carol", "nb01", {raises: RAISES})
    submit(course, "carol", "nb02", {never_returns: NEVER_RETURNS})
    for assignment in ("nb01", "nb02"):
        submit_release(course, "untouched", assignment)
        for cheat in [*CHEATS, "attributes"]:
            submit_release(course, f"cheat-{cheat.replace('_', '-')}", assignment, cheat)
    nbgrader(course, "autograde", "nb0[12]")
    nbgrader(course, "generate_feedback", "nb0[12]")
    return course, {"nb01": nb01, "nb02": nb02}, {"raises": raises, "never_returns": never_returns}


@pytest.mark.slow
def test_the_released_notebooks_hold_no_solution_no_hidden_test_and_no_digest(graded_course):
    """Cell by cell: each released cell is its source cell with every solution region replaced by nbgrader's stub
    and every hidden test removed, and nothing else; no answer digest, no solutions module travels with it."""
    course = graded_course[0]
    for assignment in ("nb01", "nb02"):
        [released] = (course / "release" / assignment).glob("*.ipynb")
        student = nbformat.read(released, as_version=4)
        source = nbformat.read(course / "source" / assignment / released.name, as_version=4)
        assert len(student.cells) == len(source.cells)
        regions = hidden = 0
        for mine, theirs in zip(source.cells, student.cells):
            expected, n = re.subn(
                r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION$",
                lambda m: f"{m.group(1)}# YOUR CODE HERE\n{m.group(1)}raise NotImplementedError()",
                mine.source,
                flags=re.M | re.S,
            )
            expected, k = re.subn(
                r"^### BEGIN HIDDEN TESTS\n.*?^### END HIDDEN TESTS\n?", "", expected, flags=re.M | re.S
            )
            regions, hidden = regions + n, hidden + k
            assert theirs.source == expected, (
                f"{released.name}: a released cell differs from its source:\n{theirs.source}"
            )
        graded = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
        graded = [c for c in graded if not c.metadata["nbgrader"].get("solution")]
        assert regions > 0 and hidden == len(graded) > 0, (regions, hidden, len(graded))
        text = "\n".join(cell.source for cell in student.cells)
        assert not re.search(r"\b[0-9a-f]{24}\b", text), "an answer digest in the release"
        files = {
            p.relative_to(course).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in (course / "release" / assignment).rglob("*")
            if p.is_file()
        }
        assert not [name for name in files if re.search(r"(^|/)nb\d\d_\w+\.py$", name)], sorted(files)
        assert not reference_code_in(files)


@pytest.mark.slow
@pytest.mark.parametrize("student", ["untouched", *(f"cheat-{c.replace('_', '-')}" for c in [*CHEATS, "attributes"])])
def test_the_untouched_release_and_every_cheat_score_zero(graded_course, student):
    course = graded_course[0]
    for assignment in ("nb01", "nb02"):
        score, max_score, cells = scores(course, assignment, student)
        assert max_score > 0 and score == 0, (assignment, cells)


@pytest.mark.slow
def test_the_reference_solutions_get_full_marks(graded_course):
    for assignment in ("nb01", "nb02"):
        score, max_score, cells = scores(graded_course[0], assignment, "alice")
        assert max_score > 0 and score == max_score, cells


@pytest.mark.slow
def test_a_plausible_mistake_gets_partial_marks_and_the_checkers_hint_in_the_feedback(graded_course):
    course, assignments, _ = graded_course
    score, max_score, cells = scores(course, "nb01", "bob")
    wrong, points = grading(assignments["nb01"], MISTAKE[0])
    assert 0 < score == max_score - points and all(cells[grade_id] == 0 for grade_id in wrong), cells
    from transformer_course.exercises import nb01_masks

    namespace = {"torch": __import__("torch")}
    exec(f"def {MISTAKE[0]}(size, window):\n    {MISTAKE[1]}", namespace)
    result = nb01_masks.check_local_mask(namespace[MISTAKE[0]])  # the hint the learner gets
    assert not result and result.message in feedback(course, "bob", "nb01")


@pytest.mark.slow
def test_the_feedback_shows_each_cells_points_and_hints_but_not_its_hidden_test(graded_course):
    page = feedback(graded_course[0], "bob", "nb01")
    assert "graded: 0 of 2 points" in page and "graded: 3 of 3 points" in page  # local_mask wrong, the quiz right
    assert "BEGIN HIDDEN TESTS" not in page and "_tc_grade" not in page
    assert not re.search(r"\b[0-9a-f]{24}\b", page), "an answer digest in the feedback"


@pytest.mark.slow
def test_an_exercise_that_raises_scores_zero_and_the_other_cells_are_graded(graded_course):
    course, assignments, chosen = graded_course
    score, max_score, cells = scores(course, "nb01", "carol")
    failed, points = grading(assignments["nb01"], chosen["raises"])
    assert all(cells[grade_id] == 0 for grade_id in failed) and score == max_score - points, cells
    assert "RuntimeError" in feedback(course, "carol", "nb01")


@pytest.mark.slow
def test_an_exercise_that_never_returns_is_stopped_by_the_timeout_and_the_rest_is_graded(graded_course):
    course, assignments, chosen = graded_course
    score, max_score, cells = scores(course, "nb02", "carol")
    failed, points = grading(assignments["nb02"], chosen["never_returns"])
    assert all(cells[grade_id] == 0 for grade_id in failed) and 0 < score == max_score - points, cells
    page = feedback(course, "carol", "nb02")  # the feedback says why
    assert "this cell ran longer than" in page and "in the sandbox this cell stopped with" in page


@pytest.fixture(scope="module")
def every_assignment(tmp_path_factory):
    """All 12 notebooks as a course, each released and submitted with the reference solutions, each autograded
    on its own (the seconds each took, in fast mode, on this machine: printed with ``pytest -s``)."""
    import time

    pytest.importorskip("nbgrader", reason="the classroom extra: pip install -e '.[classroom]'")
    course = tmp_path_factory.mktemp("every") / "course"
    assignments = build_course(course, NOTEBOOKS_DIR, SOLUTIONS_DIR)  # the default per-cell timeout, 120 s
    assert len(assignments) == len(NOTEBOOKS)
    seconds = {}
    for assignment in assignments:
        nbgrader(course, "generate_assignment", assignment.name)
        submit(course, "alice", assignment.name)
        start = time.perf_counter()
        nbgrader(course, "autograde", assignment.name)
        seconds[assignment.name] = time.perf_counter() - start
    print("autograde seconds per assignment (fast mode):", {k: round(v, 1) for k, v in seconds.items()})
    return course, assignments


@pytest.mark.slow
@pytest.mark.parametrize("number", [COURSE_NOTEBOOK.match(p.name).group(1) for p in NOTEBOOKS])
def test_every_assignments_reference_gets_full_marks(every_assignment, number):
    course, assignments = every_assignment
    [assignment] = [a for a in assignments if a.name == f"nb{number}"]
    score, max_score, cells = scores(course, assignment.name, "alice")
    assert max_score == assignment.points > 0 and score == max_score, cells


# --- what students install -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_installed_package_holds_no_reference_solution(tmp_path):
    """Build the wheel `pip install .` installs; no file in it is a solutions module or holds the reference code of
    an exercise (as written, or as the same statements under another docstring)."""
    project = tmp_path / "project"
    shutil.copytree(
        REPO / "transformer_course", project / "transformer_course", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(project),
        ],
        check=True,
        timeout=600,
    )
    [wheel] = tmp_path.glob("transformer_course-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        files = {
            name: archive.read(name).decode("utf-8", "replace") for name in archive.namelist() if name.endswith(".py")
        }
    assert files and not [name for name in files if "/solutions/" in name], "the wheel ships a solutions folder"
    assert len(exercise_definitions()) >= 20, "too few exercises found to look for"
    assert not reference_code_in(files)
    for module in sorted(SOLUTIONS_DIR.glob("nb*_*.py")):  # nor any function or class of them as written
        reference = ReferenceModule.read(module)
        for node in reference.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                code = reference.segment(node)
                assert not [name for name, text in files.items() if code in text], f"{module.name}: {node.name}"
