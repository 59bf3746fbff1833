"""No answer in any text a learner can read: the strings of the checkers and of their data, and of the hub wheel.

``test_no_answer_in_reach.py`` feeds attributes to checkers; this reads. Every string constant of every module of
``transformer_course/exercises/`` (docstrings and f-string parts included, by an AST walk) and every key and
string value of its JSON files (questions, English and Chinese messages), then the same files as the hub wheel
holds them, are searched for the answers of the exercises that ask for an answer rather than code:

- a quiz letter written as an answer: "answer: b", "answer is (b)", "(b) is right", "答案是 b";
- a number in the forms it is printed in (``4``, ``4.0``, ``0.881``, ``0.8808``, ``2,500,000,000``, ``2.5e9``,
  ``2.5·10⁹`` …): a form of three or more significant characters anywhere as a token of its own, a shorter one
  after " =", "≈", "is", "that is", "gives", "是", "得" … (not a keyword's ``N=3``);
- bug lines: "line 6", "lines 2, 5 and 6", "[2, 5, 6]", "第 6 行".

The answers come from the reference solutions (``notebooks/solutions/quiz/*.json`` and ``notebooks/solutions/*.py``),
which are not part of the package. The scan can fail: a planted answer in a temporary copy is found. And the
numbers' entries cannot be found by a cheap loop: SHA-256 over 2·10⁴ buckets around each answer (the former
digests) finds none of them, and each try of the real key costs one scrypt of 16 MiB.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import io
import json
import math
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from course_tools import quiz
from transformer_course.exercises import Choice, Lines, Numeric, answer_key

REPO = Path(__file__).resolve().parent.parent
EXERCISES = REPO / "transformer_course" / "exercises"
SOLUTIONS = REPO / "notebooks" / "solutions"
QUIZ_SOURCES = SOLUTIONS / "quiz"
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def solutions_module(name: str):
    spec = importlib.util.spec_from_file_location(f"_answers_{name}", SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answers() -> dict[str, dict[str, object]]:
    """module → {what: answer}: every quiz answer, and the answers of the other answer exercises (bug lines, the
    mystery letters of notebook 07, the big cache count of notebook 09)."""
    found: dict[str, dict[str, object]] = {}
    for path in sorted(QUIZ_SOURCES.glob("*.json")):
        for name, source in json.loads(path.read_text(encoding="utf-8")).items():
            found.setdefault(path.stem, {})[name] = source["answer"]
    found["nb04_layernorm_residual"]["bug_line"] = [solutions_module("nb04_layernorm_residual").bug_line]
    found["nb07_decoder"] |= solutions_module("nb07_decoder").MYSTERY
    cache = solutions_module("nb09_decoding").cache_numbers(256, 48, 32, 128, 2048, 1024)  # the checker's big case
    found["nb09_decoding"]["cache_big"] = float(cache)
    return found


# ---- the texts ------------------------------------------------------------------------------------------------


def python_strings(text: str) -> list[str]:
    """Every string constant of a module's source: docstrings, f-strings' literal parts, dict keys …"""
    return [
        node.value
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def json_strings(value) -> list[str]:
    """Every key and every string value of a JSON document, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value.keys(), *(s for v in value.values() for s in json_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return []


def texts_of(files: dict[str, str]) -> dict[str, list[str]]:
    """{file name: its strings} of ``{file name: text}`` (.py and .json files)."""
    found = {}
    for name, text in files.items():
        found[name] = python_strings(text) if name.endswith(".py") else json_strings(json.loads(text))
    return found


def package_files(root: Path) -> dict[str, str]:
    """The exercises' .py and .json files under ``root`` (a copy of ``transformer_course/exercises``)."""
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts
    }


def wheel_files() -> dict[str, str]:
    """The exercises' .py and .json files as the hub wheel holds them."""
    from course_tools.classroom.hub import hub_wheel

    _, content = hub_wheel()
    files = {}
    with zipfile.ZipFile(io.BytesIO(content)) as wheel:
        for name in wheel.namelist():
            if name.startswith("transformer_course/exercises/") and name.endswith((".py", ".json")):
                files[name.removeprefix("transformer_course/exercises/")] = wheel.read(name).decode("utf-8")
    return files


# ---- the answers' printed forms -------------------------------------------------------------------------------

