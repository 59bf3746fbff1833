"""The learner's own model: what notebooks 02–07 write into my_transformer/, whose code it is.

The code under test is the reference of each build cell, ``notebooks/solutions/my_transformer/<file>.py`` (what a
solved build cell writes: tests/test_solve.py pins that), copied into a temporary folder. The package's model is
the independent reference: same weights in, same numbers out. Then what the learner sees: per file whose code it
is, a line for each fallback, nothing called "yours" that the learner did not write.
"""

import ast
import importlib
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

import transformer_course as tc
from transformer_course.learner import (
    FALLBACK_MARK,
    FILES,
    NAMES,
    copy_weights,
    describe_provenance,
    fill_missing_files,
    learner_or_package_model,
    load,
    load_learner_model,
    package_piece,
    provenance,
    reference_folder,
    use_reference,
    writefile_cells,
)
from transformer_course.provenance import SOURCES

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
REFERENCES = NOTEBOOKS / "solutions" / "my_transformer"
SIZES = dict(N=2, d_model=16, d_ff=32, h=4)
SRC = torch.tensor([[5, 6, 7, 8, 9, 10], [5, 6, 7, 0, 0, 0]])  # (2, 6), the second sentence padded
TGT = torch.tensor([[2, 11, 12, 13, 14], [2, 11, 12, 0, 0]])  # (2, 5), starting with <s>


def masks():
    return tc.padding_mask(SRC, 0), tc.target_mask(TGT, 0)


def own_code(text: str) -> str:
    """The reference's code made the learner's own: every function begins with a statement of its own (the same
    numbers out, another structure), so that it is neither the reference nor the reference edited."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            node.body.insert(0, ast.parse("checked_by_me = True").body[0])
    return ast.unparse(tree) + "\n"


def write_course(folder, mine=True):
    """Copy the six reference files into ``folder``; return its make_model. ``mine``: the learner's own code
    (:func:`own_code`: the same numbers out), not the reference's."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").touch()
    for name in FILES:
        text = (REFERENCES / name).read_text(encoding="utf-8")
        (folder / name).write_text(own_code(text) if mine else text, encoding="utf-8")
    make = load_learner_model(folder)
    assert make is not None, "the reference files did not import"
    return make


def course_folder(tmp_path) -> Path:
    """A course in tmp_path (the package's folder, notebooks/solutions/my_transformer/); its learner's folder."""
    (tmp_path / "transformer_course").mkdir()
    (tmp_path / "notebooks" / "solutions").mkdir(parents=True)
    shutil.copytree(REFERENCES, tmp_path / "notebooks" / "solutions" / "my_transformer")
    return tmp_path / "notebooks" / "my_transformer"


def blank(text: str) -> str:
    """The reference text with every forward body replaced by `raise NotImplementedError` (a scaffold)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in ("forward", "scaled_dot_product_attention"):
            node.body = [ast.parse("raise NotImplementedError").body[0]]
    return ast.unparse(tree) + "\n"


@pytest.fixture(scope="module")
def learner_make_model(tmp_path_factory):
    return write_course(tmp_path_factory.mktemp("course") / "my_transformer")


def pair(make_model, **options):
    """The learner's model and the package's, built with the same sizes; the package's weights copied in."""
    torch.manual_seed(0)
    package = tc.make_model(20, 20, **SIZES, **options)
    mine = make_model(20, 20, **SIZES, **options)
    copy_weights(package, mine)
    return mine, package


# ---- the files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(FILES))
def test_each_file_is_written_by_one_cell_of_its_notebook(name):
    cells = writefile_cells(NOTEBOOKS / FILES[name])
    assert name in cells, f"{FILES[name]} has no '%%writefile my_transformer/{name}' cell"
    cells = json.loads((NOTEBOOKS / FILES[name]).read_text(encoding="utf-8"))["cells"]
    first_lines = ["".join(c["source"]).partition("\n")[0] for c in cells if c["cell_type"] == "code"]
    assert first_lines.count(f"%%writefile my_transformer/{name}") == 1


def test_no_other_notebook_writes_into_my_transformer():
    writers = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for name in writefile_cells(path):
            writers.setdefault(name, []).append(path.name)
    assert writers == {name: [notebook] for name, notebook in FILES.items()}


def test_every_file_has_its_reference_in_notebooks_solutions():
    assert sorted(p.name for p in REFERENCES.glob("*.py")) == sorted(FILES)


