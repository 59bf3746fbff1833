"""The training loop: loss, schedule, optimizer, accumulation, clipping, history, NaN stop, toy model."""

import json
import re
import warnings

import pytest
import torch
import torch.nn.functional as F

from transformer_course import train, viz
from transformer_course.config import get_preset
from transformer_course.data import PAD, collate, toy_pairs
from transformer_course.train import (
    LabelSmoothingLoss,
    RunOptions,
    TrainingDiverged,
    fit,
    history,
    learning_rate,
    load_checkpoint,
    loop,
    make_optimizer,
    make_scheduler,
    noam_rate,
    toy_data,
    train_toy_model,
)

TOY = get_preset("toy-copy")


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def sgd(model):
    """Plain SGD: an update is proportional to the gradient (Adam's m/√v turns rounding noise in near-zero
    gradients into full-size steps), so comparing two runs' weights compares their gradients."""
    return torch.optim.SGD(model.parameters(), lr=1.0)


def logits_and_target_with_padding():
    logits = torch.randn(3, 5, 11)  # (B, T, V)
    target = torch.randint(4, 11, (3, 5))  # (B, T)
    target[0, 3:] = PAD
    target[2, 1:] = PAD
    return logits, target


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothing_mean_equals_pytorch_cross_entropy(smoothing):
    logits, target = logits_and_target_with_padding()
    expected = F.cross_entropy(logits.view(-1, 11), target.view(-1), label_smoothing=smoothing, ignore_index=PAD)
    torch.testing.assert_close(LabelSmoothingLoss(smoothing, PAD)(logits, target), expected)


def test_label_smoothing_sum_equals_pytorch_cross_entropy_sum():
    logits, target = logits_and_target_with_padding()
    expected = F.cross_entropy(
        logits.view(-1, 11), target.view(-1), label_smoothing=0.1, ignore_index=PAD, reduction="sum"
    )
    torch.testing.assert_close(LabelSmoothingLoss(0.1, PAD, reduction="sum")(logits, target), expected)


def test_label_smoothing_gives_padding_no_gradient():
    logits, target = logits_and_target_with_padding()
    logits.requires_grad_(True)
    LabelSmoothingLoss(0.1, PAD, reduction="sum")(logits, target).backward()
    assert logits.grad[target == PAD].abs().sum() == 0
    assert logits.grad[target != PAD].abs().sum() > 0


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothing_gradient_equals_autograd_of_pytorch_cross_entropy(smoothing, reduction, fused):
    """The loss's hand-written backward pass (softmax − (1 − ε)·onehot − ε/V) against autograd through
    F.cross_entropy, in float64, for every reduction, with padding and a 3-D batch."""
    logits, target = logits_and_target_with_padding()
    ours = logits.double().requires_grad_(True)
    ref = logits.double().requires_grad_(True)
    weights = torch.rand(3, 5, dtype=torch.float64)  # a non-uniform upstream gradient for reduction="none"
    expected = F.cross_entropy(
        ref.view(-1, 11), target.view(-1), label_smoothing=smoothing, ignore_index=PAD, reduction=reduction
    )
    got = LabelSmoothingLoss(smoothing, PAD, reduction=reduction, fused=fused)(ours, target)
    if reduction == "none":
        torch.testing.assert_close(got, expected.view(3, 5))
        (got * weights).sum().backward()
        (expected.view(3, 5) * weights).sum().backward()
    else:
        got.backward()
        expected.backward()
    torch.testing.assert_close(ours.grad, ref.grad)


def test_label_smoothing_passes_gradcheck():
    logits, target = logits_and_target_with_padding()
    loss = LabelSmoothingLoss(0.2, PAD, reduction="sum", fused=True)
    assert torch.autograd.gradcheck(lambda x: loss(x, target), (logits.double().requires_grad_(True),))


def test_label_smoothing_backward_can_run_twice_with_retain_graph():
    logits, target = logits_and_target_with_padding()
    logits.requires_grad_(True)
    value = LabelSmoothingLoss(0.1, PAD, reduction="sum", fused=True)(logits, target)
    value.backward(retain_graph=True)
    first = logits.grad.clone()
    value.backward()  # the saved log-probabilities are intact: twice the gradient
    torch.testing.assert_close(logits.grad, 2 * first)


def test_label_smoothing_rejects_a_probability_outside_0_1():
    with pytest.raises(ValueError, match="label smoothing must be in"):
        LabelSmoothingLoss(1.5)