# what comes before a short number that is a result ("that is 4", "= 4", "得 4"), not a setting ("N=3", "float32 为 4")
SHORT_CONTEXT = r"(?:\s=|≈|≃|\bis|\bare|\bgives?|\bmakes?|\bequals?|\bget|\bgets|→|是|得|等于|约)\s*"


def number_patterns(value: float) -> list[re.Pattern]:
    """The forms ``value`` is printed in, each as a pattern that matches it as a number of its own."""
    forms = {repr(float(value)), f"{value:g}"}
    if float(value).is_integer():
        whole = int(value)
        forms |= {str(whole), f"{whole:,}", f"{whole:_}"}
    for digits in range(2, 7):
        forms.add(f"{value:.{digits}g}")
        if abs(value) < 1e6:
            forms.add(f"{value:.{digits}f}".rstrip("0").rstrip("."))
    if value and not 1e-3 <= abs(value) < 1e6:  # scientific forms: 2.5e9, 2.5e+09, 2.5·10⁹, 2.5 × 10^9
        exponent = math.floor(math.log10(abs(value)))
        for digits in range(1, 5):
            mantissa = f"{value / 10**exponent:.{digits}g}"
            forms |= {
                f"{mantissa}e{exponent}",
                f"{mantissa}e+{exponent:02d}",
                f"{mantissa}·10{str(exponent).translate(SUPERSCRIPT)}",
            }
            forms |= {f"{mantissa} × 10{str(exponent).translate(SUPERSCRIPT)}", f"{mantissa} × 10^{exponent}"}
    patterns = []
    for form in forms:
        significant = len(re.sub(r"[^1-9]", "", form.split("e")[0].split("·")[0])) + form.count("0", 1)
        body = re.escape(form)
        alone = rf"(?<![\w.,·^]){body}(?![\w]|[.,]\d)"
        patterns.append(re.compile(alone if significant >= 3 else SHORT_CONTEXT + alone))
    return patterns


def letter_patterns(letter: str) -> list[re.Pattern]:
    brackets = rf"[(（]?{letter}[)）]?"
    return [
        re.compile(rf"\banswer\s*(?:is|:|=)\s*{brackets}(?!\w)", re.I),
        re.compile(rf"\bright (?:answer|letter|choice)\s*(?:is|:|=)?\s*{brackets}(?!\w)", re.I),
        re.compile(rf"[(（]{letter}[)）]\s*(?:is )?(?:right|correct)\b", re.I),
        re.compile(rf"答案\s*(?:是|为|：|:)\s*{brackets}(?!\w)"),
        re.compile(rf"选\s*{brackets}(?![\w])"),
    ]


def line_patterns(lines: list[int]) -> list[re.Pattern]:
    numbers = sorted(lines)
    listed = r",?\s*(?:and\s*)?".join(map(str, numbers))
    comma = ", ".join(map(str, numbers))
    listed_zh = r"\s*[、,，和]\s*".join(map(str, numbers))
    found = [
        re.compile(rf"\[{comma}\]"),
        re.compile(rf"\blines?\s+{listed}\b", re.I),
        re.compile(rf"第\s*{listed_zh}\s*行"),
    ]
    for n in numbers:
        found += [re.compile(rf"\bline\s+{n}\b", re.I), re.compile(rf"第\s*{n}\s*行")]
    return found


def patterns_of(answer) -> list[re.Pattern]:
    if isinstance(answer, str):
        return letter_patterns(answer)
    if isinstance(answer, list) and all(isinstance(n, int) for n in answer):
        return line_patterns(answer)
    values = answer if isinstance(answer, list) else [answer]
    return [p for value in values for p in number_patterns(float(value))]


def owner(file_name: str) -> str:
    """The checker module a file belongs to (``en/nb02_attention.json`` → ``nb02_attention``), or ``shared``."""
    stem = Path(file_name).stem
    return stem if re.match(r"nb\d\d_", stem) else "shared"


def leaks(files: dict[str, str], every: dict[str, dict[str, object]] | None = None) -> list[str]:
    """'file: question's answer in "…text…"' for every string of ``files`` that holds an answer: a module's own
    answers in its own files, and every answer in the shared files (``__init__.py``, ``common.json`` …)."""
    every = answers() if every is None else every
    found = []
    for name, strings in texts_of(files).items():
        module = owner(name)
        questions = {m: q for m, q in every.items() if module in (m, "shared")}
        for question_module, table in questions.items():
            for question, answer in table.items():
                for pattern in patterns_of(answer):
                    for text in strings:
                        match = pattern.search(text)
                        if match:
                            found.append(
                                f"{name}: {question_module}.{question}'s answer in {text[:120]!r} ({match.group()!r})"
                            )
    return found