# ---- the model they make -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"norm_first": True},
        {"positional": "learned"},
        {"norm_first": True, "positional": "learned"},
        {"tie_embeddings": "all"},
        {"tie_embeddings": "none"},
        {"dropout": 0.0, "max_len": 64},
    ],
    ids=[
        "paper default",
        "pre-LN",
        "learned positions",
        "pre-LN learned",
        "all tied",
        "untied",
        "no dropout, max_len 64",
    ],
)
def test_the_package_weights_load_strictly_and_give_the_same_output(learner_make_model, options):
    mine, package = pair(learner_make_model, **options)
    assert list(mine.state_dict()) == list(package.state_dict())  # the same names, in the same order
    mine.eval(), package.eval()
    src_mask, tgt_mask = masks()
    with torch.no_grad():
        assert_close(mine.encode(SRC, src_mask), package.encode(SRC, src_mask))
        assert_close(
            mine.generator(mine(SRC, TGT, src_mask, tgt_mask)), package.generator(package(SRC, TGT, src_mask, tgt_mask))
        )


def test_the_learner_model_ties_what_the_package_ties(learner_make_model):
    for tie in ("none", "decoder", "all"):
        mine, package = pair(learner_make_model, tie_embeddings=tie)
        for model in (mine, package):
            assert (model.generator.proj.weight is model.tgt_embed.lut.weight) == (tie != "none")
            assert (model.src_embed.lut.weight is model.tgt_embed.lut.weight) == (tie == "all")
        assert tc.count_parameters(mine) == tc.count_parameters(package)


def test_dropout_sits_where_the_package_puts_it(learner_make_model):
    """Training mode, P_drop = 0.3: the same seed drops the same numbers only if every dropout is in the same place."""
    mine, package = pair(learner_make_model, dropout=0.3)
    mine.train(), package.train()
    src_mask, tgt_mask = masks()
    torch.manual_seed(7)
    ours = mine(SRC, TGT, src_mask, tgt_mask)
    torch.manual_seed(7)
    assert_close(ours, package(SRC, TGT, src_mask, tgt_mask))


@pytest.mark.slow
def test_a_training_step_gives_the_same_loss_and_gradients(learner_make_model):
    mine, package = pair(learner_make_model, dropout=0.1)
    src_mask, tgt_mask = masks()
    losses, grads = [], []
    for model in (mine, package):
        model.train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        step_losses = []
        for step in range(2):
            torch.manual_seed(step)
            logits = model.generator(model(SRC, TGT, src_mask, tgt_mask))  # (2, 5, 20)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 20), TGT.roll(-1, dims=1).reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            if step == 0:
                grads.append({name: p.grad.clone() for name, p in model.named_parameters()})
            optimizer.step()
            step_losses.append(loss.item())
        losses.append(step_losses)
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        assert_close(grads[0][name], grads[1][name], atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.slow
def test_the_package_greedy_decoder_runs_the_learner_model(learner_make_model):
    mine, package = pair(learner_make_model)
    mine.eval(), package.eval()
    src_mask, _ = masks()
    with torch.no_grad():
        ours = tc.greedy_decode(mine, SRC, src_mask, max_len=7, start_symbol=2, use_cache=False)
        theirs = tc.greedy_decode(package, SRC, src_mask, max_len=7, start_symbol=2, use_cache=False)
    assert torch.equal(ours, theirs)


def test_learned_positions_are_a_trained_table_with_the_package_name(learner_make_model):
    mine, package = pair(learner_make_model, positional="learned")
    assert isinstance(mine.src_pos.table, torch.nn.Parameter)
    assert "src_pos.table" in mine.state_dict() and "src_pos.table" in package.state_dict()
    assert "src_pos.table" not in learner_make_model(20, 20, **SIZES).state_dict()  # sinusoids: a buffer


# ---- the fallback: the package's own code, which has the learner's API ----------------------------------------


@pytest.mark.parametrize("options", [{}, {"norm_first": True, "positional": "learned"}], ids=["default", "variants"])
def test_the_fallback_model_is_the_package_model_with_the_learners_names(learner_make_model, options):
    torch.manual_seed(0)
    package = tc.make_model(20, 20, **SIZES, **options)
    theirs = package_piece("decoder.py", "make_model")(20, 20, **SIZES, **options)  # what a fallback imports
    mine = learner_make_model(20, 20, **SIZES, **options)
    assert list(theirs.state_dict()) == list(mine.state_dict()) == list(package.state_dict())
    copy_weights(package, theirs), copy_weights(package, mine)
    for model in (theirs, mine, package):
        model.eval()
    src_mask, tgt_mask = masks()
    with torch.no_grad():
        expected = package.generator(package(SRC, TGT, src_mask, tgt_mask))
        assert_close(theirs.generator(theirs(SRC, TGT, src_mask, tgt_mask)), expected)
        assert_close(mine.generator(mine(SRC, TGT, src_mask, tgt_mask)), expected)


def test_a_fallback_is_the_package_s_own_piece():
    assert package_piece("decoder.py", "make_model") is tc.make_model
    assert package_piece("multi_head.py", "MultiHeadAttention") is tc.MultiHeadAttention
    assert package_piece("encoder.py", "Encoder") is tc.model.Encoder
    with pytest.raises(ValueError, match="encoder.py holds clones"):
        package_piece("encoder.py", "Decoder")


@pytest.mark.parametrize("file", list(FILES))
def test_a_fallback_file_imports_the_names_of_the_learners_file(tmp_path, file):
    """Each fallback file is a short, readable file that imports the package's pieces of that file."""
    folder = tmp_path / "my_transformer"
    fill_missing_files(file, folder=folder)
    text = (folder / file).read_text(encoding="utf-8")
    assert len(text.splitlines()) < 10 and FALLBACK_MARK in text
    module = importlib.import_module(f"transformer_course.{SOURCES[file]}")
    sys.path.insert(0, str(tmp_path))
    try:
        fallback = importlib.import_module(f"my_transformer.{file[:-3]}")
        assert all(getattr(fallback, name) is getattr(module, name) for name in NAMES[file])
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "my_transformer" or n.startswith("my_transformer.")]:
            del sys.modules[name]


