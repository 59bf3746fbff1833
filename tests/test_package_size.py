"""benchmarks/package_size.py: its line counts on a file whose answer is known, and a topic for every module."""

from pathlib import Path

from helpers import load_module

ROOT = Path(__file__).resolve().parent.parent
size = load_module(ROOT / "benchmarks" / "package_size.py", "package_size")


def test_line_kinds_counts_each_kind_once(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        '"""A module\n\nwith a docstring of three lines."""\n'  # 3 doc
        "\n"  # blank
        "# a comment\n"  # comment
        "def f(x):\n"  # code
        '    """One line."""  # a docstring line stays a docstring\n'  # doc
        "    text = '''# not a comment'''\n"  # code
        "\n"  # blank
        "    return x  # trailing\n",  # code
        encoding="utf-8",
    )
    assert size.line_kinds(path) == {"lines": 10, "code": 3, "doc": 4, "comment": 1, "blank": 2}


def test_every_runtime_module_has_one_topic():
    placed = [p for entries in size.TOPICS.values() for p in size.files_of(entries)]
    assert all(p.is_file() for p in placed), [str(p) for p in placed if not p.is_file()]
    assert len(placed) == len(set(placed)), "a module is in two topics"
    rest = {str(p.relative_to(size.RUNTIME)) for p in set(size.RUNTIME.rglob("*.py")) - set(placed)}
    assert rest <= {"__init__.py", "__main__.py"}, f"add {sorted(rest)} to a topic of benchmarks/package_size.py"
