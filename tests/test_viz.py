"""Attention capture, head statistics, chart data, saved charts and translate-and-capture (transformer_course.viz).

The offline HTML edition that exports notebooks holding these charts is tested in test_edition.py."""

import ast
import inspect
import json
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from transformer_course import make_model, padding_mask, subsequent_mask, translate, viz
from transformer_course.checkpoint import save_checkpoint
from transformer_course.data import PAD, SPECIALS, Vocab, collate, toy_pairs


@pytest.fixture(autouse=True)
def _mpl_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path_factory.getbasetemp() / "mpl"))


def small_model(dropout=0.1):
    return make_model(12, 12, N=2, d_model=32, d_ff=64, h=4, dropout=dropout)


def manual_attention(module, query, memory, mask):
    """softmax(Q Kᵀ / √d_k) per head, from the module's weights, written out independently: (B, h, q, k)."""
    d, h = module.d_model, module.heads
    w, b = module.in_proj.weight, module.in_proj.bias
    source = query if memory is None else memory
    q = query @ w[:d].T + b[:d]  # (B, q, d_model)
    k = source @ w[d : 2 * d].T + b[d : 2 * d]  # (B, k, d_model)
    q = q.view(q.size(0), q.size(1), h, d // h).transpose(1, 2)  # (B, h, q, d_k)
    k = k.view(k.size(0), k.size(1), h, d // h).transpose(1, 2)  # (B, h, k, d_k)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)  # (B, h, q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(-1)


# ---------------------------------------------------------------------------------------------------------
# Capture
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_capture_shapes_per_kind_and_layer():
    model = small_model()
    capture = viz.capture_attention(model, [4, 5, 6, 7, 8], [9, 10, 11])  # S = 5, T = 3 + <s>
    assert capture.layers == 2 and capture.heads == 4
    assert [tuple(w.shape) for w in capture.encoder] == [(4, 5, 5)] * 2
    assert [tuple(w.shape) for w in capture.decoder] == [(4, 4, 4)] * 2
    assert [tuple(w.shape) for w in capture.cross] == [(4, 4, 5)] * 2
    assert capture.src_tokens == ["4", "5", "6", "7", "8"]
    assert capture.tgt_tokens == ["<s>", "9", "10", "11"]


@pytest.mark.slow
def test_rows_sum_to_one_over_allowed_keys_and_zero_on_masked_keys():
    model = small_model()
    capture = viz.capture_attention(model, [4, 5, 6, PAD, PAD], [7, 8, 9, 10])  # two padded source positions
    real = torch.tensor([True, True, True, False, False])  # source keys that may be attended
    causal = torch.ones(5, 5, dtype=torch.bool).tril()  # decoder key j ≤ query i
    for layer in range(2):
        for w, allowed in [
            (capture.encoder[layer], real.expand(5, 5)),
            (capture.cross[layer], real.expand(5, 5)),
            (capture.decoder[layer], causal),
        ]:
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:2]))
            assert torch.all(w[:, ~allowed] == 0)
            assert torch.all(w[:, allowed] > 0)


@pytest.mark.slow
def test_captured_weights_equal_the_written_out_formula():
    model = small_model(dropout=0.3).eval()
    src, tgt = torch.tensor([[4, 5, 6, 7, PAD]]), torch.tensor([[2, 8, 9, 10]])
    inputs = {}

    def keep_inputs(name):
        def hook(module, args, kwargs):  # forward(query, key=None, value=None, mask=None, cache=None)
            call = inspect.signature(module.forward).bind(*args, **kwargs).arguments
            query, key = call["query"], call.get("key")
            inputs[name] = (query, None if key is None or key is query else key, call.get("mask"))

        return hook

    handles = []
    for i, layer in enumerate(model.encoder.layers):
        handles.append(layer.self_attn.register_forward_pre_hook(keep_inputs(("encoder", i)), with_kwargs=True))
    for i, layer in enumerate(model.decoder.layers):
        handles.append(layer.self_attn.register_forward_pre_hook(keep_inputs(("decoder", i)), with_kwargs=True))
        handles.append(layer.cross_attn.register_forward_pre_hook(keep_inputs(("cross", i)), with_kwargs=True))
    with torch.no_grad():  # the ordinary fast path, inputs recorded
        src_mask = src != PAD  # (1, S)
        tgt_mask = torch.ones(4, 4, dtype=torch.bool).tril()  # (T, T)
        model(src, tgt, src_mask[:, None, None, :], tgt_mask[None, None])
    for h in handles:
        h.remove()
    model.train()  # capture must switch dropout off itself
    capture = viz.capture_attention(model, src[0], tgt[0])
    for (kind, layer), (query, memory, mask) in inputs.items():
        module = (
            model.encoder.layers[layer].self_attn
            if kind == "encoder"
            else getattr(model.decoder.layers[layer], "self_attn" if kind == "decoder" else "cross_attn")
        )
        with torch.no_grad():
            expected = manual_attention(module, query, memory, mask)[0]  # (h, q, k)
        torch.testing.assert_close(getattr(capture, kind)[layer], expected)