def test_the_fallback_attention_takes_query_key_and_value_apart(tmp_path):
    """The learner's API: forward(query, key, value, mask); three different inputs, as the reference takes them."""
    write_course(tmp_path / "my_transformer")
    reference = sys.modules["my_transformer.multi_head"].MultiHeadAttention(16, 4)
    theirs = copy_weights(reference, package_piece("multi_head.py", "MultiHeadAttention")(16, 4))
    q, k, v = torch.randn(2, 3, 16), torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    mask = torch.tensor([True, True, True, False, False])[None, None, None, :]
    assert_close(theirs(q, k, v, mask), reference(q, k, v, mask))
    assert_close(theirs(q, k, k, mask), reference(q, k, k, mask))  # cross-attention: one memory
    assert_close(theirs(q, q, q), reference(q, q, q))  # self-attention
    assert theirs.weights.shape == (2, 4, 3, 3)  # the weights of the last call, as the learner's keeps them


def test_the_fallback_encoder_has_the_learners_constructor():
    layer = tc.model.EncoderLayer(16, 4, 32, 0.1, norm_first=True)
    encoder = tc.model.Encoder(layer, 3)
    assert len(encoder.layers) == 3 and encoder.layers[0] is not layer and layer.d_model == 16
    assert isinstance(encoder.norm, tc.LayerNorm)  # pre-LN: one more LayerNorm at the end
    assert isinstance(tc.model.Encoder(tc.model.EncoderLayer(16, 4, 32, 0.1), 2).norm, torch.nn.Identity)


# ---- whose code each file is ----------------------------------------------------------------------------------


def test_provenance_names_each_status(tmp_path):
    folder = course_folder(tmp_path)
    write_course(folder, mine=False)  # the reference's text: "reference", however it got there
    (folder / "multi_head.py").write_text(own_code((REFERENCES / "multi_head.py").read_text()))
    (folder / "norm_residual.py").write_text(blank((REFERENCES / "norm_residual.py").read_text()))
    (folder / "embeddings.py").unlink()
    (folder / "encoder.py").write_text(
        "from transformer_course.model import Encoder, EncoderLayer  # the package's, typed by the learner\n"
    )
    (folder / "decoder.py").write_text(
        "import torch.nn.functional as F\n\ndef f(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n"
    )
    fill_missing_files("embeddings.py", folder=folder)
    assert provenance(folder) == {
        "attention.py": "reference",
        "multi_head.py": "yours",
        "norm_residual.py": "blank",
        "embeddings.py": "fallback",
        "encoder.py": "package",
        "decoder.py": "package",
    }
    (folder / "decoder.py").unlink()
    assert provenance(folder)["decoder.py"] == "missing"


