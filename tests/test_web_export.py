"""The graphs the browser runs equal the PyTorch model (issue 24): onnxruntime (Python) on the exported encoder
and decoder step gives the model's own numbers — memory, logits, log-probabilities, every attention weight of
every layer and head — on 100 test2016 sentences, and its greedy loop over the fixed-length key/value cache gives
the very tokens ``greedy_decode`` gives, with and without the package's cache."""

import hashlib
import json

import numpy as np
import pytest
import torch

from transformer_course.checkpoint import load_checkpoint
from transformer_course.data import BOS, EOS, PAD, load_pairs
from transformer_course.decode import greedy_decode
from transformer_course.masks import padding_mask
from transformer_course.viz import capture_attention
from transformer_course.web import graphs
from transformer_course.web.tokenizers import js_regex

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

SENTENCES = 100


def source_ids(checkpoint, sentences):
    from transformer_course.data import tokenize_many

    if checkpoint.tokenizer is not None:
        return checkpoint.tokenizer.encode_many(sentences, ids=True)
    return [checkpoint.src_vocab.encode(words) for words in tokenize_many(sentences, checkpoint.src_lang)]


@pytest.fixture(scope="module", params=["words", "bpe"])
def exported(request, web_checkpoints, web_exports):
    kind = request.param
    checkpoint = load_checkpoint(web_checkpoints[kind])
    folder = web_exports[kind]
    sessions = [ort.InferenceSession(str(folder / name)) for name in ("encoder.onnx", "decoder_step.onnx")]
    test = [de for de, _ in load_pairs("test", web_checkpoints["root"])][:SENTENCES]
    return {
        "checkpoint": checkpoint,
        "folder": folder,
        "encoder": sessions[0],
        "step": sessions[1],
        "ids": source_ids(checkpoint, test),
    }