@pytest.mark.slow
def test_capture_restores_the_fast_path_and_the_train_mode():
    model = small_model().train()
    viz.capture_attention(model, [4, 5, 6], [7, 8])
    assert model.training
    assert all(not m.keep_weights and m.weights is None for m in model.attention_modules())
    src, tgt = torch.tensor([[4, 5, 6]]), torch.tensor([[2, 7, 8]])
    model(src, tgt, padding_mask(src, PAD), subsequent_mask(3))
    assert all(m.weights is None for m in model.attention_modules())  # nothing kept outside a capture


@pytest.mark.slow
def test_capture_takes_token_strings_with_their_vocabulary():
    vocab = Vocab(SPECIALS + list("abcdefgh"))  # a → 4, b → 5, …
    model = small_model()
    by_words = viz.capture_attention(model, ["a", "b", "c"], ["d", "e"], vocab, vocab)
    by_ids = viz.capture_attention(model, [4, 5, 6], [7, 8], vocab, vocab)
    assert by_words.src_tokens == by_ids.src_tokens == ["a", "b", "c"]
    assert by_words.tgt_tokens == by_ids.tgt_tokens == ["<s>", "d", "e"]
    for kind in viz.KINDS:
        for a, b in zip(getattr(by_words, kind), getattr(by_ids, kind)):
            torch.testing.assert_close(a, b)


@pytest.mark.slow
def test_capture_bad_input_says_what_to_change():
    model = small_model()
    with pytest.raises(ValueError, match="pass its vocabulary"):
        viz.capture_attention(model, ["ein", "Hund"], [4, 5])
    with pytest.raises(ValueError, match="is empty"):
        viz.capture_attention(model, [], [4, 5])
    with pytest.raises(ValueError, match="one sentence"):
        viz.capture_attention(model, torch.tensor([[4, 5]]), [4, 5])
    capture = viz.capture_attention(model, [4, 5], [6])
    with pytest.raises(IndexError, match=r"layer=2 is out of range: this model has 2 layers"):
        capture.weights("cross", 2, 0)
    with pytest.raises(IndexError, match=r"head=4 is out of range: this model has 4 heads"):
        viz.attention_heatmap(capture, "encoder", 0, 4)
    with pytest.raises(IndexError, match="head=-2"):
        viz.attention_explorer(capture, head=-2)
    with pytest.raises(ValueError, match="kind must be one of"):
        viz.attention_grid(capture, "self")


# ---------------------------------------------------------------------------------------------------------
# Head statistics against known values
# ---------------------------------------------------------------------------------------------------------


def test_entropy_is_zero_for_one_hot_rows_and_log_k_for_uniform_rows():
    one_hot, uniform = torch.eye(5), torch.full((5, 5), 0.2)
    causal_uniform = torch.ones(4, 4).tril() / torch.arange(1, 5)[:, None]  # row i uniform over i + 1 keys
    entropy = viz.attention_entropy(torch.stack([one_hot, uniform]))
    torch.testing.assert_close(entropy, torch.tensor([0.0, math.log(5)]))
    expected = sum(math.log(n) for n in range(1, 5)) / 4
    torch.testing.assert_close(viz.attention_entropy(causal_uniform), torch.tensor([expected]))