@pytest.mark.parametrize(
    "code",
    [
        "from torch import nn\nnorm = nn.LayerNorm(4)\n",
        "import torch\ny = torch.nn.functional.layer_norm\n",
        "from torch.nn.functional import scaled_dot_product_attention\n",
        "import torch.nn as tnn\nlayer = tnn.TransformerEncoderLayer\n",
        "from transformer_course.layers import LayerNorm\n",
        "import transformer_course as tc\n",
    ],
    ids=[
        "nn.LayerNorm",
        "torch.nn.functional.layer_norm",
        "import F.sdpa",
        "nn.TransformerEncoderLayer",
        "package",
        "tc",
    ],
)
def test_a_file_that_calls_an_implementation_is_the_packages(tmp_path, code):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "norm_residual.py").write_text(code)
    assert provenance(folder)["norm_residual.py"] == "package"


def test_describe_provenance_prints_one_line_per_file(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "attention.py").unlink()
    capsys.readouterr()
    found = describe_provenance(folder)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 6 and found["attention.py"] == "missing"
    assert "attention.py" in lines[0] and "missing" in lines[0] and all("yours" in line for line in lines[1:])


# ---- use_reference: on purpose, and said -----------------------------------------------------------------------


def test_use_reference_copies_the_reference_and_says_it_is_not_yours(tmp_path, capsys):
    folder = course_folder(tmp_path)
    write_course(folder)
    (folder / "attention.py").write_text(blank((REFERENCES / "attention.py").read_text()))
    capsys.readouterr()
    use_reference("attention.py", folder=folder)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "the reference" in out[0] and "not yours" in out[0]
    assert (folder / "attention.py").read_text() == (REFERENCES / "attention.py").read_text()
    assert provenance(folder)["attention.py"] == "reference"


def test_use_reference_without_solutions_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a student release: no notebooks/solutions anywhere above
    assert reference_folder(tmp_path / "my_transformer") is None
    with pytest.raises(FileNotFoundError, match="no reference for attention.py here") as error:
        use_reference("attention.py", folder=tmp_path / "my_transformer")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="unknown file"):
        use_reference("attention_v2.py", folder=tmp_path / "my_transformer")


def test_the_zh_folder_finds_the_courses_references(tmp_path):
    course_folder(tmp_path)
    (tmp_path / "notebooks" / "zh").mkdir()
    folder = tmp_path / "notebooks" / "zh" / "my_transformer"
    assert reference_folder(folder) == tmp_path / "notebooks" / "solutions" / "my_transformer"
    use_reference("decoder.py", folder=folder)
    assert provenance(folder)["decoder.py"] == "reference"
    assert not (tmp_path / "notebooks" / "my_transformer").exists()  # the English learner's folder is untouched


# ---- load: the learner's object, or the package's with one line ------------------------------------------------


def test_load_returns_the_learners_object_silently(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    capsys.readouterr()
    attention = load("attention.py", "scaled_dot_product_attention", folder=folder)
    assert attention.__module__ == "my_transformer.attention" and capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "text, says",
    [
        (None, "is not written yet (missing)"),
        ("BLANK", "is not written yet (a stub still raises NotImplementedError)"),
        ("import torch\nundefined_name\n", "fails: NameError"),
        ("class MultiHeadAttention(:\n", "fails: SyntaxError"),
        ("import sys\nsys.exit(3)\n", "fails: SystemExit: 3"),
        ("x = 1\n", "has no MultiHeadAttention"),
    ],
    ids=["missing", "blank", "NameError", "SyntaxError", "SystemExit", "no such name"],
)
def test_load_falls_back_to_the_package_with_one_line(tmp_path, capsys, text, says):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    if text is None:
        (folder / "multi_head.py").unlink()
    else:
        (folder / "multi_head.py").write_text(
            blank((REFERENCES / "multi_head.py").read_text()) if text == "BLANK" else text
        )
    capsys.readouterr()
    found = load("multi_head.py", "MultiHeadAttention", folder=folder)
    assert found is tc.MultiHeadAttention
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and says in out[0] and "multi_head.py" in out[0]
    assert "the package's MultiHeadAttention (a fallback, not yours)" in out[0]


def test_load_names_a_reference_as_not_yours(tmp_path, capsys):
    folder = course_folder(tmp_path)
    write_course(folder, mine=False)
    capsys.readouterr()
    found = load("encoder.py", "Encoder", folder=folder)
    assert found.__module__ == "my_transformer.encoder"
    assert "reference" in capsys.readouterr().out


def test_load_refuses_an_unknown_name():
    with pytest.raises(ValueError, match="attention.py holds scaled_dot_product_attention"):
        load("attention.py", "attention")


# ---- fill_missing_files: a fallback, named, never the reference ------------------------------------------------