def test_noam_rate_matches_the_paper_formula_at_known_steps():
    d_model, warmup = 512, 4000
    for step in (1, 100, 3999, 4000, 4001, 100_000):
        expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert noam_rate(step, d_model, warmup) == pytest.approx(expected)
    # the peak lies at step = warmup: (d_model · warmup)^-0.5
    assert noam_rate(4000, 512, 4000) == pytest.approx((512 * 4000) ** -0.5)
    assert noam_rate(4000, 512, 4000) > max(noam_rate(3999, 512, 4000), noam_rate(4001, 512, 4000))


def test_scheduler_gives_the_optimizer_the_noam_rate_of_each_update():
    config = get_preset("multi30k-cpu-words")  # d_model 256, warmup 150, lr_factor 0.2: peak ≈ 1e-3
    model = torch.nn.Linear(2, 2)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer, config)
    seen = []
    for _ in range(300):
        seen.append(optimizer.param_groups[0]["lr"])  # the rate the next update uses
        optimizer.step()
        scheduler.step()
    for k in (1, 2, 150, 151, 300):  # k-th update (from 1)
        expected = 0.2 * 256**-0.5 * min(k**-0.5, k * 150**-1.5)
        assert seen[k - 1] == pytest.approx(expected)
    assert max(seen) == pytest.approx(1.02e-3, rel=0.01)
    assert seen == [learning_rate(k, config) for k in range(1, 301)]  # the one function, exactly


def test_learning_rate_is_the_papers_formula_for_a_noam_config():
    config = get_preset("multi30k-cpu-words")
    for step in (1, 149, 150, 151, 10_000):
        expected = config.lr_factor * config.d_model**-0.5 * min(step**-0.5, step * config.warmup**-1.5)
        assert learning_rate(step, config) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="counts steps from 1"):
        learning_rate(0, config)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(max_steps=0), "max_steps must be a positive whole number"),
        (dict(epochs=2.5), "epochs must be a positive whole number"),
        (dict(log_every=0), "log_every must be a positive whole number"),
        (dict(save_every=True), "save_every must be a positive whole number"),
        (dict(max_minutes=float("nan")), "max_minutes must be a finite number of minutes"),
        (dict(budget_minutes=-1), "budget_minutes must be a finite number of minutes"),
        (dict(resume=True), "resume=True needs the out_dir of the run to resume"),
        (dict(out_dir="runs/x", resume="yes"), "resume must be False, True or 'adopt'"),
        (dict(progress="no"), "progress must be True or False"),
        (dict(autocast="bf16"), "autocast must be None"),
    ],
)
def test_run_options_refuse_a_bad_setting_in_one_line_naming_it(options, message):
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        RunOptions(**options)
    assert "\n" not in str(err.value)


def test_fit_given_a_folder_where_its_options_go_says_how_to_write_the_call(tmp_path):
    with pytest.raises(
        TypeError,
        match=r"fit's third argument is a RunOptions, got \w*Path; write fit\(config, data, RunOptions\(out_dir=",
    ):
        fit(TOY, toy_data(n_train=32, batch_size=32), tmp_path)
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_the_model_config_holds_the_architecture_and_the_run_options_stay_on_config():
    from dataclasses import fields

    from transformer_course.config import Config
    from transformer_course.model import ModelConfig

    run_only = {"fast_dropout", "fused_loss"}  # how a step is computed, not what the model is
    assert not run_only & {f.name for f in fields(ModelConfig)}
    assert run_only <= {f.name for f in fields(Config)}


def test_optimizer_is_adam_with_the_papers_betas_and_epsilon():
    optimizer = make_optimizer(torch.nn.Linear(2, 2))
    assert isinstance(optimizer, torch.optim.Adam)
    assert optimizer.defaults["betas"] == (0.9, 0.98) and optimizer.defaults["eps"] == 1e-9


def test_gradient_accumulation_of_two_halves_equals_one_full_batch():
    # Fixed-length sequences, so both halves hold as many tokens; SGD, so the weights compare the gradients.
    full = fit(
        TOY,
        toy_data(min_len=6, max_len=6, batch_size=32, n_train=320),
        RunOptions(max_steps=4, progress=False),
        optimizer_factory=sgd,
    )
    halves = fit(
        TOY.replace(accumulate=2),
        toy_data(min_len=6, max_len=6, batch_size=16, n_train=320),
        RunOptions(max_steps=4, progress=False),
        optimizer_factory=sgd,
    )
    assert full.step == halves.step == 4
    for a, b in zip(full.model.state_dict().values(), halves.model.state_dict().values()):
        torch.testing.assert_close(a, b)


