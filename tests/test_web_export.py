"""The graphs the browser runs equal the PyTorch model: onnxruntime (Python) on the exported encoder
and decoder step gives the model's own numbers — memory, logits, log-probabilities, every attention weight of
every layer and head — on 100 test2016 sentences, and its greedy loop over the fixed-length key/value cache gives
the very tokens ``greedy_decode`` gives, with and without the package's cache."""

import hashlib
import json

import numpy as np
import pytest
import torch

from course_tools.web import graphs
from course_tools.web.export import SESSION_CONFIG, holds, with_head_mask
from course_tools.web.tokenizers import js_regex
from transformer_course.checkpoint import load_checkpoint
from transformer_course.data import BOS, EOS, PAD, load_pairs
from transformer_course.decode import greedy_decode
from transformer_course.masks import padding_mask
from transformer_course.viz import capture_attention

pytestmark = pytest.mark.xdist_group("web")  # one worker builds the session's web checkpoints and exports

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

SENTENCES = 100


def source_ids(checkpoint, sentences):
    from transformer_course.data import tokenize_many

    if checkpoint.tokenizer is not None:
        return checkpoint.tokenizer.encode_many(sentences, ids=True)
    return [checkpoint.src_vocab.encode(words) for words in tokenize_many(sentences, checkpoint.src_lang)]


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # tiny graphs: one thread, as in the page
    for key, value in SESSION_CONFIG.items():  # as the page makes its sessions
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module", params=["words", "bpe"])
def exported(request, web_checkpoints, web_exports):
    kind = request.param
    checkpoint = load_checkpoint(web_checkpoints[kind])
    folder = web_exports[kind]
    test = [de for de, _ in load_pairs("test", web_checkpoints["root"])][:SENTENCES]
    return {
        "checkpoint": checkpoint,
        "folder": folder,
        "encoder": session(folder / "encoder.onnx"),
        "step": session(folder / "decoder_step.onnx"),
        "ids": source_ids(checkpoint, test),
    }


