"""The quizzes' plain texts, locked with their answers into the runtime's question files.

The runtime only unlocks (:mod:`transformer_course.exercises.answer_key` says how, and why a question stores no
answer); this writes what it unlocks. The plain texts (each answer, why it is right, each wrong letter's or
number's hint) are kept with the reference solutions, ``notebooks/solutions/quiz/<module>.json``; after changing
one, lock them again:

    python -m course_tools.quiz notebooks/solutions/quiz

Each question gets one entry per answer the checker speaks about, filed under a tag derived from that answer and
encrypted with it (:func:`locked_entries`), all its texts padded to one length.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import transformer_course.exercises
from transformer_course.exercises.answer_key import canonical, derive, lock, number_form, tag

__all__ = ["PAD", "QUESTIONS", "locked_entries", "main", "number_forms", "source_forms", "write_locked"]

PAD = 64  # every text of a question is padded to one length, a multiple of this
QUESTIONS = Path(transformer_course.exercises.__file__).with_name("questions")  # where the locked entries go


def number_forms(value: float, rel_tol: float) -> list[str]:
    """The forms a right number may take: its bucket and both neighbours (anything within ``rel_tol`` of
    ``value`` falls in one of them, nothing beyond ``2 · rel_tol`` does); one form when ``rel_tol`` is 0."""
    if rel_tol == 0 or value == 0:
        return [number_form(value, rel_tol)]
    return [number_form(value, rel_tol, step) for step in (-1, 0, 1)]


def _plain_length(entries: list[dict]) -> int:
    longest = max(len(json.dumps(e, ensure_ascii=False, sort_keys=True).encode("utf-8")) for e in entries)
    return -(-longest // PAD) * PAD


def locked_entries(salt: str, key: str, forms: dict[str, dict]) -> dict[str, str]:
    """``{tag: locked entry}`` of ``{canonical form: entry}``, sorted by tag (the order says nothing either)."""
    length = _plain_length(list(forms.values()))
    found = {}
    for form, entry in forms.items():
        derived = derive(salt, key, form)
        found[tag(derived)] = lock(derived, entry, length)
    return dict(sorted(found.items()))


def source_forms(question: dict, source: dict) -> dict[str, dict]:
    """``{canonical form: entry}`` of one question: ``question`` from ``exercises/questions/<module>.json``,
    ``source`` its plain texts (``answer``, ``right`` and, for letters, ``wrong``; for bug lines ``lines``; for
    numbers ``mistakes``, a list of ``{"value": a wrong number, "text": its hint}``)."""
    answer = source["answer"]
    if "letters" in question:
        forms = {canonical(answer): {"right": True, "text": source["right"]}}
        for letter, text in source["wrong"].items():
            forms[canonical(letter)] = {"right": False, "text": text}
        if sorted(forms) != sorted(canonical(letter) for letter in question["letters"]):
            raise ValueError(f"{question['key']}: give a text for each of the letters {question['letters']}")
        return forms
    if "lines" in question:
        forms = {canonical(list(answer)): {"right": True, "text": source["right"]}}
        for line in range(1, question["lines"] + 1):
            forms[canonical(line)] = {"bug": line in answer, "text": source["lines"][str(line)]}
        return forms
    rel_tol = question.get("rel_tol", 1e-3)
    right = answer if isinstance(answer, list) else [answer]  # a question may accept two readings
    forms = {
        form: {"right": True, "text": source["right"]}
        for value in right
        for form in number_forms(float(value), rel_tol)
    }
    for mistake in source.get("mistakes", []):  # a plausible wrong number and its hint; the right one wins a bucket
        for form in number_forms(float(mistake["value"]), rel_tol):
            forms.setdefault(form, {"right": False, "text": mistake["text"]})
    return forms


def write_locked(source_folder: Path, questions_folder: Path) -> list[Path]:
    """Lock every question of every ``source_folder/<module>.json`` into ``questions_folder/<module>.json``
    (its ``locked`` field; the rest of the file is kept). Returns the files written."""
    written = []
    for path in sorted(Path(source_folder).glob("*.json")):
        sources = json.loads(path.read_text(encoding="utf-8"))
        target = Path(questions_folder) / path.name
        table = json.loads(target.read_text(encoding="utf-8"))
        if set(sources) != set(table):
            raise ValueError(
                f"{path} has {sorted(sources)}, {target} has {sorted(table)}: give both the same questions"
            )
        for name, question in table.items():
            source = sources[name]
            question["locked"] = locked_entries(source["salt"], question["key"], source_forms(question, source))
        target.write_text(json.dumps(table, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    """``python -m course_tools.quiz SOURCE_FOLDER``: lock the texts of SOURCE_FOLDER/*.json into the runtime's
    ``transformer_course/exercises/questions/``."""
    if len(argv) != 1:
        raise SystemExit(main.__doc__)
    for path in write_locked(Path(argv[0]), QUESTIONS):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