def run_steps(exported, src_ids, tokens, cache_len):
    """The page's loop in Python: feed ``tokens`` one per step through the decoder-step graph; every output."""
    model = exported["checkpoint"].model
    c = model.config
    memory, encoder_attention, cross_keys, cross_values = exported["encoder"].run(None, {"src": np.array([src_ids])})
    keys = np.zeros((c.N, 1, c.h, cache_len, c.d_model // c.h), np.float32)
    values, steps = keys.copy(), []
    for position, token in enumerate(tokens):
        feed = {
            "token": np.array([[token]]),
            "position": np.array([position]),
            "self_keys": keys,
            "self_values": values,
        }
        out = dict(
            zip(
                graphs.STEP_OUTPUTS,
                exported["step"].run(
                    graphs.STEP_OUTPUTS, {**feed, "cross_keys": cross_keys, "cross_values": cross_values}
                ),
            )
        )
        keys, values = out["new_self_keys"], out["new_self_values"]
        steps.append(out)
    return (memory, encoder_attention, cross_keys, cross_values), steps


def greedy(exported, src_ids):
    """Greedy decoding with the exported graphs, as page.js does it: the argmax of log_probs until </s>."""
    limit = min(len(src_ids) + 51, exported["checkpoint"].config.max_len)
    _, _, cross_keys, cross_values = exported["encoder"].run(None, {"src": np.array([src_ids])})
    c = exported["checkpoint"].config
    keys = np.zeros((c.N, 1, c.h, limit, c.d_model // c.h), np.float32)
    values, ys = keys.copy(), [BOS]
    for position in range(limit - 1):
        feed = {
            "token": np.array([[ys[-1]]]),
            "position": np.array([position]),
            "self_keys": keys,
            "self_values": values,
        }
        log_probs, keys, values = exported["step"].run(
            ["log_probs", "new_self_keys", "new_self_values"],
            {**feed, "cross_keys": cross_keys, "cross_values": cross_values},
        )
        ys.append(int(log_probs[0].argmax()))
        if ys[-1] == EOS:
            break
    return ys


def close(actual, expected, what):
    torch.testing.assert_close(torch.as_tensor(actual), expected.float(), msg=lambda m: f"{what}: {m}")


def test_the_encoder_graph_gives_the_models_memory_attention_and_cross_keys_values(exported):
    model = exported["checkpoint"].model
    for src_ids in exported["ids"]:
        src = torch.tensor([src_ids])
        with torch.no_grad():
            memory = model.encode(src, padding_mask(src, PAD))  # the package's fast path
            cache = model.new_cache()
            model.decode(memory, padding_mask(src, PAD), torch.tensor([[BOS]]), None, cache)  # fills the cross caches
        capture = capture_attention(model, src_ids, [BOS])
        got_memory, got_attention, got_keys, got_values = exported["encoder"].run(None, {"src": np.array([src_ids])})
        close(got_memory, memory, "memory")
        close(got_attention, torch.stack(capture.encoder), "encoder self-attention")  # (N, h, S, S)
        close(got_keys, torch.stack([layer.cross_attn.key for layer in cache.layers]), "cross-attention keys")
        close(got_values, torch.stack([layer.cross_attn.value for layer in cache.layers]), "cross-attention values")


def test_each_decoder_step_gives_the_logits_of_the_cached_and_the_uncached_pytorch_decoder(exported):
    model = exported["checkpoint"].model
    for src_ids in exported["ids"]:
        src = torch.tensor([src_ids])
        limit = min(len(src_ids) + 51, model.config.max_len)
        cached = greedy_decode(model, src, padding_mask(src, PAD), limit, BOS, EOS, use_cache=True, return_result=True)
        uncached = greedy_decode(
            model, src, padding_mask(src, PAD), limit, BOS, EOS, use_cache=False, return_result=True
        )
        assert cached.tokens.tolist() == uncached.tokens.tolist()
        torch.testing.assert_close(cached.logits, uncached.logits)  # the package's cache changes nothing
        tokens = cached.tokens[0].tolist()
        _, steps = run_steps(exported, src_ids, tokens[: cached.logits.size(1)], limit)
        close(np.concatenate([s["logits"] for s in steps]), uncached.logits[0], "logits")
        close(np.concatenate([s["log_probs"] for s in steps]), uncached.logits[0].log_softmax(-1), "log_probs")


def test_each_decoder_step_gives_every_decoder_and_cross_attention_weight_of_the_teacher_forced_model(exported):
    model = exported["checkpoint"].model
    for src_ids in exported["ids"]:
        src = torch.tensor([src_ids])
        limit = min(len(src_ids) + 51, model.config.max_len)
        tokens = greedy_decode(model, src, padding_mask(src, PAD), limit, BOS, EOS)[0].tolist()
        read = tokens[: tokens.index(EOS)] if EOS in tokens else tokens  # what the decoder read: <s> y1 … yn
        capture = capture_attention(model, src_ids, read)  # one pass over the whole target, causal mask, no cache
        _, steps = run_steps(exported, src_ids, read, limit)
        T = len(read)
        decoder = np.stack([s["decoder_attention"][:, :, 0, :T] for s in steps], axis=2)  # (N, h, T, T)
        cross = np.stack([s["cross_attention"][:, :, 0] for s in steps], axis=2)  # (N, h, T, S)
        close(decoder, torch.stack(capture.decoder), "decoder self-attention")
        close(cross, torch.stack(capture.cross), "cross-attention")
        assert all((s["decoder_attention"][:, :, 0, p + 1 :] == 0).all() for p, s in enumerate(steps))  # slots ahead


def test_greedy_decoding_with_the_graphs_gives_greedy_decodes_tokens(exported):
    model = exported["checkpoint"].model
    for src_ids in exported["ids"]:
        src = torch.tensor([src_ids])
        limit = min(len(src_ids) + 51, model.config.max_len)
        expected = greedy_decode(model, src, padding_mask(src, PAD), limit, BOS, EOS)[0].tolist()
        assert greedy(exported, src_ids) == expected


def test_the_graphs_take_a_one_token_sentence_and_a_full_positional_table(tmp_path):
    """The edges of the dynamic dimensions: S = 1 and S = max_len, a cache as long as the table, the last slot."""
    from transformer_course import make_model
    from transformer_course.web import export_graphs

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


def test_the_manifest_describes_the_model_and_every_file(exported):
    folder, checkpoint = exported["folder"], exported["checkpoint"]
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    c = checkpoint.config
    assert manifest["format"] == "transformer_course/web-v1"
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