def test_fill_missing_files_writes_a_marked_fallback_not_the_reference(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    folder.mkdir()
    (folder / "attention.py").write_text("# my own attention\n", encoding="utf-8")
    written = fill_missing_files("attention.py", "multi_head.py", folder=folder)
    assert written == ["multi_head.py"]
    assert (folder / "attention.py").read_text(encoding="utf-8") == "# my own attention\n"
    text = (folder / "multi_head.py").read_text(encoding="utf-8")
    assert FALLBACK_MARK in text and "from transformer_course.attention import MultiHeadAttention" in text
    assert text != (REFERENCES / "multi_head.py").read_text(encoding="utf-8")
    assert (folder / "__init__.py").exists() and provenance(folder)["multi_head.py"] == "fallback"
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "multi_head.py was missing" in out[0] and "not yours" in out[0]
    assert "03_multi_head_attention.ipynb" in out[0]


def test_fill_missing_files_leaves_a_blank_file_as_it_is(tmp_path):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    scaffold = blank((REFERENCES / "encoder.py").read_text())
    (folder / "encoder.py").write_text(scaffold)
    assert fill_missing_files(folder=folder) == []
    assert (folder / "encoder.py").read_text() == scaffold


def test_fill_missing_files_refuses_an_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="unknown file"):
        fill_missing_files("attention_v2.py", folder=tmp_path / "my_transformer")


def test_the_learners_files_build_on_fallback_files(tmp_path, capsys):
    """Notebook 06 when 02–05 were skipped: the learner's encoder.py over fallbacks of the files it imports."""
    folder = tmp_path / "my_transformer"
    write_course(folder)
    for name in ("attention.py", "multi_head.py", "norm_residual.py", "embeddings.py"):
        (folder / name).unlink()
    fill_missing_files(folder=folder)
    Encoder, EncoderLayer = (
        load("encoder.py", "Encoder", folder=folder),
        load("encoder.py", "EncoderLayer", folder=folder),
    )
    encoder = Encoder(EncoderLayer(16, 4, 32, 0.0), 2).eval()
    package = copy_weights(encoder, tc.make_model(20, 20, **SIZES, dropout=0.0).encoder).eval()
    x = torch.randn(2, 6, 16)
    assert_close(encoder(x, masks()[0]), package(x, masks()[0]))


# ---- the learner's model: built, run, and said whose -----------------------------------------------------------


def test_a_missing_file_gives_one_line_naming_it_and_its_notebook(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "multi_head.py").unlink()
    capsys.readouterr()
    assert load_learner_model(folder) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "multi_head.py" in out[0] and "03_multi_head_attention.ipynb" in out[0]


def test_a_blank_file_gives_one_line_naming_it(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "embeddings.py").write_text(blank((REFERENCES / "embeddings.py").read_text()))
    capsys.readouterr()
    assert load_learner_model(folder) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "embeddings.py is not written yet" in out[0] and "05_embeddings" in out[0]


def test_a_file_that_fails_to_import_gives_one_line_naming_it(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    with open(folder / "norm_residual.py", "a", encoding="utf-8") as file:
        file.write("\nundefined_name_the_learner_typed\n")
    capsys.readouterr()
    assert load_learner_model(folder) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "norm_residual.py" in out[0] and "NameError" in out[0] and "04_layernorm" in out[0]


def test_a_syntax_error_names_its_file_and_line(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "encoder.py").write_text("class EncoderLayer(:\n", encoding="utf-8")
    capsys.readouterr()
    assert load_learner_model(folder) is None
    out = capsys.readouterr().out.strip()
    assert "encoder.py" in out and "SyntaxError" in out and "line 1" in out and "06_encoder" in out


@pytest.mark.parametrize("raised", ["SystemExit(0)", "SystemExit('bye')", "KeyError('x')"])
def test_anything_raised_at_import_becomes_one_line(tmp_path, capsys, raised):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    with open(folder / "decoder.py", "a", encoding="utf-8") as file:
        file.write(f"\nraise {raised}\n")
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, **SIZES)
    assert isinstance(model, tc.Transformer)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 2 and "decoder.py fails" in out[0] and raised.split("(")[0] in out[0]
    assert "the model is the package's" in out[1] and "yours" not in out[0]


@pytest.mark.parametrize("name", ["torch", "json", "numpy"])
def test_a_folder_that_shadows_an_installed_module_is_refused(tmp_path, capsys, name):
    folder = tmp_path / name
    write_course(tmp_path / "my_transformer")
    shutil.copytree(tmp_path / "my_transformer", folder)
    before = sys.modules[name] if name in sys.modules else None
    capsys.readouterr()
    assert load_learner_model(folder) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and f"the folder {name}/ has the name of an installed module" in out[0]
    assert "my_transformer" in out[0]
    assert sys.modules.get(name) is before  # the session's own module is untouched
    assert load("attention.py", "scaled_dot_product_attention", folder=folder) is tc.scaled_dot_product_attention
    assert torch.ones(2).sum().item() == 2.0


