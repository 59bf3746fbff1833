"""The model is written once: the learner's files are cut from the package's own modules.

The build cells of notebooks 02–07 (``%%writefile my_transformer/<file>.py``, English and 中文) and the reference
answers ``notebooks/solutions/my_transformer/<file>.py`` are what ``course_tools.edition.learner_files`` cuts from
the regions marked ``# learner file: <file>`` in ``transformer_course/attention.py``, ``layers.py`` and
``model.py``. These tests fail when a notebook's scaffold or a solution disagrees with the package
(``python -m course_tools.edition.learner_files sync`` writes them again).
"""

import ast
import json
import shutil

import pytest

from course_tools.edition import learner_files as lf
from transformer_course.provenance import FILES, NAMES, SOURCES, file_status


def test_every_build_cell_and_solution_is_cut_from_the_package():
    assert lf.differences() == [], "run: python -m course_tools.edition.learner_files sync"


@pytest.mark.parametrize("file", list(FILES))
def test_a_learners_file_holds_exactly_its_names_from_its_package_module(file):
    tree = ast.parse(lf.solution(file))
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert sorted(defined) == sorted(NAMES[file])
    assert f"# learner file: {file}" in (lf.PACKAGE / f"{SOURCES[file]}.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("file", list(FILES))
def test_no_mark_and_no_package_only_line_reaches_the_learner(file):
    for text in (lf.solution(file), lf.scaffold(file)):
        assert "package only" not in text and "# learner" not in text and "# exercise" not in text
        assert "transformer_course" not in text and "check_dropout" not in text and "cache" not in text
        assert ": Tensor" not in text and "-> " not in text  # the learner's signatures carry no annotations


@pytest.mark.parametrize("file", list(FILES))
def test_the_scaffold_is_blank_and_the_solution_is_complete(file, tmp_path):
    (tmp_path / "scaffold.py").write_text(lf.scaffold(file), encoding="utf-8")
    (tmp_path / "solution.py").write_text(lf.solution(file), encoding="utf-8")
    assert file_status(tmp_path / "scaffold.py") == "blank"
    assert file_status(tmp_path / "solution.py") == "yours"  # no stub, no package import, no PyTorch shortcut
    assert "raise NotImplementedError" not in lf.solution(file)


def test_the_scaffolds_keep_the_hints_that_teach():
    """What each build cell tells the learner, as it did when the cells were written by hand."""
    hints = {
        "attention.py": "# 2. with a mask: where it is False, the most negative float, torch.finfo(scores.dtype).min",
        "multi_head.py": "        #    (self.in_proj.weight.chunk(3), self.in_proj.bias.chunk(3) and F.linear(x, weight, bias))",
        "norm_residual.py": "with tensor operations (nn.LayerNorm and F.layer_norm do not count)",
        "embeddings.py": '# your code here: one branch per kind (if self.kind == "sinusoidal": …), about 4 lines',
        "encoder.py": "# copy.deepcopy makes a layer with its own weights; an nn.ModuleList registers them as sub-modules",
        "decoder.py": "    #    assign the Parameter itself, so that the two are one tensor",
    }
    for file, hint in hints.items():
        assert hint in lf.scaffold(file), file
        assert hint.strip().removeprefix("# ") not in lf.solution(file), file
    decoder = lf.scaffold("decoder.py")
    assert (
        "def make_model(" in decoder
        and "def check_options(src_vocab, tgt_vocab, tie_embeddings, positional):" in decoder
    )
    # the layer's and the stack's forward, the generator's, encode, decode and forward of the model, make_model
    assert decoder.count("raise NotImplementedError") == 7


def test_the_marks_cut_what_they_say():
    region = '''class Piece(nn.Module):
    # learner: def __init__(self, d_model):
    def __init__(
        self,
        d_model: int,
        fast: bool = True,
    ) -> None:
        super().__init__()
        check(d_model)  # package only
        self.d_model = d_model
        # package only: begin
        self.fast = fast
        # package only: end

    def forward(self, x: Tensor, cache: Cache | None = None) -> Tensor:
        """x (batch, len, d_model)."""
        # exercise: one line
        # exercise:    (two, indented)
        # learner: return x * 2  # (B, L, d_model)
        return x * 2 if cache is None else cache.add(x)
'''
    solution = lf.cut_region(region, as_scaffold=False)
    assert (
        solution
        == '''class Piece(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model

    def forward(self, x, cache=None):
        """x (batch, len, d_model)."""
        return x * 2  # (B, L, d_model)'''
    )
    scaffold = lf.cut_region(region, as_scaffold=True)
    assert scaffold.endswith('''        """x (batch, len, d_model)."""
        # one line
        #    (two, indented)
        raise NotImplementedError''')


def test_a_drifted_build_cell_or_solution_is_named_and_sync_writes_it_again(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    for name in FILES.values():
        (notebooks / "zh").mkdir(parents=True, exist_ok=True)
        shutil.copy(lf.NOTEBOOKS / name, notebooks / name)
        shutil.copy(lf.NOTEBOOKS / "zh" / name, notebooks / "zh" / name)
    shutil.copytree(lf.SOLUTIONS, notebooks / "solutions" / "my_transformer")
    monkeypatch.setattr(lf, "ROOT", tmp_path)
    monkeypatch.setattr(lf, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(lf, "SOLUTIONS", notebooks / "solutions" / "my_transformer")
    assert lf.differences() == []

    path = notebooks / "zh" / FILES["norm_residual.py"]
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = lf.build_cell(notebook, "norm_residual.py")
    assert "# 在这里写你的代码：大约 3 行" in "".join(cell["source"]), (
        "the zh build cell's comments come from zh_comments.json"
    )
    cell["source"] = "".join(cell["source"]).replace("大约 3 行", "大约 4 行")
    path.write_text(json.dumps(notebook, ensure_ascii=False, indent=1), encoding="utf-8")
    (notebooks / "solutions" / "my_transformer" / "encoder.py").write_text("# edited by hand\n", encoding="utf-8")
    assert lf.differences() == [
        "notebooks/zh/04_layernorm_residual.ipynb: the build cell of norm_residual.py is not the package's scaffold",
        "notebooks/solutions/my_transformer/encoder.py: not the package's regions of encoder.py",
    ]
    assert sorted(lf.sync()) == [
        "notebooks/solutions/my_transformer/encoder.py",
        "notebooks/zh/04_layernorm_residual.ipynb",
    ]
    assert lf.differences() == []
