"""The 中文版: ``notebooks/zh/`` is the English course with its prose in Chinese, its code shared.

- every English notebook has its zh notebook, and ``course_tools.edition.zh.differences`` finds nothing:
  the same cells, code identical except the language lines, every markdown cell translated;
- the 术语表 ``notebooks/zh/GLOSSARY.md`` parses, covers every term of ``notebooks/GLOSSARY.md`` with the same
  notebook numbers, and gives each a Chinese form (or the English word itself, kept in English);
- the Chinese prose (the zh notebooks' markdown, the README's 中文版 section, the glossary's explanations) uses
  none of the variants the glossary lists as avoided; a variant inside a longer chosen form does not count;
- relative links and images in that prose lead to files that exist;
- the language lines set the language to zh (run in a fresh interpreter);
- code cells name course files only through ``course_path``, which finds the same file from ``notebooks/``
  and ``notebooks/zh/``.

Each check is a function of files; the last tests run it on a broken copy in ``tmp_path`` to show it can fail.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from course_tools.edition import zh
from transformer_course.paths import course_path, course_root, is_course_root

from helpers import (
    CHINESE,
    ENGLISH,
    GLOSSARY_ZH,
    NOTEBOOKS,
    README,
    REPO,
    ZH,
    ZH_SECTION,
    avoided_uses,
    cell_source,
    chinese_texts,
    english_glossary,
    glossary_problems,
    parse_glossary,
    readme_section,
)

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"']")


def broken_links(texts: list[tuple[str, str, Path]]) -> list[str]:
    """Relative links and images that lead nowhere: where, the target, and what it resolves to."""
    broken = []
    for where, markdown, base in texts:
        code_free = "\n".join(re.sub(r"`[^`]*`", " ", line) for line in prose_lines_keeping_links(markdown))
        for match in LINK.finditer(code_free):
            target = unquote((match[1] or match[2]).split("#")[0])
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # an anchor in the same page, or a URL
            if not (base / target).exists():
                broken.append(f"{where}: {target} (no {os.path.normpath(base / target)})")
    return broken


def prose_lines_keeping_links(markdown: str) -> list[str]:
    fenced, lines = False, []
    for line in markdown.splitlines():
        fenced ^= line.lstrip().startswith("```")
        lines.append("" if fenced or line.lstrip().startswith("```") else line)
    return lines


def language_after(lines: tuple[str, ...]) -> str:
    """The language a fresh interpreter is set to after running ``lines`` (as a notebook's first cell would)."""
    code = "\n".join(lines) + "\nimport transformer_course\nprint(transformer_course.get_language())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ZH, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def paths_not_through_course_path(folder: Path) -> list[str]:
    """String constants in code cells that name a path relative to the notebook's folder (``../…``,
    ``figures/…``) outside a ``course_path(...)`` call: those break in notebooks/zh/."""
    found = []
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "\n".join(line for line in cell_source(cell).splitlines() if not line.startswith("%"))
            tree = ast.parse(source)
            allowed = {
                id(arg)
                for node in ast.walk(tree)
                if isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "course_path"
                for arg in node.args
            }
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in allowed:
                    if re.match(r"\.\.(/|$)|figures/", node.value):
                        found.append(
                            f"{path.name} cell {cell.get('id')}: {node.value!r}: write course_path({node.value!r})"
                        )
    return found


# ---- (a) one zh notebook per English notebook, code shared ------------------------------------------------------


@pytest.mark.parametrize("english", ENGLISH, ids=[p.stem for p in ENGLISH])
def test_each_english_notebook_has_a_zh_notebook_with_the_same_code_and_translated_markdown(english):
    problems = zh.differences(english)
    assert not problems, "\n".join(problems) + "\n(python -m course_tools.edition.zh check lists them all)"


def test_every_zh_notebook_has_an_english_one():
    extra = {p.name for p in CHINESE} - {p.name for p in ENGLISH}
    assert not extra, f"notebooks/zh/ has notebooks with no English one: {sorted(extra)}"


def test_zh_notebooks_are_committed_clean_with_the_python3_kernel():
    dirty = []
    for path in CHINESE:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if notebook["metadata"].get("kernelspec", {}).get("name") != "python3":
            dirty.append(f"{path.name}: kernel is not python3")
        dirty += [
            f"{path.name} cell {c.get('id')}: execution_count"
            for c in notebook["cells"]
            if c["cell_type"] == "code" and c.get("execution_count") is not None
        ]
    assert not dirty, "\n".join(dirty)


# ---- (b) the 术语表 -------------------------------------------------------------------------------------------


def test_the_glossary_covers_every_english_term_with_a_chinese_form():
    problems = glossary_problems()
    assert not problems, f"{GLOSSARY_ZH.relative_to(REPO)}:\n" + "\n".join(problems)


def test_the_glossary_lists_the_courses_term_choices_and_d2ls_forms_first():
    terms = {t.english: t for t in parse_glossary(GLOSSARY_ZH)}
    accepted = {english: re.split(r"\s+/\s+", terms[english].chosen) for english in terms}
    chosen = {
        "Attention": "注意力",
        "Multi-head attention": "多头注意力",
        "Mask": "掩码",
        "Positional encoding": "位置编码",
        "LayerNorm": "层规范化",
        "Residual connection": "残差连接",
        "Label smoothing": "标签平滑",
        "Beam search": "束搜索",
    }
    assert {english: form for english, form in chosen.items() if form in accepted[english]} == chosen
    d2l_first = {  # the d2l reader's forms come first; the course's own words for stacks and the explorer
        "LayerNorm": "层规范化",
        "BatchNorm": "批量规范化",
        "Batch size": "批量大小",
        "Causal (subsequent) mask": "因果掩码",
        "To attend": "关注",
        "To mask": "掩蔽",
        "Heatmap": "热图",
        "Cost (compute)": "开销",
        "Stack (of layers)": "堆叠",
        "Explorer (interactive)": "交互式查看器",
        "Package": "包",
        "Cell (notebook)": "单元格",
    }
    assert {english: accepted[english][0] for english in d2l_first} == d2l_first
    avoided = {a.variant for t in terms.values() for a in t.avoided}
    assert not avoided & {"层规范化", "批量规范化", "批量大小", "关注", "掩蔽", "热图", "开销", "束宽"}, (
        "d2l's own terms are not avoided"
    )
    for coined in ("Diagonality", "Anti-diagonality"):
        assert "本课程自拟" in terms[coined].explanation, f"{coined}: say that the term is the course's own"
    assert "64 个十六进制字符" in terms["SHA-256"].explanation
    assert len(terms) >= len(english_glossary())


# ---- (c) no avoided variant in the prose ---------------------------------------------------------------------


def test_the_chinese_prose_uses_no_avoided_variant():
    terms = parse_glossary(GLOSSARY_ZH)
    texts = [(where, markdown) for where, markdown, _ in chinese_texts()]
    texts += [(f"GLOSSARY.md {t.english!r}", t.explanation) for t in terms]
    found = avoided_uses(texts, terms)
    assert not found, f"{len(found)} uses of variants that notebooks/zh/GLOSSARY.md avoids:\n" + "\n".join(found)


# ---- (d) links ------------------------------------------------------------------------------------------------


def test_relative_links_and_images_in_the_chinese_prose_lead_to_files():
    texts = chinese_texts() + [("GLOSSARY.md", GLOSSARY_ZH.read_text(encoding="utf-8"), ZH)]
    broken = broken_links(texts)
    assert not broken, (
        "links from notebooks/zh/ are one folder deeper (figures/x.svg → ../figures/x.svg):\n" + "\n".join(broken)
    )


# ---- (e) the language lines -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_language_lines_set_the_language_to_zh():
    assert language_after(zh.LANGUAGE_LINES) == "zh"


# ---- the README and notebook 00 say how to install and start, in Chinese ----------------------------------------


def test_the_readme_has_a_chinese_section_after_the_quick_start_and_points_to_it_from_the_top():
    text = README.read_text(encoding="utf-8")
    assert f"\n{ZH_SECTION}\n" in text, f"README.md needs a '{ZH_SECTION}' section"
    assert text.index("## Quick start") < text.index(f"\n{ZH_SECTION}\n")
    top = text[: text.index("## Quick start")]
    assert "#中文版" in top, "README.md: a one-line English pointer to the 中文版 section above the Quick start"


MIRROR_MAKE_LINE = re.compile(r"^make course PIP_INDEX_URL=.*$", re.M)


def test_the_chinese_install_section_names_the_mirrors_the_platforms_and_the_data_source():
    text = readme_section()
    for needed in (
        "TC_DATA_MIRROR",
        "pypi.tuna.tsinghua.edu.cn",
        "mirrors.aliyun.com/pytorch-wheels/cpu/",
        'TORCH_SPEC="torch==2.13.0+cpu"',
        "download.pytorch.org/whl/cpu",
        "https://github.com/multi30k/dataset/raw/master/data/task1/raw/",
        "python -m transformer_course download",
        "http.server",
        "powershell",
        "macOS",
        "notebooks/zh/",
        "environment.yml",
    ):
        assert needed in text, f"README.md {ZH_SECTION}: the Chinese install instructions should mention {needed}"


def test_zh_notebook_00_links_to_the_readmes_install_section_instead_of_repeating_it():
    cells = json.loads((ZH / "00_introduction.ipynb").read_text(encoding="utf-8"))["cells"]
    text = "\n".join(cell_source(c) for c in cells if c["cell_type"] == "markdown")
    assert "](../../README.md#安装与启动)" in text, "zh 00: link to the README's 安装与启动 section"
    repeated = [word for word in ("pip install", "make course", "TORCH_PIP_ARGS", "PIP_INDEX_URL") if word in text]
    assert not repeated, f"zh 00 repeats the README's install text ({repeated}): link to it instead"
    assert "### 安装与启动" in readme_section()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_readmes_mirror_make_line_installs_the_cpu_wheel_first_with_the_mirror_on_every_pip(tmp_path):
    """Runs the README's one make line for real, with a stand-in python that records what pip would get."""
    [line] = MIRROR_MAKE_LINE.findall(readme_section())
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "pip.log"
    fake = venv / "bin" / "python"
    fake.write_text(f'#!/bin/sh\necho "PIP_INDEX_URL=$PIP_INDEX_URL $*" >> {log}\n', encoding="utf-8")
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS", "PIP_", "TORCH_"))}
    args = shlex.split(line)[1:] + [f"VENV={venv}"]
    subprocess.run(["make", "install-course", *args[1:]], cwd=REPO, env=env, check=True, capture_output=True)
    calls = log.read_text(encoding="utf-8").splitlines()
    assert all(c.startswith("PIP_INDEX_URL=https://pypi.tuna.tsinghua.edu.cn/simple -m pip install") for c in calls)
    torch = next(
        i for i, c in enumerate(calls) if "torch==2.13.0+cpu -f https://mirrors.aliyun.com/pytorch-wheels/cpu/" in c
    )
    package = next(i for i, c in enumerate(calls) if "-e .[notebooks]" in c)
    assert torch < package, calls
    assert line in (REPO / "Makefile").read_text(encoding="utf-8"), "the Makefile's comment shows the same line"


def test_the_chinese_pip_lines_parse_and_install_the_cpu_wheel_before_the_package():
    """Every ``pip install`` line of the 中文版 section (Windows, no make) as pip itself parses it."""
    from pip._internal.commands import create_command

    blocks = re.findall(r"```(?:bash|powershell)\n(.*?)```", readme_section(), re.S)
    checked = 0
    for block in blocks:
        lines = [re.sub(r"\s+#.*$", "", ln).strip() for ln in block.splitlines() if "pip install" in ln]
        lines = [ln[ln.index("pip install") + len("pip install") :] for ln in lines if "make " not in ln]
        parsed = [create_command("install").parse_args(shlex.split(ln)) for ln in lines]
        for i, (options, requirements) in enumerate(parsed):
            if "https://mirrors.aliyun.com/pytorch-wheels/cpu/" in options.find_links:
                assert requirements == ["torch==2.13.0+cpu"], lines[i]
                assert any(o.editables for o, _ in parsed[i + 1 :]), f"torch first, then the package: {lines}"
                checked += 1
    assert checked >= 2, "the Windows and the no-make paths each install torch==2.13.0+cpu from the wheel mirror"


# ---- course_path: the same file from notebooks/ and notebooks/zh/ ----------------------------------------------


def test_course_path_finds_the_same_file_from_both_notebook_folders(monkeypatch):
    seen = {}
    for folder in (NOTEBOOKS, ZH):
        monkeypatch.chdir(folder)
        seen[folder.name] = [
            (folder / course_path(p)).resolve() for p in ("../data", "figures/architecture.svg", "../runs/x/best.pt")
        ]
        assert course_root() == REPO
    assert (
        seen["notebooks"]
        == seen["zh"]
        == [REPO / "data", NOTEBOOKS / "figures/architecture.svg", REPO / "runs/x/best.pt"]
    )
    monkeypatch.chdir(NOTEBOOKS)
    assert course_path("../data") == Path("../data")  # in notebooks/ the path reads as written


def test_outside_a_course_folder_course_path_keeps_the_path_and_course_root_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # e.g. an nbgrader assignment: the notebook alone, its pictures beside it
    assert course_path("figures/architecture.svg") == Path("figures/architecture.svg")
    with pytest.raises(FileNotFoundError, match="no course folder at or above") as error:
        course_root()
    assert "\n" not in str(error.value) and "notebooks/" in str(error.value)


def test_a_course_folder_is_found_by_its_package_or_its_pyproject(tmp_path):
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    assert not is_course_root(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n', encoding="utf-8")
    assert not is_course_root(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "transformer_course"\n', encoding="utf-8")
    assert course_root(tmp_path / "notebooks" / "zh") == tmp_path.resolve()
    assert is_course_root(REPO)


def test_code_cells_name_course_files_only_through_course_path():
    found = paths_not_through_course_path(NOTEBOOKS)
    assert not found, "paths relative to the notebook's folder break in notebooks/zh/:\n" + "\n".join(found)


# ---- each check can fail: broken copies ------------------------------------------------------------------------


def copy_notebook(english: Path, folder: Path, edit=None) -> Path:
    """A zh notebook of ``english`` in ``folder``, every markdown cell 'translated', then ``edit``ed."""
    notebook = json.loads(english.read_text(encoding="utf-8"))
    first = True
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = "中文：" + cell_source(cell)
        elif first:
            cell["source"] = cell_source(cell) + "\n" + "\n".join(zh.LANGUAGE_LINES)
            first = False
    if edit:
        edit(notebook["cells"])
    target = folder / english.name
    target.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    return target


@pytest.fixture
def zh_copy(tmp_path, monkeypatch):
    """notebooks/ and notebooks/zh/ in tmp_path, with edition.zh pointed at them."""
    (tmp_path / "zh").mkdir()
    monkeypatch.setattr(zh, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(zh, "ZH", tmp_path / "zh")
    return tmp_path


def test_differences_finds_a_missing_notebook_a_changed_code_line_and_an_untranslated_cell(zh_copy):
    english = zh_copy / "02_attention.ipynb"
    english.write_text((NOTEBOOKS / english.name).read_text(encoding="utf-8"), encoding="utf-8")
    assert "is missing" in zh.differences(english)[0]
    copy_notebook(english, zh_copy / "zh")
    assert zh.differences(english) == []

    def break_it(cells):
        code = [c for c in cells if c["cell_type"] == "code"]
        code[1]["source"] = cell_source(code[1]) + "\nx = 1"
        markdown = [c for c in cells if c["cell_type"] == "markdown"]
        markdown[0]["source"] = json.loads(english.read_text(encoding="utf-8"))["cells"][0]["source"]

    copy_notebook(english, zh_copy / "zh", break_it)
    found = "\n".join(zh.differences(english))
    assert "differs from English" in found and "is not translated" in found


def test_the_glossary_check_finds_a_missing_term_a_wrong_number_and_an_english_form(tmp_path):
    broken = GLOSSARY_ZH.read_text(encoding="utf-8")
    broken = "\n".join(line for line in broken.splitlines() if not line.startswith("| Beam search |"))
    broken = broken.replace("| Dropout | dropout |", "| Dropout | drop-out |")
    broken = broken.replace("再做层规范化。[04]", "再做层规范化。[05]")
    (tmp_path / "GLOSSARY.md").write_text(broken, encoding="utf-8")
    problems = "\n".join(glossary_problems(tmp_path / "GLOSSARY.md"))
    assert "'Beam search' of GLOSSARY.md has no row" in problems
    assert "'Dropout': chosen form 'drop-out'" in problems
    assert "'Add & Norm': the explanation must end with [04]" in problems
    (tmp_path / "GLOSSARY.md").write_text(broken.replace(" | 说明 |", " |"), encoding="utf-8")
    with pytest.raises(ValueError, match="line"):
        parse_glossary(tmp_path / "GLOSSARY.md")


def test_the_avoided_variant_check_names_the_cell_and_line_and_spares_longer_chosen_forms():
    terms = parse_glossary(GLOSSARY_ZH)
    texts = [
        ("02.ipynb cell b", "查询、键和值。\n这里用集束搜索。\n代码里的 `补零` 和 $补零$ 不算。"),
        ("05.ipynb cell c", "数值稳定性很重要；可学习的位置嵌入也行。"),  # an exception; 位置嵌入 inside a chosen form
        ("05.ipynb cell d", "查询、键和数值；位置嵌入表。"),
    ]
    found = avoided_uses(texts, terms)
    assert found == [
        "02.ipynb cell b: '集束搜索' (write 束搜索) in: 这里用集束搜索。",
        "05.ipynb cell d: '数值' (write 键 / 查询 / 值) in: 查询、键和数值；位置嵌入表。",
        "05.ipynb cell d: '位置嵌入' (write 位置编码) in: 查询、键和数值；位置嵌入表。",
    ]


def test_the_link_check_finds_a_picture_still_linked_from_notebooks(tmp_path):
    texts = [
        ("00 cell a", "![架构](figures/architecture.svg) [下一讲](01_masks.ipynb#一) [论文](https://arxiv.org)", ZH),
        ("00 cell b", "![架构](../figures/architecture.svg) `[x](nowhere.md)`\n```\n[y](nowhere.md)\n```", ZH),
    ]
    assert broken_links(texts) == [f"00 cell a: figures/architecture.svg (no {ZH / 'figures/architecture.svg'})"]


@pytest.mark.slow
def test_the_language_check_sees_lines_that_do_not_set_the_language():
    assert language_after(("from transformer_course.i18n import set_language",)) == "en"


def test_the_path_check_finds_a_relative_path_outside_course_path(tmp_path):
    def break_it(cells):
        code = [c for c in cells if c["cell_type"] == "code"]
        code[-1]["source"] = 'CHECKPOINT = Path("../runs/x.pt")\nok = course_path("../runs/y.pt")'

    copy_notebook(NOTEBOOKS / "10_attention_visualization.ipynb", tmp_path, break_it)
    found = paths_not_through_course_path(tmp_path)
    assert len(found) == 1 and "'../runs/x.pt': write course_path('../runs/x.pt')" in found[0]


def test_the_readme_section_is_read_up_to_the_next_heading(tmp_path):
    (tmp_path / "README.md").write_text(
        "# x\n## Quick start\nq\n## 中文版\n用 补零\n## Settings\n热身\n", encoding="utf-8"
    )
    assert readme_section(tmp_path / "README.md") == "\n## 中文版\n用 补零"
    found = avoided_uses([("README", readme_section(tmp_path / "README.md"))], parse_glossary(GLOSSARY_ZH))
    assert found == ["README: '补零' (write 填充) in: 用 补零"]


# ---- code cells: Chinese comments, the same code ------------------------------------------------------------


@pytest.mark.parametrize("english", ENGLISH, ids=[p.stem for p in ENGLISH])
def test_the_zh_code_cells_carry_the_comment_tables_chinese(english):
    """Each zh code cell is its English cell put through the comment table (course_tools/edition/zh_comments.json):
    ``python -m course_tools.edition.zh sync`` writes them so, and nothing else changes."""
    target = ZH / english.name
    twins = {c.get("id"): cell_source(c) for c in json.loads(target.read_text(encoding="utf-8"))["cells"]}
    stale = [
        f"{target.name} cell {cell.get('id')}"
        for cell in json.loads(english.read_text(encoding="utf-8"))["cells"]
        if cell["cell_type"] == "code"
        and zh.strip_language(zh.to_chinese(cell_source(cell))) != zh.strip_language(twins.get(cell.get("id"), ""))
    ]
    assert not stale, "run python -m course_tools.edition.zh sync:\n" + "\n".join(stale)


def test_the_comment_table_is_chinese_and_keeps_each_comments_code():
    comments, strings = zh.translations()
    assert comments, "course_tools/edition/zh_comments.json has no comments"
    for english, chinese in {**comments, **strings}.items():
        assert zh.HAN.search(chinese), f"{english!r}: its translation {chinese!r} holds no 汉字 or Chinese punctuation"
        for number in re.findall(r"\d+(?:\.\d+)?", english):
            assert number in chinese, f"{english!r} → {chinese!r}: the number {number} is lost"


def test_same_code_ignores_comments_and_chinese_strings_only():
    english = 'x = f(a, 2)  # the scores\nprint("the scores", x)\nif x:\n    y = "cuda"  # a device\n'
    table = ({"the scores": "分数", "a device": "设备"}, {'"the scores"': '"分数"'})
    chinese = zh.to_chinese(english, table)
    assert chinese == 'x = f(a, 2)  # 分数\nprint("分数", x)\nif x:\n    y = "cuda"  # 设备\n'
    assert zh.same_code(english, chinese)
    assert zh.same_code(english, chinese + "\n".join(zh.LANGUAGE_LINES))
    assert zh.same_code("%%writefile a.py\nx = 1  # one\n", "%%writefile a.py\nx = 1  # 一\n")
    for changed in (
        chinese.replace("f(a, 2)", "f(a, 3)"),  # a number
        chinese.replace("f(a,", "g(a,"),  # a name
        chinese.replace('"cuda"', '"cpu"'),  # an English string: code reads it
        chinese.replace("    y =", "y ="),  # an indent
        chinese.replace("x = f", "x = -f"),  # an operator
        chinese + "z = 1\n",  # a line more
    ):
        assert not zh.same_code(english, changed), changed
    assert not zh.same_code("%%writefile a.py\nx = 1\n", "%%writefile b.py\nx = 1\n")
    # a bare word may be a key or a setting that code reads: translated only where it is a chart's label
    table = ({}, {'"loss"': '"损失"', '"loss per token"': '"每个词元的损失"'})
    assert zh.to_chinese('h["loss"]; ax.set_ylabel("loss per token"); f("loss")', table) == (
        'h["loss"]; ax.set_ylabel("每个词元的损失"); f("loss")'
    )
    assert zh.to_chinese('ax.set(xlabel="loss"); ax.plot(y, label="loss"); ax.set_title("loss")', table) == (
        'ax.set(xlabel="损失"); ax.plot(y, label="损失"); ax.set_title("损失")'
    )


def test_a_docstring_is_translated_and_a_triple_quoted_value_is_not():
    doc = '"""x (batch, len) → (batch,):\n    the sum."""'
    english = f"def f(x):\n    {doc}\n    return x.sum(-1)\n\n\ny = {doc}\n"
    table = ({}, {doc: '"""x (batch, len) → (batch,)：\n    求和。"""'})
    chinese = zh.to_chinese(english, table)
    assert chinese == english.replace(doc, table[1][doc], 1)
    assert zh.same_code(english, chinese)


def test_differences_finds_a_code_change_hidden_behind_a_chinese_comment(zh_copy):
    english = zh_copy / "04_layernorm_residual.ipynb"
    english.write_text((NOTEBOOKS / english.name).read_text(encoding="utf-8"), encoding="utf-8")

    def translate(cells):
        for cell in cells:
            if cell["cell_type"] == "code":
                cell["source"] = zh.to_chinese(cell_source(cell))

    copy_notebook(english, zh_copy / "zh", translate)
    assert zh.differences(english) == []

    def translate_and_break(cells):
        translate(cells)
        build = next(c for c in cells if cell_source(c).startswith("%%writefile"))
        build["source"] = cell_source(build).replace("self.eps = eps", "self.eps = 1e-6", 1)

    copy_notebook(english, zh_copy / "zh", translate_and_break)
    assert any("differs from English" in line for line in zh.differences(english))


def test_a_chinese_f_string_must_keep_the_english_replacement_fields():
    """A translated f-string may change its words and their order around the fields, never the code inside ``{}``:
    an expression, a conversion or a format spec changed, a field dropped, added or moved is a difference."""
    english = 'print(f"speed on {device}: {rate:.1f} steps/s, {n:,} steps")\n'
    table = (
        {},
        {
            'f"speed on {device}: {rate:.1f} steps/s, {n:,} steps"': 'f"{device} 上的速度：每秒 {rate:.1f} 步，共 {n:,} 步"'
        },
    )
    chinese = zh.to_chinese(english, table)
    assert chinese == 'print(f"{device} 上的速度：每秒 {rate:.1f} 步，共 {n:,} 步")\n'
    assert zh.same_code(english, chinese)
    assert zh.same_code(english, chinese.replace("{rate:.1f}", "{ rate :.1f}"))  # spacing inside is not code
    for changed in (
        chinese.replace("{rate:.1f}", "{rate * 2:.1f}"),  # an expression
        chinese.replace("{rate:.1f}", "{steps:.1f}"),  # a name
        chinese.replace("{rate:.1f}", "{rate:.2f}"),  # a format spec
        chinese.replace("{device}", "{device!r}"),  # a conversion
        chinese.replace("，共 {n:,} 步", ""),  # a field dropped
        chinese.replace("的速度", "的速度 {n}"),  # a field added
        'print(f"每秒 {rate:.1f} 步，{device} 上，共 {n:,} 步")\n',  # fields in another order
        'print("每秒若干步")\n',  # a plain string for an f-string
    ):
        assert not zh.same_code(english, changed), changed
    assert zh.fields('"plain {x}"') == () and len(zh.fields('rf"{a!s:>{w}} {b}"')) == 2


def test_an_f_string_translated_only_in_its_punctuation_is_chinese_text_and_keeps_its_fields():
    """``f"{layout}, {name}"`` → ``f"{layout}，{name}"``: no 汉字, but its full-width comma is written for a Chinese
    reader, so the string is read as a translation (its fields still compared), not as changed English."""
    english = 'label = f"{layout}, {name}"\n'
    assert zh.same_code(english, 'label = f"{layout}，{name}"\n')
    assert not zh.same_code(english, 'label = f"{name}，{layout}"\n')  # the fields swapped
    assert not zh.same_code(english, 'label = f"{layout}; {name}"\n')  # English changed: a difference