def test_the_files_are_read_as_they_are_now(tmp_path):
    folder = tmp_path / "my_transformer"
    first = write_course(folder)
    with open(folder / "decoder.py", "a", encoding="utf-8") as file:
        file.write("\nEDITED = True\n")
    second = load_learner_model(folder)
    assert second is not first and sys.modules[second.__module__].EDITED


def test_learner_or_package_model_builds_the_learners_model_and_says_yours(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, **SIZES)
    assert type(model).__module__ == "my_transformer.decoder"
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 7 and all("yours" in line and "in the model" in line for line in out[:6])
    assert out[6].startswith("the model is yours")


def test_learner_or_package_model_never_says_yours_of_the_reference(tmp_path, capsys):
    folder = course_folder(tmp_path)
    write_course(folder)
    use_reference("multi_head.py", folder=folder)
    use_reference("attention.py", folder=folder)
    capsys.readouterr()
    learner_or_package_model(20, 20, folder=folder, **SIZES)
    out = capsys.readouterr().out.strip().splitlines()
    assert "multi_head.py" in out[1] and "reference" in out[1] and "in the model" in out[1]
    assert out[-1].startswith("the model is partly yours")
    assert "not yours: attention.py (reference), multi_head.py (reference)" in out[-1]


def test_a_model_of_fallback_files_is_not_yours(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    fill_missing_files(folder=folder)
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, **SIZES)
    assert isinstance(model, tc.model.EncoderDecoder)  # the package's, built by the fallback's make_model
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("the model is not yours") and "decoder.py (fallback)" in out[-1]
    assert not any("the model is yours" in line for line in out)


def test_a_learner_decoder_over_fallback_files_names_both(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "encoder.py").unlink()
    fill_missing_files(folder=folder)
    capsys.readouterr()
    learner_or_package_model(20, 20, folder=folder, **SIZES)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("the model is partly yours") and "encoder.py (fallback)" in out[-1]


@pytest.mark.parametrize(
    "body, says",
    [
        ("return None", "returned NoneType, not a model"),
        ("return 42", "returned int, not a model"),
        ("return torch.nn.Linear(2, 2)", "returned Linear, not a model"),
        ("raise SystemExit(1)", "SystemExit"),
    ],
    ids=["None", "an int", "a module without encode", "SystemExit"],
)
def test_a_make_model_that_builds_no_model_is_not_called_yours(tmp_path, capsys, body, says):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    with open(folder / "decoder.py", "a", encoding="utf-8") as file:
        file.write(f"\nimport torch\n\n\ndef make_model(src_vocab, tgt_vocab, **sizes):\n    {body}\n")
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, **SIZES)
    assert isinstance(model, tc.Transformer)
    out = capsys.readouterr().out
    assert says in out and "the model is the package's" in out and "yours:" not in out
    assert "the model is yours" not in out


def test_a_model_that_builds_but_cannot_run_falls_back_with_a_line(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    text = (folder / "embeddings.py").read_text().replace("* math.sqrt(self.d_model)", "@ torch.ones(3, 3)")
    (folder / "embeddings.py").write_text(text)
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, **SIZES)
    assert isinstance(model, tc.Transformer)
    out = capsys.readouterr().out.strip().splitlines()
    assert "fails to build or run" in out[0] and "embeddings.py" in out[0] and "RuntimeError" in out[0]


def test_learner_or_package_model_falls_back_to_the_package_with_a_line(tmp_path, capsys):
    model = learner_or_package_model(20, 20, folder=tmp_path / "my_transformer", **SIZES)
    assert isinstance(model, tc.Transformer)
    out = capsys.readouterr().out
    assert "attention.py is not written yet" in out and "the model is the package's" in out


def test_an_option_the_learner_model_lacks_falls_back_with_a_line(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    text = re.sub(r",?\s*positional=\"sinusoidal\"", "", (folder / "decoder.py").read_text())
    text = text.replace(", positional)", ")")  # a make_model without the positional switch
    (folder / "decoder.py").write_text(text)
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, positional="learned", **SIZES)
    assert isinstance(model, tc.Transformer) and model.config.positional == "learned"
    out = capsys.readouterr().out
    assert "positional" in out and "the model is the package's" in out