def run_steps(exported, src_ids, tokens, cache_len):
    """The page's loop in Python: feed ``tokens`` one per step through the decoder-step graph; every output."""
    c = exported["checkpoint"].config
    encoder_outputs = exported["encoder"].run(None, with_head_mask(exported["encoder"], {"src": np.array([src_ids])}))
    cross = dict(zip(["cross_keys", "cross_values"], encoder_outputs[2:]))
    keys = np.zeros((c.N, 1, c.h, cache_len, c.d_model // c.h), np.float32)
    values, steps = keys.copy(), []
    for position, token in enumerate(tokens):
        feed = {
            "token": np.array([[token]]),
            "position": np.array([position]),
            "self_keys": keys,
            "self_values": values,
        }
        feed = with_head_mask(exported["step"], {**feed, **cross})  # every head on
        out = dict(zip(graphs.STEP_OUTPUTS, exported["step"].run(graphs.STEP_OUTPUTS, feed)))
        keys, values = out["new_self_keys"], out["new_self_values"]
        steps.append(out)
    return encoder_outputs, steps


@pytest.fixture(scope="module")
def runs(exported):
    """Per test sentence: PyTorch's references and the exported graphs' outputs, computed once.

    PyTorch: the memory (``model.encode``), the cross-attention keys/values its own cache holds, greedy decoding
    with and without the cache (``return_result``: every step's logits), and ``capture_attention`` over the
    whole greedy output in one teacher-forced pass (causal mask, no cache). The graphs: the encoder, then one
    decoder step per token the decoder reads (<s> y1 … yn, and the last one too when no </s> came)."""
    model = exported["checkpoint"].model
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is faster, and much faster on a busy machine
    try:
        return [reference_run(exported, model, src_ids) for src_ids in exported["ids"]]
    finally:
        torch.set_num_threads(threads)


def reference_run(exported, model, src_ids):
    """One sentence's PyTorch references and graph outputs (see ``runs``)."""
    src = torch.tensor([src_ids])
    src_mask = padding_mask(src, PAD)
    limit = min(len(src_ids) + 51, model.config.max_len)  # translate's limit: source length + 50, + <s>
    with torch.no_grad():
        memory = model.encode(src, src_mask)  # the package's fast path
        cache = model.new_cache()
        model.decode(memory, src_mask, torch.tensor([[BOS]]), None, cache)  # fills the cross-attention caches
    cached = greedy_decode(model, src, src_mask, limit, BOS, EOS, use_cache=True, return_result=True)
    uncached = greedy_decode(model, src, src_mask, limit, BOS, EOS, use_cache=False, return_result=True)
    tokens = cached.tokens[0].tolist()
    read = tokens[: tokens.index(EOS)] if EOS in tokens else tokens  # what the decoder read: <s> y1 … yn
    encoder_outputs, steps = run_steps(exported, src_ids, read, limit)
    return {
        "memory": memory,
        "cross_cache": [
            torch.stack([getattr(layer.cross_attn, kv) for layer in cache.layers]) for kv in ("key", "value")
        ],
        "cached": cached,
        "uncached": uncached,
        "tokens": tokens,
        "capture": capture_attention(model, src_ids, read),
        "encoder_outputs": encoder_outputs,
        "steps": steps,
    }


def close(actual, expected, what):
    torch.testing.assert_close(torch.as_tensor(actual), expected.float(), msg=lambda m: f"{what}: {m}")


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_the_encoder_graph_gives_the_models_memory_attention_and_cross_keys_values(runs):
    for run in runs:
        memory, attention, keys, values = run["encoder_outputs"]
        close(memory, run["memory"][0:1], "memory")
        close(attention, torch.stack(run["capture"].encoder), "encoder self-attention")  # (N, h, S, S)
        close(keys, run["cross_cache"][0], "cross-attention keys")  # (N, 1, h, S, d_k)
        close(values, run["cross_cache"][1], "cross-attention values")


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_the_packages_cache_changes_nothing(runs):
    for run in runs:
        assert run["cached"].tokens.tolist() == run["uncached"].tokens.tolist()
        torch.testing.assert_close(run["cached"].logits, run["uncached"].logits)


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_each_decoder_step_gives_the_logits_of_the_uncached_pytorch_decoder(runs):
    for run in runs:
        expected = run["uncached"].logits[0]  # (steps, vocab)
        got = np.concatenate([s["logits"] for s in run["steps"]])[: len(expected)]  # a final step only for attention
        close(got, expected, "logits")
        close(
            np.concatenate([s["log_probs"] for s in run["steps"]])[: len(expected)],
            expected.log_softmax(-1),
            "log_probs",
        )


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_each_decoder_step_gives_every_decoder_and_cross_attention_weight_of_the_teacher_forced_model(runs):
    for run in runs:
        capture, steps = run["capture"], run["steps"]
        T = len(capture.tgt_tokens)
        assert len(steps) == T
        decoder = np.stack([s["decoder_attention"][:, :, 0, :T] for s in steps], axis=2)  # (N, h, T, T)
        cross = np.stack([s["cross_attention"][:, :, 0] for s in steps], axis=2)  # (N, h, T, S)
        close(decoder, torch.stack(capture.decoder), "decoder self-attention")
        close(cross, torch.stack(capture.cross), "cross-attention")
        assert all((s["decoder_attention"][:, :, 0, p + 1 :] == 0).all() for p, s in enumerate(steps))  # slots ahead


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_greedy_decoding_with_the_graphs_gives_greedy_decodes_tokens(runs):
    """The argmax of the graph's log-probabilities at every step is the next token greedy_decode chose, so the
    page's loop (feed the argmax back) gives greedy_decode's tokens, </s> included."""
    for run in runs:
        chosen = [int(s["log_probs"][0].argmax()) for s in run["steps"]]
        generated = [t for t in run["tokens"][1:] if t != PAD]
        assert chosen[: len(generated)] == generated


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_the_graphs_take_a_one_token_sentence_and_a_full_positional_table(tmp_path):
    """The edges of the dynamic dimensions: S = 1 and S = max_len, a cache as long as the table, the last slot."""
    from course_tools.web import export_graphs
    from transformer_course import make_model

    torch.manual_seed(0)
    model = make_model(20, 30, N=2, d_model=16, d_ff=32, h=2, max_len=12).eval()
    encoder_path, step_path = export_graphs(model, tmp_path)
    encoder, step = ort.InferenceSession(str(encoder_path)), ort.InferenceSession(str(step_path))
    for S in (1, 12):
        src = torch.randint(4, 20, (1, S))
        with torch.no_grad():
            expected = graphs.EncoderForWeb(model)(src)
        got = encoder.run(None, {"src": src.numpy()})
        for g, e, name in zip(got, expected, graphs.ENCODER_OUTPUTS):
            close(g, e, name)
        keys = torch.randn(2, 1, 2, 12, 8)
        args = (torch.tensor([[5]]), torch.tensor([11]), keys, keys + 1, expected[2], expected[3])  # the last slot
        with torch.no_grad():
            want = graphs.DecoderStepForWeb(model)(*args)
        have = step.run(graphs.STEP_OUTPUTS, {n: a.numpy() for n, a in zip(graphs.STEP_INPUTS, args)})
        for h, w, name in zip(have, want, graphs.STEP_OUTPUTS):
            close(h, w, name)


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_the_manifest_describes_the_model_and_every_file(exported):
    folder, checkpoint = exported["folder"], exported["checkpoint"]
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    c = checkpoint.config
    assert manifest["format"] == "course_tools/web-v1"
    assert (manifest["layers"], manifest["heads"], manifest["d_model"], manifest["d_k"]) == (
        c.N,
        c.h,
        c.d_model,
        c.d_model // c.h,
    )
    assert manifest["specials"] == {"pad": 0, "unk": 1, "bos": 2, "eos": 3}
    assert manifest["tokenizer"] == ("bpe" if checkpoint.tokenizer is not None else "words")
    assert manifest["made_with"]["exporter"] == "torch.onnx.export(dynamo=True)"
    assert manifest["made_with"]["largest_difference_from_pytorch"] < 1e-4
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"], entry["sha256"])
    assert not list(folder.glob("*.onnx.data")), "the weights belong inside the .onnx files"
    assert not [p for p in folder.iterdir() if p.name.startswith("tc-export-")], "a temporary folder was left"


def test_a_bad_language_or_a_missing_checkpoint_is_one_clear_line(tmp_path, capsys):
    from transformer_course.cli import main

    assert main(["export-web", str(tmp_path / "nothing.pt"), str(tmp_path / "out")]) == 1
    assert "no checkpoint at" in capsys.readouterr().err
    assert main(["export-web", str(tmp_path / "nothing.pt"), str(tmp_path / "out"), "--language", "fr"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--language must be one of ['en', 'zh']" in err


@pytest.mark.parametrize(
    "python, javascript",
    [
        (r"^\d+", r"^\p{Nd}+"),  # Python's \d is every Unicode digit, JavaScript's only 0-9
        (r"[\w\-]", r"[\p{L}\p{N}_\-]"),
        (r"\w", r"[\p{L}\p{N}_]"),
        (r"^\'|^\!", r"^\u{27}|^\u{21}"),  # escapes the "u" flag rejects
        ("[\\U00020000-\\U000215FF]", r"[\u{20000}-\u{215FF}]"),
        (r"(?u)^a\.b$", r"^a\.b$"),
    ],
)
def test_python_patterns_become_the_same_javascript_patterns(python, javascript):
    assert js_regex(python) == javascript


def test_a_pattern_the_port_cannot_translate_is_refused():
    with pytest.raises(ValueError, match="inline flags"):
        js_regex("(?i)abc")
    with pytest.raises(ValueError, match=r"\\b has no JavaScript equivalent"):
        js_regex(r"\bword")


def test_the_edition_has_no_explorer_page_without_the_courses_checkpoint(tmp_path):
    from course_tools.web.export import course_page

    assert course_page(tmp_path / "html", "en", checkpoint=tmp_path / "runs" / "multi30k-cpu" / "best.pt") is None
    assert not (tmp_path / "html").exists()


@pytest.mark.slow  # exports ONNX graphs (about 2 minutes for the shared fixtures on 2 cores)
def test_the_edition_exports_the_courses_checkpoint_into_explore(web_checkpoints, tmp_path):
    from course_tools.web.export import course_page

    index = course_page(tmp_path / "html", "zh", checkpoint=web_checkpoints["bpe"])
    assert index == tmp_path / "html" / "explore" / "index.html"
    assert '<html lang="zh-CN">' in index.read_text(encoding="utf-8")


@pytest.mark.slow  # exports ONNX graphs
def test_each_graph_holds_only_the_rows_of_the_cross_attention_it_reads(web_exports, web_checkpoints):
    """The decoder step reads W^Q of each cross-attention (its keys and values come in as inputs), the encoder
    W^K and W^V (it makes them from the memory): neither graph carries the other's rows."""
    import onnx
    from onnx import numpy_helper

    model = load_checkpoint(web_checkpoints["bpe"]).model
    d = model.config.d_model
    held = {}
    for name in ("encoder.onnx", "decoder_step.onnx"):
        arrays = [numpy_helper.to_array(i) for i in onnx.load(web_exports["bpe"] / name).graph.initializer]
        held[name] = [a for a in arrays if a.ndim == 2]
    for layer in model.decoder.layers:
        w = layer.cross_attn.in_proj.weight.detach().numpy()
        query, keys, values = w[:d], w[d : 2 * d], w[2 * d :]
        assert any(holds([query], a) for a in held["decoder_step.onnx"])
        assert not any(holds([keys], a) or holds([values], a) for a in held["decoder_step.onnx"])
        assert any(holds([w[d:]], a) for a in held["encoder.onnx"])
        assert not any(holds([query], a) for a in held["encoder.onnx"])


# ---- the rounded exports: int8, and past 8 bits two byte planes --------------------------------------------------


@pytest.fixture(scope="module")
def rounded_exports(web_checkpoints, tmp_path_factory):
    from course_tools.web import export_web

    folders = {}
    for precision in ("int8", "int10"):
        folders[precision] = tmp_path_factory.mktemp(f"web-{precision}")
        export_web(web_checkpoints["bpe"], folders[precision], precision=precision)
    return folders


def test_the_default_precision_is_one_the_command_line_and_export_web_share():
    import inspect

    from course_tools.web.command import build_parser
    from course_tools.web.export import DEFAULT_PRECISION, PRECISIONS, export_web

    assert DEFAULT_PRECISION in PRECISIONS and DEFAULT_PRECISION != "fp32"
    assert build_parser().parse_args(["c.pt", "out"]).precision == DEFAULT_PRECISION
    assert inspect.signature(export_web).parameters["precision"].default == DEFAULT_PRECISION


@pytest.mark.slow  # exports ONNX graphs
@pytest.mark.parametrize("precision", ["int8", "int10"])
def test_a_rounded_export_stores_every_weight_matrix_once_in_its_planes(precision, rounded_exports, web_exports):
    import onnx
    from onnx import numpy_helper

    folder, bits = rounded_exports[precision], int(precision[3:])
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["precision"] == precision and manifest["quantization"]["bits"] == bits
    assert manifest["quantization"]["session_config"] == SESSION_CONFIG  # what another tool's session needs to match
    assert json.loads((web_exports["bpe"] / "manifest.json").read_text(encoding="utf-8"))["precision"] == "fp32"
    for name in ("encoder.onnx", "decoder_step.onnx"):
        graph = onnx.load(folder / name).graph
        arrays = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
        matrices = {n: a for n, a in arrays.items() if a.ndim == 2 and a.size >= 64 * 64}
        fp32 = [n for n, a in matrices.items() if a.dtype == np.float32]
        assert all("pos" in n or n.startswith("val_") for n in fp32), f"{name}: weights left in fp32: {fp32}"
        assert len(fp32) <= 1, f"{name}: only the positional table stays fp32, found {fp32}"
        tied = [  # its top bits (int8) once; its low plane, past 8 bits, is checked below
            n
            for n, a in matrices.items()
            if a.shape == (manifest["vocab"]["tgt"], manifest["d_model"]) and not n.endswith("_low")
        ]
        assert len(tied) <= 1 and all(arrays[n].dtype == np.int8 for n in tied), f"{name}: the tied matrix: {tied}"
        high = [n for n, a in arrays.items() if a.dtype == np.int8]
        assert high and all(n.endswith("_quantized") for n in high), f"{name}: int8 arrays {high}"
        low = sorted(n for n, a in arrays.items() if a.dtype == np.uint8)
        assert low == (sorted(n.removesuffix("_quantized") + "_low" for n in high) if bits > 8 else []), name
        assert all(int(arrays[n].max()) < 2 ** (bits - 8) for n in low), f"{name}: a low plane past {bits - 8} bits"
        size = (folder / name).stat().st_size
        assert size < 0.4 * (web_exports["bpe"] / name).stat().st_size * (bits / 8), f"{name}: {size} bytes"


@pytest.mark.slow  # exports ONNX graphs
@pytest.mark.parametrize("precision", ["int8", "int10"])
def test_rounded_graphs_stay_close_to_pytorch_and_greedy_mostly_agrees(precision, rounded_exports, web_checkpoints):
    """Rounding moves every number a little: the log-probabilities by well under 0.5, and the greedy loop
    keeps most translations (benchmarks/web_page.py counts them on test2016: docs/results.md)."""
    folder = rounded_exports[precision]
    checkpoint = load_checkpoint(web_checkpoints["bpe"])
    page = {"checkpoint": checkpoint, "encoder": session(folder / "encoder.onnx")}
    page["step"] = session(folder / "decoder_step.onnx")
    test = [de for de, _ in load_pairs("test", web_checkpoints["root"])][:SENTENCES]
    model, same, worst = checkpoint.model.eval(), 0, 0.0
    for src_ids in source_ids(checkpoint, test):
        src = torch.tensor([src_ids])
        limit = min(len(src_ids) + 51, model.config.max_len)
        with torch.no_grad():
            expected = greedy_decode(model, src, padding_mask(src, PAD), limit, BOS, EOS, return_result=True)
        tokens = expected.tokens[0].tolist()
        read = tokens[: tokens.index(EOS)] if EOS in tokens else tokens
        _, steps = run_steps(page, src_ids, read, limit)
        for step, logits in zip(steps, expected.logits[0]):
            worst = max(worst, float(np.abs(step["logits"][0] - logits.numpy()).max()))
        chosen = [int(s["log_probs"][0].argmax()) for s in steps]  # along PyTorch's path (teacher forcing)
        generated = [t for t in tokens[1:] if t != PAD]
        same += chosen[: len(generated)] == generated
    assert worst < 0.5 * 2 ** (8 - int(precision[3:])), f"{precision} logits differ from PyTorch's by {worst:.3f}"
    assert same >= 0.7 * SENTENCES, f"{precision} greedy agrees with PyTorch on {same} of {SENTENCES} sentences"