def test_clipping_limits_the_gradient_norm_of_each_update():
    model = torch.nn.Linear(3, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0)
    before = [p.detach().clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)
    train.optimizer_step(model, optimizer, scheduler, clip_norm=0.5)
    change = torch.cat([(b - p.detach()).flatten() for b, p in zip(before, model.parameters())])
    assert change.norm().item() == pytest.approx(0.5, rel=1e-4)  # SGD with lr 1: the step is the clipped gradient


@pytest.mark.slow
def test_fit_writes_history_json_csv_and_loss_plot(tmp_path):
    fit(TOY, toy_data(n_train=320, batch_size=32), RunOptions(tmp_path, epochs=2, log_every=5, progress=False))
    history = json.loads((tmp_path / "history.json").read_text())
    val_rows = [h for h in history if h["val_loss"] is not None]
    train_rows = [h for h in history if h["loss"] is not None]
    assert [h["epoch"] for h in val_rows] == [1, 2]
    assert len(train_rows) == 2 * 10 // 5 and all(h["tokens_per_s"] > 0 and h["lr"] > 0 for h in train_rows)
    assert (tmp_path / "history.csv").read_text().splitlines()[
        0
    ] == "step,epoch,loss,lr,tokens_per_s,val_loss,elapsed_s"
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == ["best.pt", "epoch-001.pt", "epoch-002.pt", "last.pt"]


# The loss plot's words: English as always (fit's loss.png), Chinese in the 中文版 through viz.loss_plot_labels() ---

LOSS_HISTORY = [
    {"step": 5, "loss": 3.2, "val_loss": None},
    {"step": 10, "loss": 2.7, "val_loss": None},
    {"step": 10, "loss": None, "val_loss": 2.9},
]
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")  # Han characters and full-width punctuation


def zh_figure(rows, name, parameters):
    """The loss plot in the course's language, as a 中文版 notebook draws it."""
    labels = viz.loss_plot_labels()
    return history.history_figure(rows, history.history_title(name, parameters, labels), labels)


def plot_words(fig) -> dict:
    ax = fig.axes[0]
    return {
        "x": ax.get_xlabel(),
        "y": ax.get_ylabel(),
        "title": ax.get_title(),
        "legend": [text.get_text() for text in ax.get_legend().get_texts()],
    }


def boxes_drawn(fig) -> list[str]:
    """matplotlib's "Glyph … missing from font(s)" warnings while drawing ``fig``: one per box ("tofu")."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FigureCanvasAgg(fig).draw()
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


@pytest.fixture
def course_language():
    """matplotlib's settings, the font choice and the language as they were, after the test."""
    import matplotlib

    from transformer_course.i18n import get_language, set_language
    from transformer_course.viz import fonts

    before = get_language()
    fonts.forget_font()
    try:
        with matplotlib.rc_context():
            yield set_language
    finally:
        set_language(before)
        fonts.forget_font()


def test_the_loss_plot_speaks_english_as_before(course_language, capsys):
    import matplotlib

    course_language("en")
    settings = dict(matplotlib.rcParams)
    for fig in (
        history.history_figure(LOSS_HISTORY, history.history_title("toy-copy", 12345)),  # what fit draws
        zh_figure(LOSS_HISTORY, "toy-copy", 12345),  # the course's language, English
    ):
        assert plot_words(fig) == {
            "x": "optimizer step",
            "y": "loss",
            "title": "toy-copy: 12,345 parameters",
            "legend": ["train (label-smoothed, per token)", "validation (label-smoothed, per token)"],
        }
    assert dict(matplotlib.rcParams) == settings and capsys.readouterr().err == ""  # no font looked for