def test_building_the_learners_model_leaves_the_rng_as_a_direct_build_does(tmp_path):
    folder = tmp_path / "my_transformer"
    make = write_course(folder)
    torch.manual_seed(3)
    direct = make(20, 20, **SIZES)
    after_direct = torch.rand(1)
    torch.manual_seed(3)
    loaded = learner_or_package_model(20, 20, folder=folder, **SIZES)
    assert torch.equal(torch.rand(1), after_direct)
    for a, b in zip(direct.parameters(), loaded.parameters()):
        assert torch.equal(a, b)


# ---- copy_weights ------------------------------------------------------------------------------------------------


def test_copy_weights_names_the_first_name_that_does_not_fit(learner_make_model):
    mine = learner_make_model(20, 20, **SIZES)
    with pytest.raises(ValueError, match="'encoder.norm.weight' is in the model copied from"):
        copy_weights(tc.make_model(20, 20, **SIZES, norm_first=True), mine)
    with pytest.raises(ValueError, match=r"'src_embed.lut.weight' is \(30, 16\)"):
        copy_weights(tc.make_model(30, 20, **SIZES), mine)
    with pytest.raises(
        ValueError, match="'src_embed.lut.weight' shares its matrix with nothing .* same tie_embeddings"
    ):
        copy_weights(tc.make_model(20, 20, **SIZES), learner_make_model(20, 20, **SIZES, tie_embeddings="all"))


def test_copy_weights_returns_the_model_it_filled(learner_make_model):
    mine, package = pair(learner_make_model)
    assert copy_weights(package, mine) is mine
    for name, tensor in package.state_dict().items():
        assert torch.equal(mine.state_dict()[name], tensor)


# ---- the 中文版: every line above in Chinese after set_language("zh") ---------------------------------------------

SAY = ("t", "lazy_t", "_say")  # the calls that take an English template (learner._say prints t(template))
ENGLISH_WORDS = re.compile(r"[A-Za-z]{2,} +[A-Za-z]{2,}")


def learner_sources() -> dict[str, ast.Module]:
    package = Path(tc.__file__).parent
    return {name: ast.parse((package / f"{name}.py").read_text(encoding="utf-8")) for name in ("learner", "provenance")}


def test_every_line_of_the_learner_has_its_chinese_entry_with_the_same_fields():
    from transformer_course.i18n import load_catalogue, template_fields

    ZH = load_catalogue("learner")

    used = {
        node.args[0].value
        for tree in learner_sources().values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in SAY and node.args
        if isinstance(node.args[0], ast.Constant)
    }
    assert used == set(ZH), (
        f"no Chinese entry: {sorted(used - set(ZH))}; entries no line uses: {sorted(set(ZH) - used)}"
    )
    assert not [en for en, zh in ZH.items() if template_fields(en) != template_fields(zh) or "\n" in zh]


def test_no_printed_line_of_the_learner_skips_t():
    """print() gets t()'s line, or an f-string of names and codes only (the status table), never English words."""
    skipped = []
    for name, tree in learner_sources().items():
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args]
        templates = {id(node.args[0]) for node in calls if getattr(node.func, "id", None) in SAY}
        for node in (node for node in calls if getattr(node.func, "id", None) == "print"):
            texts = [p for p in ast.walk(node.args[0]) if isinstance(p, ast.Constant) and isinstance(p.value, str)]
            if any(ENGLISH_WORDS.search(p.value) for p in texts if id(p) not in templates):
                skipped.append(f"{name}.py:{node.lineno}")
    assert not skipped, f"print() of English text without t(): {skipped}"


@pytest.fixture
def chinese():
    before = tc.get_language()
    tc.set_language("zh")
    yield
    tc.set_language(before)


