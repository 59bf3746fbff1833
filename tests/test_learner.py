"""The learner's own model (issue 10): what notebooks 02–07 write into my_transformer/ is the package's model.

The code under test is the notebooks' own ``%%writefile`` cells, written into a temporary folder by
``fill_missing_files`` — there is one copy of that code, in the notebooks, so a notebook and this test cannot
drift apart. The package's model is the independent reference: same weights in, same numbers out.
"""

import json
import sys
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

import transformer_course as tc
from transformer_course.learner import (
    FILES,
    copy_weights,
    fill_missing_files,
    learner_or_package_model,
    load_learner_model,
    writefile_cells,
)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SIZES = dict(N=2, d_model=16, d_ff=32, h=4)
SRC = torch.tensor([[5, 6, 7, 8, 9, 10], [5, 6, 7, 0, 0, 0]])  # (2, 6), the second sentence padded
TGT = torch.tensor([[2, 11, 12, 13, 14], [2, 11, 12, 0, 0]])  # (2, 5), starting with <s>


def masks():
    return tc.padding_mask(SRC, 0), tc.target_mask(TGT, 0)


def write_course(folder):
    """Write the six files from the notebooks' %%writefile cells into ``folder``; return the learner's make_model."""
    assert fill_missing_files(folder=folder, notebooks=NOTEBOOKS) == list(FILES)
    make = load_learner_model(folder)
    assert make is not None, "the files the notebooks write did not import"
    return make


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


# ---- the model they make -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [{}, {"norm_first": True}, {"tie_embeddings": "all"}, {"tie_embeddings": "none"}, {"dropout": 0.0, "max_len": 64}],
    ids=["paper default", "pre-LN", "all tied", "untied", "no dropout, max_len 64"],
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


# ---- what the learner sees when something is missing or broken ----------------------------------------


def test_a_missing_file_gives_one_line_naming_it_and_its_notebook(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    (folder / "multi_head.py").unlink()
    capsys.readouterr()
    assert load_learner_model(folder) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "multi_head.py" in out[0] and "03_multi_head_attention.ipynb" in out[0]


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


def test_the_files_are_read_as_they_are_now(tmp_path):
    folder = tmp_path / "my_transformer"
    first = write_course(folder)
    with open(folder / "decoder.py", "a", encoding="utf-8") as file:
        file.write("\nEDITED = True\n")
    second = load_learner_model(folder)
    assert second is not first and sys.modules[second.__module__].EDITED


def test_learner_or_package_model_builds_the_learners_model(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, **SIZES)
    assert type(model).__name__ == "EncoderDecoder" and "the model is yours" in capsys.readouterr().out


def test_learner_or_package_model_falls_back_to_the_package_with_a_line(tmp_path, capsys):
    model = learner_or_package_model(20, 20, folder=tmp_path / "my_transformer", **SIZES)
    assert isinstance(model, tc.Transformer)
    out = capsys.readouterr().out
    assert "attention.py is missing" in out and "the model is the package's" in out


def test_an_option_the_learner_model_lacks_falls_back_with_a_line(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    write_course(folder)
    capsys.readouterr()
    model = learner_or_package_model(20, 20, folder=folder, positional="learned", **SIZES)
    assert isinstance(model, tc.Transformer) and model.config.positional == "learned"
    out = capsys.readouterr().out
    assert "positional" in out and "the model is the package's" in out


# ---- copy_weights and fill_missing_files ----------------------------------------------------------------


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


def test_fill_missing_files_writes_only_what_is_missing_and_says_so(tmp_path, capsys):
    folder = tmp_path / "my_transformer"
    folder.mkdir()
    (folder / "attention.py").write_text("# my own attention\n", encoding="utf-8")
    written = fill_missing_files("attention.py", "multi_head.py", folder=folder, notebooks=NOTEBOOKS)
    assert written == ["multi_head.py"]
    assert (folder / "attention.py").read_text(encoding="utf-8") == "# my own attention\n"
    assert (folder / "__init__.py").exists()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "multi_head.py was missing" in out[0] and "03_multi_head_attention.ipynb" in out[0]


def test_fill_missing_files_refuses_an_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="unknown file"):
        fill_missing_files("attention_v2.py", folder=tmp_path / "my_transformer", notebooks=NOTEBOOKS)


def test_fill_missing_files_says_where_the_notebooks_should_be(tmp_path):
    with pytest.raises(FileNotFoundError, match="02_attention.ipynb"):
        fill_missing_files("attention.py", folder=tmp_path / "my_transformer", notebooks=tmp_path)


# ---- the 中文版: the same cells run in notebooks/zh/, with the learner's own notebooks/zh/my_transformer/ ---------


def zh_course(tmp_path, zh_edit=None):
    """A course folder in tmp_path (the package's folder, notebooks/02_attention.ipynb, notebooks/zh/), and the
    zh learner's folder notebooks/zh/my_transformer. With ``zh_edit``, notebooks/zh/02_attention.ipynb too: the
    English one with its %%writefile cell passed through ``zh_edit``."""
    (tmp_path / "transformer_course").mkdir()
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    english = (NOTEBOOKS / "02_attention.ipynb").read_text(encoding="utf-8")
    (tmp_path / "notebooks" / "02_attention.ipynb").write_text(english, encoding="utf-8")
    if zh_edit is not None:
        notebook = json.loads(english)
        for cell in notebook["cells"]:
            if "".join(cell["source"]).startswith("%%writefile my_transformer/attention.py"):
                cell["source"] = zh_edit("".join(cell["source"]))
        (tmp_path / "notebooks" / "zh" / "02_attention.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    return tmp_path / "notebooks" / "zh" / "my_transformer"


def test_fill_missing_files_in_notebooks_zh_writes_from_the_zh_notebook_beside_it(tmp_path):
    folder = zh_course(tmp_path, zh_edit=lambda source: source.replace("\n", "\n# 中文版\n", 1))
    assert fill_missing_files("attention.py", folder=folder) == ["attention.py"]
    assert (folder / "attention.py").read_text(encoding="utf-8").startswith("# 中文版\n")
    assert not (tmp_path / "notebooks" / "my_transformer").exists()  # the English learner's folder is untouched


def test_fill_missing_files_in_notebooks_zh_falls_back_to_the_english_notebook(tmp_path, capsys):
    folder = zh_course(tmp_path)  # no notebooks/zh/02_attention.ipynb
    assert fill_missing_files("attention.py", folder=folder) == ["attention.py"]
    written = (folder / "attention.py").read_text(encoding="utf-8")
    assert written == writefile_cells(NOTEBOOKS / "02_attention.ipynb")["attention.py"]
    assert "attention.py was missing" in capsys.readouterr().out