# ---- the tests ------------------------------------------------------------------------------------------------


def test_every_answer_exercise_has_its_answer_here():
    """The scan knows the answer of every question of every quiz (a new quiz cannot slip past it)."""
    every = answers()
    for path in sorted((EXERCISES / "questions").glob("*.json")):
        assert set(json.loads(path.read_text(encoding="utf-8"))) <= set(every.get(path.stem, {})), path.name


def test_no_string_of_the_package_holds_an_answer():
    found = leaks(package_files(EXERCISES))
    assert not found, f"{len(found)} answer(s) written out:\n" + "\n".join(found)


@pytest.mark.slow
def test_no_string_of_the_hub_wheel_holds_an_answer():
    files = wheel_files()
    assert "nb02_attention.py" in files and "questions/nb02_attention.json" in files
    found = leaks(files)
    assert not found, f"{len(found)} answer(s) written out in the hub wheel:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "file, planted, expected",
    [
        ("en/nb02_attention.json", "divided by √256 = 16 that is 4", "nb02_attention.scaling"),
        ("zh/nb02_attention.json", "约 0.881", "nb02_attention.saturation"),
        ("en/nb08_training_loop.json", "about 2.5·10⁹ target tokens", "nb08_training_loop.q3"),
        ("nb01_masks.py", "the answer is (b)", "nb01_masks.q2"),
        ("zh/nb07_decoder.json", "答案是 c", "nb07_decoder.q1"),
        ("nb02_attention.py", "the wrong lines are lines 2, 5 and 6", "nb02_attention.bug_lines"),
        ("nb04_layernorm_residual.py", "see line 13", "nb04_layernorm_residual.bug_line"),
        ("questions/nb06_encoder.json", "3,152,384", "nb06_encoder.q1"),
    ],
)
def test_the_scan_finds_a_planted_answer(tmp_path, file, planted, expected):
    copy = tmp_path / "exercises"
    shutil.copytree(EXERCISES, copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / file
    if file.endswith(".json"):
        table = json.loads(path.read_text(encoding="utf-8"))
        table["planted"] = planted
        path.write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
    else:
        path.write_text(path.read_text(encoding="utf-8") + f"\n_PLANTED = {planted!r}\n", encoding="utf-8")
    found = leaks(package_files(copy))
    assert any(f"{expected}'s answer" in line and planted[:20] in line for line in found), found


def test_a_multiple_choice_question_has_an_entry_for_every_letter_and_no_plain_text():
    """The right letter is not letters − wrong.keys(): every letter has one locked entry, all of one length."""
    for path in sorted((EXERCISES / "questions").glob("*.json")):
        for name, question in json.loads(path.read_text(encoding="utf-8")).items():
            assert not {"why", "why_formula", "wrong", "mistakes"} & set(question), f"{path.name} {name}"
            lengths = {len(text) for text in question["locked"].values()}
            assert len(lengths) == 1, f"{path.name} {name}: locked texts of several lengths {sorted(lengths)}"
            if "letters" in question:
                assert len(question["locked"]) == len(question["letters"]), f"{path.name} {name}"


def quiz_questions():
    for path in sorted((EXERCISES / "questions").glob("*.json")):
        module = importlib.import_module(f"transformer_course.exercises.{path.stem}")
        for name, question in module.QUESTIONS.items():
            yield path.stem, name, question


def test_a_right_answer_unlocks_its_explanation_and_a_wrong_one_does_not():
    every = answers()
    for module, name, question in quiz_questions():
        answer = every[module][name]
        if isinstance(question, Choice):
            assert question.unlock(answer)["right"], (module, name)
            wrong = next(letter for letter in question.letters if letter != answer)
            assert not question.unlock(wrong)["right"], (module, name)
        elif isinstance(question, Numeric):
            value = float(answer[0] if isinstance(answer, list) else answer)
            assert question.unlock(value)["right"], (module, name)
            assert question.unlock(value * 1.5) is None or not question.unlock(value * 1.5)["right"], (module, name)
        elif isinstance(question, Lines):
            assert question.unlock(answer)["right"], (module, name)
            assert question.unlock(answer[:-1]) is None, (module, name)


def test_a_cheap_loop_over_the_bucket_grid_finds_no_entry():
    """The former digests, SHA-256 of the key and the bucket, fell to a loop of 10⁴ buckets in milliseconds. The
    same loop, 2·10⁴ buckets centred on each right number, with the salt or without, over each digest the loop
    could compute cheaply, finds no entry: only the slow key reaches them."""
    every = answers()
    for module, name, question in quiz_questions():
        if not isinstance(question, Numeric):
            continue
        answer = every[module][name]
        value = float(answer[0] if isinstance(answer, list) else answer)
        stored = set(question.locked)
        if question.rel_tol == 0:
            forms = [answer_key.number_form(float(n), 0) for n in range(int(value) - 10_000, int(value) + 10_000)]
        else:
            centre = quiz.number_forms(value, question.rel_tol)[1]
            bucket = int(re.search(r"([-+]\d+)@", centre).group(1))
            sign = "+" if value > 0 else "-"
            forms = [f"bucket:{sign}{b}@{question.rel_tol!r}" for b in range(bucket - 10_000, bucket + 10_000)]
        assert answer_key.number_form(value, question.rel_tol) in forms
        for form in forms:
            for text in (f"{question.key}\x1f{form}", f"{question.salt}\x1f{question.key}\x1f{form}"):
                cheap = hashlib.sha256(text.encode()).hexdigest()
                assert cheap[:16] not in stored and cheap[:24] not in stored, (module, name, form)


def test_each_try_costs_one_scrypt_of_16_mib(monkeypatch):
    """What makes the loop slow is a fixed amount of work, not a timing: a check of a number derives its key once,
    with scrypt of n · r · 128 ≥ 16 MiB of memory (about 42 ms on the course's CPU, so 10⁴ tries take minutes)."""
    calls = []
    real = hashlib.scrypt

    def counted(password, **kwargs):
        calls.append(kwargs)
        return real(password, **kwargs)

    monkeypatch.setattr(hashlib, "scrypt", counted)
    answer_key.derive.cache_clear()
    question = importlib.import_module("transformer_course.exercises.nb02_attention").QUESTIONS["saturation"]
    question.unlock(0.5)
    assert len(calls) == 1
    assert calls[0]["n"] * calls[0]["r"] * 128 >= 16 * 2**20 and calls[0]["p"] >= 1


def test_help_shows_placeholders_only():
    """help(ex.check_quiz) and every checker's docstring show the call's form, never an answer (the scan above
    reads the docstrings; this reads what help() prints)."""
    import pydoc

    every = answers()
    for path in sorted((EXERCISES / "questions").glob("*.json")):
        module = importlib.import_module(f"transformer_course.exercises.{path.stem}")
        shown = {"help": pydoc.render_doc(module, renderer=pydoc.plaintext)}
        found = leaks({f"{path.stem}.json": json.dumps(shown)}, {path.stem: every[path.stem]})
        assert not found, found
        if hasattr(module, "check_quiz"):
            assert "q1=..." in (module.check_quiz.__doc__ or ""), path.stem


def test_the_answer_exercises_outside_the_quizzes_are_locked_questions_too():
    """Bug lines, the mystery letters of notebook 07 and notebook 09's big count are questions like the quizzes'
    (so the tests above unlock them, and loop over them cheaply in vain): no module keeps a digest of its own."""
    locked = {(module, name) for module, name, _ in quiz_questions()}
    others = {("nb02_attention", "bug_lines"), ("nb04_layernorm_residual", "bug_line"), ("nb07_decoder", "model_1"),
              ("nb07_decoder", "model_2"), ("nb09_decoding", "cache_big")}  # fmt: skip
    assert others <= locked, others - locked
    assert all(name in locked for name in ((m, n) for m, names in answers().items() for n in names))


@pytest.mark.slow
def test_the_locked_entries_are_the_plain_texts_locked_again(tmp_path):
    """``python -m course_tools.quiz notebooks/solutions/quiz`` rewrites each question's
    ``locked`` entries from the plain texts: locking them again gives the committed files byte for byte, so the
    texts a learner unlocks are the ones kept with the solutions."""
    copy = tmp_path / "questions"
    shutil.copytree(EXERCISES / "questions", copy)
    quiz.write_locked(QUIZ_SOURCES, copy)
    for path in sorted((EXERCISES / "questions").glob("*.json")):
        assert (copy / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), path.name