def test_the_chinese_loss_plot_speaks_chinese_in_the_cjk_font(course_language, tmp_path):
    import matplotlib

    from transformer_course.viz import fonts

    family = fonts.find_cjk_font()
    if family is None:
        pytest.skip("no CJK font installed (Debian/Ubuntu: apt-get install fonts-noto-cjk)")
    course_language("zh")
    fonts.chinese_font()  # chosen, then matplotlib's font list reset: the figure still names its font itself
    matplotlib.rcParams["font.sans-serif"] = ["DejaVu Sans"]
    fig = zh_figure(LOSS_HISTORY, "toy-copy", 12345)
    assert plot_words(fig) == {
        "x": "优化器步数",
        "y": "损失",
        "title": "toy-copy：12,345 个参数",
        "legend": ["训练（标签平滑，每个词元）", "验证（标签平滑，每个词元）"],
    }
    ax = fig.axes[0]
    for text in [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.get_legend().get_texts()]:
        assert text.get_fontfamily()[0] == family, text.get_text()
    assert boxes_drawn(fig) == []
    png = history.plot_history(LOSS_HISTORY, tmp_path / "loss.png", "toy-copy", viz.loss_plot_labels())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_a_cjk_font_the_chinese_loss_plot_stays_english_and_warns_once(course_language, monkeypatch, capsys):
    from transformer_course.viz import fonts

    monkeypatch.setattr(fonts, "find_cjk_font", lambda fonts=None: None)  # this machine has no CJK font
    course_language("zh")
    first = zh_figure(LOSS_HISTORY, "toy-copy", 12345)
    second = history.history_figure(LOSS_HISTORY, labels=viz.loss_plot_labels())
    assert plot_words(first)["x"] == "optimizer step" and plot_words(first)["title"] == "toy-copy: 12,345 parameters"
    assert not CJK.search(str([plot_words(first), plot_words(second)]))
    assert boxes_drawn(first) == []
    err = capsys.readouterr().err
    assert err.count(fonts.NO_FONT_WARNING) == 1 and err.count("\n") == 1  # one line, the first time only


def test_nan_loss_stops_with_a_clear_message_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    real = loop.loss_on_batch
    calls = {"n": 0}

    def loss_that_breaks_at_call_5(*args):
        calls["n"] += 1
        loss = real(*args)
        return loss * float("nan") if calls["n"] == 5 else loss

    monkeypatch.setattr(loop, "loss_on_batch", loss_that_breaks_at_call_5)  # the name fit calls
    with pytest.raises(TrainingDiverged, match=r"loss became nan at step 5.*last good checkpoint.*last\.pt"):
        fit(TOY, toy_data(n_train=640, batch_size=32), RunOptions(tmp_path, save_every=2, progress=False))
    checkpoint = load_checkpoint(tmp_path / "last.pt")
    assert checkpoint.step == 4
    assert all(torch.isfinite(p).all() for p in checkpoint.model.parameters())


def test_max_minutes_stops_the_run_and_says_why():
    result = fit(TOY, toy_data(n_train=640, batch_size=32), RunOptions(max_minutes=0, progress=False))
    assert result.stopped_by == "max_minutes" and result.step == 1


@pytest.mark.slow
def test_train_toy_model_learns_to_copy():
    model = train_toy_model("copy", seed=1)
    batch = collate(toy_pairs("copy", 200, 14, 4, 10, seed=123))  # sequences it has not seen
    with torch.no_grad():
        predicted = model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)).argmax(-1)
    real = batch.tgt_out != PAD
    accuracy = ((predicted == batch.tgt_out) & real).sum() / real.sum()
    assert not model.training
    assert accuracy > 0.95


def test_train_toy_model_rejects_an_unknown_task():
    with pytest.raises(ValueError, match="'copy' or 'reverse'"):
        train_toy_model("sort")


def test_accumulation_groups_hold_accumulate_micro_batches_and_the_last_holds_the_rest():
    assert [len(g) for g in train.accumulation_groups(range(7), 3)] == [3, 3, 1]
    assert [g for g in train.accumulation_groups(range(6), 3)] == [[0, 1, 2], [3, 4, 5]]
    assert list(train.accumulation_groups([], 3)) == []


def per_token_loss(model, batch, loss_fn):
    logits = model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask))  # (B, T, V)
    return loss_fn(logits, batch.tgt_out) / batch.n_tokens


def test_a_short_last_accumulation_group_steps_with_the_mean_over_its_own_micro_batches():
    # 4 batches with accumulate=3: groups of 3 and 1. The second update follows the gradient of the one
    # batch's loss per token, not a third of it.
    data = toy_data(n_train=4 * 16, batch_size=16)
    config = TOY.replace(accumulate=3)
    after = []
    fit(
        config,
        data,
        RunOptions(epochs=1, progress=False),
        optimizer_factory=sgd,
        after_step=lambda s, m: after.append({k: v.clone() for k, v in m.state_dict().items()}),
    )
    assert len(after) == 2

    torch.manual_seed(config.seed)
    model = train.build_model(config, len(data.src_vocab), len(data.tgt_vocab))
    optimizer = sgd(model)
    scheduler = make_scheduler(optimizer, config)
    loss_fn = LabelSmoothingLoss(config.label_smoothing, PAD, reduction="sum")
    batches = list(data.train_batches(0))
    for group, fitted in zip((batches[:3], batches[3:]), after):
        sum(per_token_loss(model, b, loss_fn) for b in group).div(len(group)).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        for name, value in model.state_dict().items():
            torch.testing.assert_close(fitted[name], value)