def test_the_learners_lines_are_chinese_in_the_zh_edition(tmp_path, capsys, chinese):
    folder = course_folder(tmp_path)
    write_course(folder)
    (folder / "multi_head.py").unlink()
    capsys.readouterr()
    assert load("multi_head.py", "MultiHeadAttention", folder=folder) is tc.MultiHeadAttention
    assert capsys.readouterr().out.strip().splitlines() == [
        "my_transformer/multi_head.py 还没有写好（文件不存在）：下面的单元格改用包的 MultiHeadAttention（后备代码，不是你的）；"
        "03_multi_head_attention.ipynb 会写出它"
    ]
    use_reference("multi_head.py", folder=folder)
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith(
        "my_transformer/multi_head.py 现在是来自 notebooks/solutions/my_transformer/ 的参考答案，不是你的"
    )
    describe_provenance(folder)
    table = capsys.readouterr().out
    width = max(map(len, tc.learner.STATUSES))  # the status column
    assert f"{'reference':{width}}  来自 notebooks/solutions/ 的参考答案（不是你的）" in table
    assert f"{'yours':{width}}  你自己的代码" in table
    learner_or_package_model(20, 20, folder=folder, **SIZES)
    said = capsys.readouterr().out.strip().splitlines()
    assert said[-1] == (
        "模型部分是你的：由 my_transformer/decoder.py make_model 搭建；你的：attention.py, norm_residual.py, "
        "embeddings.py, encoder.py, decoder.py；不是你的：multi_head.py (reference)"
    )
    assert not [line for line in said if "not yours" in line or "in the model" in line], said
    tc.set_language("en")
    use_reference("multi_head.py", folder=folder)
    assert "is now the reference from notebooks/solutions/my_transformer/, not yours" in capsys.readouterr().out


# ---- the reference edited is still the reference ------------------------------------------------------------------


def test_the_reference_with_one_comment_more_is_the_reference_edited(tmp_path):
    folder = course_folder(tmp_path)
    write_course(folder)
    (folder / "attention.py").write_text((REFERENCES / "attention.py").read_text() + "# written by me\n")
    assert provenance(folder)["attention.py"] == "reference (edited)"


def test_the_reference_with_renamed_variables_and_no_docstring_is_the_reference_edited(tmp_path):
    folder = course_folder(tmp_path)
    write_course(folder)
    tree = ast.parse((REFERENCES / "multi_head.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in ("F", "nn", "super", "self", "scaled_dot_product_attention"):
            node.id = f"my_{node.id}"
        elif isinstance(node, ast.arg) and node.arg != "self":
            node.arg = f"my_{node.arg}"
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node):
            node.body = node.body[1:]
    (folder / "multi_head.py").write_text(ast.unparse(tree) + "\n")
    assert provenance(folder)["multi_head.py"] == "reference (edited)"


def test_the_packages_own_source_pasted_is_the_reference_edited(tmp_path):
    """A student release has no solutions folder: the package's source (inspect.getsource) is what can be copied."""
    import inspect

    from transformer_course.provenance import file_status

    text = "import math\n\nimport torch\n\n\n" + inspect.getsource(tc.attention.scaled_dot_product_attention)
    (tmp_path / "attention.py").write_text(text)
    assert file_status(tmp_path / "attention.py") == "reference (edited)"


def test_a_different_correct_solution_is_yours(tmp_path):
    """Attention written another way (einsum, a -inf fill and a row guard): the same numbers, the learner's code."""
    folder = course_folder(tmp_path)
    write_course(folder)
    (folder / "attention.py").write_text(
        "import torch\n\n\n"
        "def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):\n"
        "    scores = torch.einsum('...qd,...kd->...qk', query, key) * query.shape[-1] ** -0.5\n"
        "    if mask is not None:\n"
        "        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)\n"
        "    weights = torch.softmax(scores, dim=-1)\n"
        "    if dropout is not None:\n"
        "        weights = dropout(weights)\n"
        "    return torch.matmul(weights, value), weights\n"
    )
    assert provenance(folder)["attention.py"] == "yours"
    mine = load("attention.py", "scaled_dot_product_attention", folder=folder)
    q = torch.randn(2, 3, 4)
    assert_close(mine(q, q, q)[0], tc.scaled_dot_product_attention(q, q, q)[0])


@pytest.mark.parametrize(
    "code",
    [
        "import inspect\nimport transformer_course.attention as a\nexec(inspect.getsource(a.scaled_dot_product_attention))\n",
        "exec(open('../../transformer_course/attention.py').read())\n",
        "import runpy\nglobals().update(runpy.run_path('../solutions/my_transformer/attention.py'))\n",
        "import importlib\nscaled_dot_product_attention = importlib.import_module('transformer' + '_course').attention\n",
    ],
    ids=["exec getsource", "exec open", "runpy", "importlib"],
)
def test_a_file_that_loads_the_packages_or_the_solutions_source_is_the_packages(tmp_path, code):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "attention.py").write_text(code)
    assert provenance(folder)["attention.py"] == "package"


def test_a_file_that_mentions_solutions_in_a_docstring_is_still_yours(tmp_path):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    text = (folder / "attention.py").read_text()
    (folder / "attention.py").write_text('"""My solutions to notebook 02."""\n' + text)
    assert provenance(folder)["attention.py"] == "yours"