def test_diagonality_and_alignment_of_identity_and_flipped_identity():
    eye = torch.eye(4)
    flipped = eye.flip(-1)
    torch.testing.assert_close(viz.diagonality(torch.stack([eye, flipped])), torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(viz.diagonality(flipped, anti=True), torch.tensor([1.0]))
    torch.testing.assert_close(viz.diagonality(torch.full((3, 3), 1 / 3)), torch.tensor([1 / 3]))
    torch.testing.assert_close(viz.argmax_alignment(torch.stack([eye, flipped])), torch.tensor([1.0, 0.0]))
    shifted = torch.eye(5)[[4, 0, 1, 2, 3]]  # query i attends to key i − 1 (and query 0 to key 4)
    torch.testing.assert_close(viz.argmax_alignment(shifted, offset=-1), torch.tensor([1.0]))  # rows 1–4


@pytest.mark.slow
def test_head_statistics_one_row_per_kind_layer_head():
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    rows = viz.head_statistics(capture)
    assert len(rows) == 3 * 2 * 4
    row = next(r for r in rows if (r["kind"], r["layer"], r["head"]) == ("cross", 1, 3))
    assert row["entropy"] == pytest.approx(float(viz.attention_entropy(capture.cross[1][3])), abs=1e-4)
    assert row["diagonality"] == pytest.approx(float(viz.diagonality(capture.cross[1][3])), abs=1e-4)


# ---------------------------------------------------------------------------------------------------------
# Chart data
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_heatmap_spec_carries_tokens_and_weights_of_each_cell():
    capture = viz.capture_attention(small_model(), [4, 5, 6, 5], [7, 8, 9])  # a repeated source token
    spec = viz.attention_heatmap(capture, "cross", layer=1, head=2).to_dict()
    rows = spec["data"]["values"]
    w = capture.cross[1][2]  # (T, S)
    assert len(rows) == w.numel()
    for row in rows:
        assert row["query"] == capture.tgt_tokens[row["i"]]
        assert row["key"] == capture.src_tokens[row["j"]]
        assert row["weight"] == pytest.approx(float(w[row["i"], row["j"]]), abs=1e-4)
    assert (
        spec["encoding"]["x"]["field"] == "j" and spec["encoding"]["y"]["field"] == "i"
    )  # positions: repeats stay apart
    assert json.dumps(capture.src_tokens) in spec["encoding"]["x"]["axis"]["labelExpr"]
    assert {t["field"] for t in spec["encoding"]["tooltip"]} == {"query", "key", "weight"}


def test_heatmap_rejects_token_lists_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"2 × 3 .* got 2 y_tokens \(rows\) and 2 x_tokens"):
        viz.heatmap(torch.rand(2, 3), ["a", "b"], ["c", "d"])
    with pytest.raises(ValueError, match="must be 2-D"):
        viz.heatmap(torch.rand(2, 2, 2))


@pytest.mark.slow
def test_explorer_spec_has_dropdowns_and_every_head_with_its_mean():
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    spec = viz.attention_explorer(capture).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["kind"]["bind"]["options"] == ["encoder", "decoder", "cross"]
    assert params["layer"]["bind"]["options"] == [0, 1]
    assert params["head"]["bind"]["options"] == [-1, 0, 1, 2, 3]
    assert {"filter": "datum.kind == kind && datum.layer == layer && datum.head == head"} in spec["transform"]
    rows = {(r["kind"], r["layer"], r["head"], r["i"]): r["weight"] for r in spec["data"]["values"]}
    assert len(rows) == 2 * 5 * (3 + 3 + 3)  # layers × (mean + 4 heads) × (S + T + T) query rows
    for i in range(3):
        assert rows[("decoder", 1, 2, i)] == pytest.approx(capture.decoder[1][2][i].tolist(), abs=1e-3)
        assert rows[("cross", 0, -1, i)] == pytest.approx(capture.cross[0].mean(0)[i].tolist(), abs=1e-3)


def test_grid_facets_every_layer_and_head():
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    spec = viz.attention_grid(capture, "encoder").to_dict()
    rows = spec["data"]["values"]
    assert {(r["layer"], r["head"]) for r in rows} == {(l, h) for l in range(2) for h in range(4)}
    assert spec["facet"]["row"]["field"] == "layer" and spec["facet"]["column"]["field"] == "head"