def test_a_training_step_under_cpu_bfloat16_autocast_follows_the_float32_step():
    # The GPU path (bf16 autocast) rehearsed on the CPU through fit's own step: the same first loss to
    # bf16 precision (8 bits of mantissa: relative error ~ 2^-8 per operation) and the same update direction.
    data = lambda: toy_data(n_train=32, batch_size=32)  # noqa: E731
    run = dict(max_steps=1, log_every=1, device="cpu", progress=False)
    float32 = fit(TOY, data(), RunOptions(autocast=False, **run), optimizer_factory=sgd)
    bfloat16 = fit(TOY, data(), RunOptions(autocast=True, **run), optimizer_factory=sgd)
    assert bfloat16.history[0]["loss"] != float32.history[0]["loss"]  # autocast was on: not the same numbers
    torch.testing.assert_close(bfloat16.history[0]["loss"], float32.history[0]["loss"], rtol=2e-2, atol=0)

    torch.manual_seed(TOY.seed)
    start = train.build_model(TOY, 14, 14)  # fit's initial weights (same seed)
    change = {
        name: torch.cat([(m.state_dict()[k] - start.state_dict()[k]).flatten() for k in start.state_dict()])
        for name, m in (("float32", float32.model), ("bfloat16", bfloat16.model))
    }
    cosine = F.cosine_similarity(change["float32"], change["bfloat16"], dim=0)
    assert cosine > 0.99


def test_loss_on_batch_with_autocast_runs_the_model_in_bfloat16_on_the_cpu():
    model = train.build_model(TOY, 14, 14)
    batch = next(toy_data(n_train=32, batch_size=32).train_batches(0))
    dtypes = []
    model.generator.register_forward_hook(lambda module, args, output: dtypes.append(output.dtype))
    loss_fn = LabelSmoothingLoss(TOY.label_smoothing, PAD, reduction="sum")
    mixed, full = train.loss_on_batch(model, batch, loss_fn, autocast=True), train.loss_on_batch(model, batch, loss_fn)
    assert dtypes == [torch.bfloat16, torch.float32]
    assert mixed.dtype == torch.float32  # the loss itself is computed in float32
    torch.testing.assert_close(mixed, full, rtol=2e-2, atol=0)


@pytest.mark.slow
def test_a_compiled_training_step_gives_the_eager_loss_and_update():
    # torch.compile (what --compile does on a GPU) on a tiny model: the code the GPU takes runs here first.
    data = lambda: toy_data(n_train=32, batch_size=32)  # noqa: E731
    run = dict(max_steps=1, log_every=1, device="cpu", progress=False)
    eager = fit(TOY, data(), RunOptions(**run), optimizer_factory=sgd)
    compiled = fit(TOY, data(), RunOptions(compile=True, **run), optimizer_factory=sgd)
    # Fused kernels add in another order: float32 rounding differences only.
    torch.testing.assert_close(compiled.history[0]["loss"], eager.history[0]["loss"], rtol=1e-5, atol=0)
    for name, value in eager.model.state_dict().items():
        torch.testing.assert_close(compiled.model.state_dict()[name], value, rtol=1e-4, atol=1e-6)


def test_fit_leaves_autograd_threads_and_the_matplotlib_backend_as_it_found_them(tmp_path):
    import matplotlib
    import matplotlib.pyplot as plt

    backend = matplotlib.get_backend()
    matplotlib.use("svg")  # a backend a notebook might have chosen (inline is not available here)
    figures = plt.get_fignums()  # figures earlier tests left open are not fit's
    try:
        torch.set_num_threads(1)
        fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, epochs=1, progress=False))
        assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert matplotlib.get_backend() == "svg" and plt.get_fignums() == figures  # no backend switch, no new figure
        assert torch.is_grad_enabled() and torch.get_num_threads() == 1
    finally:
        matplotlib.use(backend)


def test_train_toy_model_puts_the_callers_thread_count_back_even_when_training_fails(monkeypatch):
    torch.set_num_threads(2)
    train_toy_model("copy", steps=2)
    assert torch.get_num_threads() == 2

    def broken_fit(*args, **kwargs):
        assert torch.get_num_threads() == 1  # tiny matrices: one thread inside
        raise RuntimeError("broken")

    monkeypatch.setattr(train.toy, "fit", broken_fit)
    with pytest.raises(RuntimeError, match="broken"):
        train_toy_model("copy", steps=2)
    assert torch.get_num_threads() == 2
