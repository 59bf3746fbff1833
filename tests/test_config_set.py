"""``train --set FIELD=VALUE``: any Config field from the command line, read as its type and validated."""

from dataclasses import fields

import pytest

from transformer_course import cli
from transformer_course.checkpoint import load_checkpoint
from transformer_course.config import Config, get_preset
from transformer_course.overrides import apply_overrides, parse_override


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dropout=0.3", ("dropout", 0.3)),
        ("N=6", ("N", 6)),
        ("norm_first=true", ("norm_first", True)),
        ("shared_vocab=no", ("shared_vocab", False)),
        ("tie_embeddings=decoder", ("tie_embeddings", "decoder")),
        ("clip_norm=none", ("clip_norm", None)),
        ("clip_norm=1.5", ("clip_norm", 1.5)),
        (" lr_factor = 2 ", ("lr_factor", 2.0)),
    ],
)
def test_a_value_is_read_as_its_fields_type(text, expected):
    field, value = parse_override(text)
    assert (field, value) == expected and type(value) is type(expected[1])


def test_every_config_field_can_be_set_to_its_own_default():
    default = Config()
    for f in fields(Config):
        value = getattr(default, f.name)
        text = "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        assert apply_overrides(default, [f"{f.name}={text}"]) == default, f.name


def test_overrides_apply_in_order_and_keep_the_rest_of_the_preset():
    preset = get_preset("multi30k-cpu")
    changed = apply_overrides(preset, ["dropout=0.2", "schedule=budget", "dropout=0.3"])
    assert changed == preset.replace(dropout=0.3, schedule="budget")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dropout", r"--set takes FIELD=VALUE"),
        ("dropuot=0.3", r"no field 'dropuot'; did you mean 'dropout'\?"),
        ("dropout=abc", r"dropout takes a number, got 'abc'"),
        ("N=2.5", r"N takes an integer, got '2.5'"),
        ("norm_first=maybe", r"norm_first takes true or false"),
        ("clip_norm=x", r"clip_norm takes a number or none"),
        ("dropout=1.5", r"--set dropout=1.5: dropout=1.5 is outside \[0, 1\)"),
        ("schedule=cosine", r"schedule must be one of \['noam', 'budget'\]"),
        ("warmup_fraction=1", r"warmup_fraction=1.0 is outside \(0, 1\)"),
        ("h=7", r"d_model=256 is not divisible by h=7"),
    ],
)
def test_a_bad_override_is_one_clear_line(text, message):
    with pytest.raises(ValueError, match=message) as caught:
        apply_overrides(get_preset("multi30k-cpu"), [text])
    assert "\n" not in str(caught.value)


def test_the_command_line_refuses_a_bad_set_in_one_line_before_writing_anything(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", "--preset", "toy-copy", "--set", "dropuot=0.1", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --set dropuot=0.1: Config has no field") and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.slow
def test_the_command_line_trains_with_the_changed_config(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--preset", "toy-copy", "--set", "d_ff=96", "--set", "schedule=budget", "--max-steps", "3"]
    assert cli.main([*argv, "--out", str(out), "--no-progress"]) == 0
    config = load_checkpoint(out / "last.pt").config
    assert config == get_preset("toy-copy").replace(d_ff=96, schedule="budget")