def test_mask_plot_shows_true_where_a_query_may_attend():
    spec = viz.plot_mask(subsequent_mask(4), list("abcd"), list("abcd")).to_dict()
    assert {(r["i"], r["j"]): r["may_attend"] for r in spec["data"]["values"]} == {
        (i, j): j <= i for i in range(4) for j in range(4)
    }
    padding = viz.plot_mask(padding_mask(torch.tensor([[4, 5, PAD]]), PAD)).to_dict()["data"]["values"]
    assert [r["may_attend"] for r in padding] == [True, True, False]
    with pytest.raises(ValueError, match=r"pick one sentence and head, e.g. mask\[0, 0\]"):
        viz.plot_mask(torch.ones(2, 1, 3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="must be boolean"):
        viz.plot_mask(torch.ones(3, 3))


def test_positional_encoding_plot_holds_the_papers_sinusoids():
    rows = viz.plot_positional_encoding(max_len=20, d_model=8).to_dict()["data"]["values"]
    for r in rows:
        pos, k = r["position"], r["dimension"]
        angle = pos / 10000 ** ((k - k % 2) / 8)
        assert r["value"] == pytest.approx(math.sin(angle) if k % 2 == 0 else math.cos(angle), abs=1e-3)
    lines = viz.plot_positional_encoding(max_len=20, d_model=8, dims=[2, 3]).to_dict()["data"]["values"]
    assert {r["dimension"] for r in lines} == {"dim 2", "dim 3"} and len(lines) == 40
    with pytest.raises(ValueError, match="outside the table's 8 dimensions"):
        viz.plot_positional_encoding(max_len=20, d_model=8, dims=[8])


def test_lr_schedule_plot_thins_long_schedules_but_keeps_the_peak():
    def noam(step, warmup=100):
        return 32**-0.5 * min(step**-0.5, step * warmup**-1.5)

    spec = viz.plot_lr_schedule({"warmup 100": noam}, steps=range(1, 5001), max_points=50).to_dict()
    rows = spec["data"]["values"]
    assert len(rows) <= 52
    assert {r["step"]: r["lr"] for r in rows}[100] == pytest.approx(noam(100))
    assert all(r["lr"] == pytest.approx(noam(r["step"])) for r in rows)
    with pytest.raises(ValueError, match="give steps too"):
        viz.plot_lr_schedule(noam)
    with pytest.raises(ValueError, match="3 values but steps has 2"):
        viz.plot_lr_schedule([1.0, 2.0, 3.0], steps=[1, 2])


@pytest.mark.slow
def test_matplotlib_backend_draws_the_same_matrices():
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    fig = viz.attention_heatmap(capture, "cross", 0, 1, backend="matplotlib")
    image = fig.axes[0].images[0].get_array()
    torch.testing.assert_close(torch.as_tensor(image.data), capture.cross[0][1])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == capture.src_tokens
    grid = viz.attention_grid(capture, "decoder", backend="matplotlib")
    assert len([ax for ax in grid.axes if ax.images]) == 2 * 4
    with pytest.raises(ValueError, match="backend must be one of"):
        viz.plot_mask(subsequent_mask(3), backend="plotly")


# ---------------------------------------------------------------------------------------------------------
# A trained toy model shows the expected pattern
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def copy_model():
    """A one-layer model trained on the copy task: ≈ 4 CPU seconds of Adam on random sequences."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        model = make_model(12, 12, N=1, d_model=32, d_ff=64, h=2, dropout=0.0, tie_embeddings="all")
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
        pairs = toy_pairs("copy", 300 * 32, vocab_size=12, min_len=4, max_len=8, seed=0)
        for step in range(300):
            batch = collate(pairs[step * 32 : (step + 1) * 32])
            logits = model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask))  # (B, T, V)
            loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval()


@pytest.mark.slow
def test_copy_model_cross_attention_lies_on_the_diagonal_and_the_heatmap_shows_it(copy_model):
    """Decoder step i (reading <s> y_1 … y_i) must write source token i, so it should look at source position i."""
    on_diagonal, rows = 0, 0
    for src, tgt in toy_pairs("copy", 20, vocab_size=12, min_len=6, max_len=8, seed=1):
        capture = viz.capture_attention(copy_model, src, tgt)
        best = int(viz.argmax_alignment(capture.cross[0][:, : len(src)]).argmax())  # the most diagonal head
        cells = viz.attention_heatmap(capture, "cross", 0, best).to_dict()["data"]["values"]
        for i in range(len(src)):  # the last query (after y_S) predicts </s>, it has no source position
            row = [c for c in cells if c["i"] == i]
            on_diagonal += max(row, key=lambda c: c["weight"])["j"] == i
            rows += 1
    assert on_diagonal / rows >= 0.9


@pytest.mark.slow
def test_translate_and_capture_types_a_sentence_through_the_model(copy_model):
    vocab = Vocab(SPECIALS + list("abcdefgh"))  # toy ids 4 … 11 as letters
    translation, capture = viz.translate_and_capture(copy_model, "c a f e b", vocab, vocab)
    assert translation.split() == list("cafeb")
    assert capture.src_tokens == list("cafeb") and capture.tgt_tokens == ["<s>", *"cafeb"]
    with pytest.raises(ValueError, match="pass src_vocab= and tgt_vocab="):
        viz.translate_and_capture(copy_model, "c a f")
    with pytest.raises(ValueError, match="the sentence is empty"):
        viz.translate_and_capture(copy_model, "  ", vocab, vocab)


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 3])
def test_translate_and_capture_gives_translates_own_translation(beam_size, one_thread):
    """Untrained models: greedy often runs to translate's length limit (source + 50 words), beam stops early."""
    vocab = Vocab(SPECIALS + list("abcdefgh"))
    for seed in range(2):
        torch.manual_seed(seed)
        model = small_model().eval()
        for sentence in ["c a f e b", "h", "a b c d e f g h a b"]:
            expected = translate(model, [sentence], beam_size, src_vocab=vocab, tgt_vocab=vocab)[0]
            translation, capture = viz.translate_and_capture(model, sentence, vocab, vocab, beam_size)
            assert translation == expected
            assert capture.tgt_tokens[0] == "<s>"  # the decoder's inputs: <s>, then every word it wrote …
            assert [t for t in capture.tgt_tokens[1:] if t != "<s>"] == expected.split()  # … (text drops an <s>)
            assert capture.src_tokens == sentence.split()


def test_translate_and_capture_tokenizes_with_the_checkpoints_source_language(tmp_path, one_thread):
    words = ["A", "dog", "'s", "dog's", "toy", ".", "a", "b"]  # 12 with the specials, as small_model
    vocab = Vocab(SPECIALS + words)
    model = small_model().eval()
    path = save_checkpoint(tmp_path / "en-de.pt", model, model.config, vocab, vocab, src_lang="en", tgt_lang="de")
    translation, capture = viz.translate_and_capture(path, "A dog's toy.")
    assert capture.src_tokens == ["A", "dog", "'s", "toy", "."]  # spaCy's English rules split the clitic
    assert translation == translate(path, ["A dog's toy."], src_lang="en")[0]
    _, as_german = viz.translate_and_capture(path, "A dog's toy.", src_lang="de")  # German keeps it whole
    assert as_german.src_tokens == ["A", "dog's", "toy", "."]


def test_viz_imports_neither_the_edition_nor_training_code():
    """The edition imports viz, never the reverse; the views need no training code (function-level imports too)."""
    folder = Path(viz.__file__).parent
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [f"{'.' * node.level}{node.module or ''}"]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not re.search(r"(^|\.)(edition|export|train)(\.|$)", name), f"{path.name} imports {name}"


# ---------------------------------------------------------------------------------------------------------
# Saving charts and bertviz
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_save_chart_writes_png_svg_and_an_offline_html_page(tmp_path):
    chart = viz.plot_mask(subsequent_mask(3))
    assert viz.save_chart(chart, tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in viz.save_chart(chart, tmp_path / "m.svg").read_text()
    page = viz.save_chart(chart, tmp_path / "m.html").read_text()
    assert page.count("vegaEmbed(") >= 1 and '"may_attend"' in page
    assert not re.search(r"<script[^>]+src=", page)  # everything inline: nothing to fetch
    with pytest.raises(ValueError, match=r"\.png, \.svg, \.pdf, \.html or \.json"):
        viz.save_chart(chart, tmp_path / "m.gif")


def test_bertviz_inputs_are_per_layer_batches_of_one():
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    args = viz.to_bertviz(capture)
    assert [tuple(t.shape) for t in args["cross_attention"]] == [(1, 4, 3, 3)] * 2
    assert [tuple(t.shape) for t in args["encoder_attention"]] == [(1, 4, 3, 3)] * 2
    torch.testing.assert_close(args["decoder_attention"][1][0], capture.decoder[1])
    assert args["encoder_tokens"] == capture.src_tokens and args["decoder_tokens"] == capture.tgt_tokens


def test_bertviz_head_view_receives_the_capture():
    pytest.importorskip("bertviz")  # optional: pip install --no-deps bertviz
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    page = viz.bertviz_view(capture, "head").data
    start = page.index("const params = ") + len("const params = ")
    attention = json.JSONDecoder().raw_decode(page, start)[0]["attention"]
    cross = next(a for a in attention if a["name"] == "Cross")
    assert cross["left_text"] == capture.tgt_tokens and cross["right_text"] == capture.src_tokens
    torch.testing.assert_close(torch.tensor(cross["attn"]), torch.stack(capture.cross))  # (layers, heads, T, S)
    with pytest.raises(ValueError, match="'head' or 'model'"):
        viz.bertviz_view(capture, "neuron")


@pytest.mark.slow
def test_sentence_explorer_translates_what_is_typed(copy_model, monkeypatch):
    widgets = pytest.importorskip("ipywidgets")
    typed, real = [], viz.explorer.translate_and_capture

    def recording(model, sentence, *args, **kwargs):
        typed.append(sentence)
        return real(model, sentence, *args, **kwargs)

    monkeypatch.setattr(viz.explorer, "translate_and_capture", recording)  # where sentence_explorer looks it up
    vocab = Vocab(SPECIALS + list("abcdefgh"))
    box = viz.sentence_explorer(copy_model, vocab, vocab, sentence="c a f")
    text, button = box.children[0].children
    assert isinstance(text, widgets.Text) and isinstance(button, widgets.Button)
    assert text.description == "Deutsch:"  # a bare model translates Multi30k's way, German → English
    text.value = "b a d"  # typing (Enter) re-runs
    button.click()
    assert typed == ["c a f", "b a d", "b a d"]


@pytest.mark.slow
def test_charts_draw_with_an_older_vega_lite_like_jupyterlabs():
    """JupyterLab 4 renders with its own Vega-Lite 5.6; vl-convert's oldest, 5.8, must draw every chart too."""
    import vl_convert as vlc

    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    for chart in [
        viz.attention_explorer(capture),
        viz.attention_grid(capture),
        viz.plot_head_statistics(capture),
        viz.plot_mask(subsequent_mask(3)),
        viz.plot_lr_schedule([1.0, 2.0]),
    ]:
        svg = vlc.vegalite_to_svg(chart.to_dict(), vl_version="5.8")
        assert 'class="mark-rect role-mark' in svg or 'class="mark-line role-mark' in svg


@pytest.mark.slow
def test_explorer_can_open_on_the_mean_of_the_heads():
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    spec = viz.attention_explorer(capture, head=-1).to_dict()
    assert {p["name"]: p for p in spec["params"]}["head"]["value"] == -1


# ---------------------------------------------------------------------------------------------------------
# Chart labels in the course's language (the 中文版): English as always, Chinese after
# set_language("zh") where a CJK font is installed (tests/test_fonts.py: the font, and English without one)
# ---------------------------------------------------------------------------------------------------------

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")  # Han characters and full-width punctuation


@pytest.fixture
def chinese():
    """The language set to Chinese, as the first cell of a zh notebook does; undone after the test."""
    import matplotlib

    from transformer_course import set_language
    from transformer_course.viz import fonts

    if fonts.find_cjk_font() is None:
        pytest.skip("no CJK font installed (Debian/Ubuntu: apt-get install fonts-noto-cjk)")
    fonts.forget_font()
    with matplotlib.rc_context():
        set_language("zh")
        try:
            yield
        finally:
            set_language("en")
            fonts.forget_font()


def every_chart(capture):
    """Every Altair chart of the package, one of each kind."""
    return {
        "mask": viz.plot_mask(subsequent_mask(3)),
        "positional encoding": viz.plot_positional_encoding(20, 8),
        "positional encoding curves": viz.plot_positional_encoding(20, 8, dims=[2, 3]),
        "schedule": viz.plot_lr_schedule({"warmup": [1e-4, 7e-4, 5e-4]}),
        "heatmap": viz.attention_heatmap(capture, "cross", 1, 2),
        "grid": viz.attention_grid(capture, "cross"),
        "head statistics": viz.plot_head_statistics(capture, "entropy"),
        "explorer": viz.attention_explorer(capture),
    }


@pytest.mark.slow
def test_english_charts_keep_their_english_words():
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    for name, chart in every_chart(capture).items():
        assert not CJK.search(json.dumps(chart.to_dict(), ensure_ascii=False)), f"{name} has Chinese in English"
    mask = viz.plot_mask(subsequent_mask(3)).to_dict()
    assert (mask["title"], mask["encoding"]["x"]["title"], mask["encoding"]["y"]["title"]) == (
        "mask (True = may attend)",
        "key",
        "query",
    )
    assert all("title" not in tip for tip in mask["encoding"]["tooltip"])  # Altair's default: the field's name
    params = {p["name"]: p["bind"] for p in viz.attention_explorer(capture).to_dict()["params"]}
    assert [params[n]["name"] for n in ("kind", "layer", "head")] == ["attention ", "layer ", "head "]
    assert params["kind"]["labels"] == [viz.KIND_TITLES[k] for k in viz.KINDS]
    assert params["head"]["labels"][0] == "mean"
    grid = viz.attention_grid(capture, "cross").to_dict()
    assert grid["facet"]["row"]["header"]["labelExpr"] == "'layer ' + datum.value"
    assert grid["title"] == "cross-attention (decoder → encoder): layer × head"
    fig = viz.attention_grid(capture, "cross", backend="matplotlib")
    assert fig.texts[0].get_text() == "cross-attention (decoder → encoder): layer × head (3 queries × 3 keys)"


@pytest.mark.slow
def test_chinese_charts_speak_chinese_and_keep_their_data(chinese):
    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    mask = viz.plot_mask(subsequent_mask(3)).to_dict()
    assert (mask["title"], mask["encoding"]["x"]["title"], mask["encoding"]["y"]["title"]) == (
        "掩码（True = 允许关注）",
        "键",
        "查询",
    )
    assert [tip.get("title") for tip in mask["encoding"]["tooltip"]] == ["查询", "键", "允许关注"]
    assert [tip["field"] for tip in mask["encoding"]["tooltip"]] == ["query", "key", "may_attend"]  # data as before
    params = {p["name"]: p["bind"] for p in viz.attention_explorer(capture).to_dict()["params"]}
    assert [params[n]["name"] for n in ("kind", "layer", "head")] == ["注意力 ", "层 ", "头 "]
    assert params["kind"]["labels"] == ["编码器自注意力", "解码器自注意力（带掩码）", "交叉注意力（解码器 → 编码器）"]
    assert params["kind"]["options"] == ["encoder", "decoder", "cross"]  # the values the filter compares
    assert params["head"]["labels"][0] == "平均（mean）"
    grid = viz.attention_grid(capture, "cross").to_dict()
    assert grid["facet"]["row"]["header"]["labelExpr"] == "'第 ' + datum.value + ' 层'"
    assert grid["title"] == "交叉注意力（解码器 → 编码器）：层 × 头"
    curves = viz.plot_positional_encoding(20, 8, dims=[2, 3]).to_dict()
    assert {r["dimension"] for r in curves["data"]["values"]} == {"维度 2", "维度 3"}
    fig = viz.attention_grid(capture, "cross", backend="matplotlib")
    assert fig.texts[0].get_text() == "交叉注意力（解码器 → 编码器）：层 × 头（3 个查询 × 3 个键）"
    assert viz.plot_mask(subsequent_mask(3), title="my own title").to_dict()["title"] == "my own title"


@pytest.mark.slow
def test_chinese_charts_draw_their_chinese_words(chinese):
    """Vega-Lite 5.8 (as old as JupyterLab's) compiles every Chinese chart; its words reach the SVG."""
    import vl_convert as vlc

    capture = viz.capture_attention(small_model(), [4, 5, 6], [7, 8])
    expected = {"grid": "第 1 层", "head statistics": "解码器", "explorer": "注意力查看器", "mask": "允许关注"}
    for name, chart in every_chart(capture).items():
        svg = vlc.vegalite_to_svg(chart.to_dict(), vl_version="5.8")
        assert 'class="mark-rect role-mark' in svg or 'class="mark-line role-mark' in svg, name
        assert CJK.search(svg), f"{name}: no Chinese in the drawing"
        if name in expected:
            assert expected[name] in svg, f"{name}: {expected[name]!r} not drawn"


def chart_templates() -> list[tuple[str, str]]:
    """(file, English template) for every string literal that viz passes to chart_text or field_title."""
    found = []
    for path in sorted(Path(viz.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in ("chart_text", "field_title", "header_expr")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.append((path.name, node.args[0].value))
    return found


def test_every_chart_word_has_its_chinese_with_the_same_fields():
    from transformer_course.i18n import template_fields
    from transformer_course.viz.explorer import LANGUAGE_NAMES
    from transformer_course.viz.labels import ZH

    templates = chart_templates()
    assert len(templates) > 40  # the scan sees the calls
    templates += [("capture.py", title) for title in viz.KIND_TITLES.values()]
    templates += [("capture.py", kind) for kind in viz.KINDS]  # panel headers
    templates += [("explorer.py", name) for name in LANGUAGE_NAMES.values()]
    templates += [("stats.py", stat) for stat in ("entropy", "diagonality", "anti_diagonality")]
    for function in (viz.plot_mask, viz.plot_lr_schedule, viz.heatmap):  # default titles, axis names, values
        for parameter in inspect.signature(function).parameters.values():
            if parameter.name.endswith(("title", "value")) and parameter.default:
                templates.append((function.__name__, parameter.default))
    missing = [f"{file}: {text!r}" for file, text in templates if text not in ZH]
    assert missing == [], "no Chinese for: " + "; ".join(missing)
    for english, chinese in ZH.items():
        assert template_fields(english) == template_fields(chinese), english
        assert CJK.search(chinese), f"{english!r} → {chinese!r} is not Chinese"


def test_the_chart_words_agree_with_the_checkers_words():
    """One catalogue holds every module's Chinese: a word the checkers also translate must mean the same."""
    import importlib
    import pkgutil

    import transformer_course.exercises as exercises
    from transformer_course.viz.labels import ZH

    for info in pkgutil.walk_packages(exercises.__path__, exercises.__name__ + "."):
        catalogue = getattr(importlib.import_module(info.name), "ZH", None)
        if isinstance(catalogue, dict):
            clashes = {k: (v, catalogue[k]) for k, v in ZH.items() if k in catalogue and catalogue[k] != v}
            assert clashes == {}, f"{info.name} translates these differently (viz, it): {clashes}"


def test_notebook_titles_in_the_catalogue_are_the_notebooks_own():
    """The titles the notebooks give the charts are translated word for word: each still is in a notebook."""
    from transformer_course.viz.labels import NOTEBOOK_TITLES

    notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    code = "\n".join(
        "".join(cell["source"])
        for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb"))
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
        if cell["cell_type"] == "code"
    )
    stale = [title for title in NOTEBOOK_TITLES if json.dumps(title, ensure_ascii=False) not in code]
    assert stale == [], f"no notebook passes these titles any more: {stale}"


@pytest.mark.slow  # a fresh Python process: altair must not be imported yet
def test_setup_configures_altair_when_it_is_first_imported_and_a_notebook_without_altair_never_imports_it():
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from transformer_course import viz\n"
        "viz.setup(max_rows=123)\n"
        "print('altair' in sys.modules, 'jsonschema' in sys.modules)\n"
        "import altair as alt\n"
        "print(alt.renderers.active, alt.data_transformers.options['max_rows'])\n"
        "viz.setup(max_rows=456)\n"  # a second call after the import: applied at once
        "print(alt.data_transformers.options['max_rows'], sum(type(f).__name__ == '_AfterImport' for f in sys.meta_path))\n"
        "import importlib, importlib.resources\n"
        "print(importlib.reload(alt) is alt, importlib.resources.files('altair').is_dir())\n"
    )
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert printed.split("\n")[:4] == ["False False", "mimetype 123", "456 0", "True True"]
