"""CTranslate2 beside the course's decoder: ``export-ct2`` (course_tools/engine) and ``translate --engine
ctranslate2`` (transformer_course/engine.py). The reference is the course's own ``greedy_decode`` and
``score_sequences``, on tiny random models of every architecture option and on the two trained fixture models."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from transformer_course.checkpoint import load_checkpoint, save_checkpoint
from transformer_course.data import BOS, EOS, PAD, SPECIALS, Vocab, load_pairs
from transformer_course.decode import decode_sentences, greedy_decode
from transformer_course.masks import padding_mask
from transformer_course.model import ModelConfig, make_model

ctranslate2 = pytest.importorskip("ctranslate2")

from course_tools.engine import export_ct2, model_spec  # noqa: E402
from course_tools.engine.export import check_expressible  # noqa: E402
from transformer_course.cli import main  # noqa: E402
from transformer_course.engine import INSTALL_HINT, engine_ids, load_engine, translate_with_engine  # noqa: E402

from helpers import first_difference, top2_gap  # noqa: E402

# Every option once beside every other (pairwise): LN placement × positions × tying.
VARIANTS = [
    (False, "sinusoidal", "decoder"),
    (True, "learned", "none"),
    (True, "sinusoidal", "all"),
    (False, "learned", "all"),
    (False, "sinusoidal", "none"),
    (True, "learned", "decoder"),
]

# The later switches TransformerSpec expresses (rms_norm, ffn_glu), each with post-LN and pre-LN
SWITCHES = [
    (False, "sinusoidal", "decoder", dict(norm="rms")),
    (True, "learned", "none", dict(ffn="swiglu")),
    (True, "sinusoidal", "all", dict(norm="rms", ffn="swiglu")),
    (False, "learned", "decoder", dict(norm="rms", ffn="swiglu")),
]


def random_checkpoint(path, norm_first: bool, positional: str, tie: str, seed: int = 0, **switches):
    """A tiny model whose every parameter is random, LayerNorms and learned positions included (so a swapped norm
    or a position off by one changes the output), saved with word vocabularies ``w4 …``."""
    torch.manual_seed(seed)
    src_n, tgt_n = 30, 30 if tie == "all" else 26
    model = make_model(
        src_n, tgt_n, N=2, d_model=32, d_ff=64, h=4, dropout=0.0, norm_first=norm_first, positional=positional,
        tie_embeddings=tie, max_len=24, **switches,
    )  # fmt: skip
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif name.endswith("bias") or name.endswith("table"):
                p.copy_(0.5 * torch.randn_like(p))
    model.eval()
    vocab = lambda n, prefix: Vocab(SPECIALS + [f"{prefix}{i}" for i in range(4, n)])
    src_vocab = vocab(src_n, "w")
    tgt_vocab = src_vocab if tie == "all" else vocab(tgt_n, "e")
    save_checkpoint(path, model, model.config, src_vocab, tgt_vocab, rng=False)
    return load_checkpoint(path)


@pytest.mark.slow
@pytest.mark.parametrize("norm_first, positional, tie, switches", [(*v, {}) for v in VARIANTS] + SWITCHES)
def test_random_models_give_the_course_greedy_ids_and_log_probs(tmp_path, norm_first, positional, tie, switches):
    checkpoint = random_checkpoint(tmp_path / "m.pt", norm_first, positional, tie, **switches)
    export_ct2(checkpoint, tmp_path / "ct2")
    engine = load_engine(tmp_path / "ct2", threads=1)
    model, vocab = checkpoint.model, checkpoint.src_vocab
    torch.manual_seed(1)
    differ = []
    for length in (1, 3, 7, 12):
        src = torch.randint(4, len(vocab), (8, length))  # (B, S): random words, PAD/UNK/BOS/EOS left out
        limit = min(length + 51, model.model_config.max_len)  # what translate uses: source + 50, within the table
        course = greedy_decode(model, src, padding_mask(src, PAD), limit, BOS, EOS, return_result=True)
        source = [[vocab.itos[i] for i in row] for row in src.tolist()]
        results = engine.translator.translate_batch(
            source, beam_size=1, max_decoding_length=limit - 1, min_decoding_length=0, return_end_token=True
        )
        for b, result in enumerate(results):
            want = [i for i in course.tokens[b, 1:].tolist() if i != PAD]
            got = [checkpoint.tgt_vocab.stoi[t] for t in result.hypotheses[0]]
            if got != want:
                at = first_difference(got, want)
                differ.append((length, b, at, top2_gap(course.logits[b, at])))
        # the scores of the course's own outputs, token by token: independent of any tie
        targets = [
            [checkpoint.tgt_vocab.itos[i] for i in row[1:].tolist() if i not in (PAD, EOS)] for row in course.tokens
        ]
        scored = engine.translator.score_batch(source, targets)
        for b, s in enumerate(scored):
            ids = [i for i in course.tokens[b, 1:].tolist() if i != PAD]
            course_lp = course.logits[b, : len(ids)].log_softmax(-1).gather(1, torch.tensor(ids)[:, None]).squeeze(1)
            # CTranslate2 appends </s> to every target: one score more where the course stopped at the length limit
            torch.testing.assert_close(torch.tensor(s.log_probs[: len(ids)]), course_lp, atol=1e-4, rtol=0)
    for length, b, at, gap in differ:
        print(f"source length {length}, row {b}: first differs at step {at}, top-2 logit gap {gap:.2e}")
    assert all(gap < 1e-3 for *_, gap in differ), differ  # only a near-tie may flip
    assert len(differ) <= 1


def test_the_spec_refuses_an_option_ctranslate2_cannot_express():
    from dataclasses import replace

    with pytest.raises(ValueError, match=r"positional='rotary'") as err:
        check_expressible(replace(ModelConfig(), positional="rotary"))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("option", [dict(n_kv_heads=2), dict(n_kv_heads=1), dict(positional="rope")], ids=str)
def test_the_spec_refuses_each_later_switch_in_one_line_that_names_it(option):
    from dataclasses import replace

    ((name, value),) = option.items()
    with pytest.raises(ValueError, match=rf"export-ct2 cannot express {name}={value!r}") as err:
        check_expressible(replace(ModelConfig(), **option))
    assert "\n" not in str(err.value)


def test_the_spec_takes_n_kv_heads_equal_to_h_as_multi_head_attention():
    from dataclasses import replace

    check_expressible(replace(ModelConfig(), n_kv_heads=8))


def test_the_spec_refuses_a_decoder_only_model_in_one_line():
    from types import SimpleNamespace

    from transformer_course.model import make_lm

    with pytest.raises(ValueError, match=r"decoder-only") as err:
        model_spec(SimpleNamespace(model=make_lm(20, N=1, d_model=16, d_ff=32, h=2)))
    assert "\n" not in str(err.value)


def test_the_spec_refuses_a_weight_it_cannot_place(tmp_path):
    checkpoint = random_checkpoint(tmp_path / "m.pt", False, "sinusoidal", "decoder")
    checkpoint.model.register_parameter("gate", torch.nn.Parameter(torch.ones(3)))
    with pytest.raises(ValueError, match=r"cannot place the weight gate") as err:
        model_spec(checkpoint)
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_export_claims_its_folder(tmp_path, capsys):
    path = tmp_path / "m.pt"
    random_checkpoint(path, True, "learned", "none")
    assert main(["export-ct2", str(path), "."]) == 1
    assert "is the current folder" in capsys.readouterr().err
    stranger = tmp_path / "notes"
    stranger.mkdir()
    (stranger / "todo.txt").write_text("mine")
    assert main(["export-ct2", str(path), str(stranger)]) == 1
    err = capsys.readouterr().err
    assert "did not write" in err and err.count("\n") == 1
    ours = tmp_path / "ct2"
    assert main(["export-ct2", str(path), str(ours)]) == 0
    assert main(["export-ct2", str(path), str(ours), "--quantization", "int8"]) == 0  # its own folder: replaced
    assert json.loads((ours / "course.json").read_text())["quantization"] == "int8"
    assert sorted(p.name for p in ours.iterdir()) == sorted(
        [
            ".tc-written.json",
            "config.json",
            "course.json",
            "model.bin",
            "source_vocabulary.json",
            "target_vocabulary.json",
        ]
    )


def test_a_folder_that_is_not_an_export_is_one_line(tmp_path, capsys):
    path = tmp_path / "m.pt"
    random_checkpoint(path, False, "sinusoidal", "none")
    for bad in (path, tmp_path / "missing", tmp_path):
        assert main(["translate", "--engine", "ctranslate2", "--checkpoint", str(bad), "Hallo"]) == 1
        err = capsys.readouterr().err
        assert "is not a CTranslate2 export" in err and "export-ct2" in err and err.count("\n") == 1, err


def test_without_ctranslate2_it_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # `import ctranslate2` now fails as if not installed
    path = tmp_path / "m.pt"
    random_checkpoint(path, False, "sinusoidal", "none")
    with pytest.raises(ValueError, match=r'pip install -e "\.\[engine\]"'):
        export_ct2(path, tmp_path / "ct2")
    assert 'pip install -e ".[engine]"' in INSTALL_HINT


# ---------------------------------------------------------------------------------------------------
# The two trained fixture models (words and BPE), on Multi30k's test2016


@pytest.fixture(scope="module")
def ct2_exports(web_checkpoints, tmp_path_factory):
    """Both fixture checkpoints exported: the word model with the command line, the BPE one with export_ct2."""
    folders = {kind: tmp_path_factory.mktemp(f"ct2-{kind}") for kind in ("words", "bpe")}
    assert main(["export-ct2", str(web_checkpoints["words"]), str(folders["words"])]) == 0
    export_ct2(web_checkpoints["bpe"], folders["bpe"])
    return folders


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["words", "bpe"])
def test_translate_with_the_engine_prints_what_translate_prints(web_checkpoints, ct2_exports, kind, capsys):
    sentences = ["Ein Hund läuft durch den Schnee.", "Zwei Männer spielen Fußball auf einer Wiese.", "", "Hallo"]
    for beam in ("1", "4"):
        assert main(["translate", "--checkpoint", str(web_checkpoints[kind]), "--beam", beam, *sentences]) == 0
        course = capsys.readouterr().out.split("\n")
        engine = ["translate", "--engine", "ctranslate2", "--checkpoint", str(ct2_exports[kind]), "--beam", beam]
        assert main([*engine, *sentences]) == 0
        printed = capsys.readouterr().out.split("\n")
        assert len(printed) == len(course) == len(sentences) + 1 and printed[2] == ""  # one line each, "" for ""
        if beam == "1":  # greedy: the same words; beam 4 stops differently (the BLEU test below)
            assert printed == course
    assert translate_with_engine(ct2_exports[kind], []) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["words", "bpe"])
def test_greedy_agrees_token_for_token_on_test2016(web_checkpoints, ct2_exports, kind):
    checkpoint = load_checkpoint(web_checkpoints[kind])
    sources = [s for s, _ in load_pairs("test", web_checkpoints["root"])]
    assert len(sources) == 1000
    torch.set_num_threads(1)
    course = decode_sentences(checkpoint.model, checkpoint.src_vocab, sources, tokenizer=checkpoint.tokenizer)
    engine = engine_ids(load_engine(ct2_exports[kind], threads=1), sources)
    differ = [i for i, ((_, a), (_, b)) in enumerate(zip(course, engine)) if [t for t in a if t != PAD] != b]
    for i in differ:  # explain each: the course's top-2 logit gap where the two first part
        words, want = course[i]
        want = [t for t in want if t != PAD]
        at = first_difference(want[1:], engine[i][1][1:])
        src = torch.tensor([checkpoint.src_vocab.encode(words)])
        out = greedy_decode(checkpoint.model, src, None, len(want) + 1, BOS, EOS, return_result=True)
        print(f"{kind} sentence {i}: differs at step {at}, top-2 logit gap {top2_gap(out.logits[0, at]):.2e}")
    assert len(differ) <= 10, f"{len(differ)} of 1000 greedy translations differ: {differ}"


@pytest.mark.slow
def test_beam_4_bleu_agrees_within_a_tenth(web_checkpoints, ct2_exports):
    """The engine's k finished hypotheses ranked by the course's GNMT penalty (gnmt_best): the searches still stop
    differently, so translations may differ; corpus BLEU must not by more than 0.1."""
    from transformer_course.decode import translate
    from transformer_course.evaluate import sacre_bleu

    checkpoint = load_checkpoint(web_checkpoints["words"])
    pairs = load_pairs("test", web_checkpoints["root"])
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    torch.set_num_threads(1)
    course = translate(checkpoint, sources, beam_size=4)
    engine = translate_with_engine(load_engine(ct2_exports["words"], threads=1), sources, beam_size=4)
    course_bleu, engine_bleu = sacre_bleu(course, references)[0].score, sacre_bleu(engine, references)[0].score
    same = sum(a == b for a, b in zip(course, engine))
    print(f"beam 4: course BLEU {course_bleu:.2f}, CTranslate2 {engine_bleu:.2f}; {same} of 1000 identical")
    assert abs(course_bleu - engine_bleu) <= 0.1


def test_gnmt_best_picks_what_gnmts_penalty_ranks_first():
    """CTranslate2's scores are log P / |Y|^α; the pick is the hypothesis with the best log P / ((5 + |Y|) / 6)^α,
    computed here from log P directly (brute force), for α from 0 to 2 and hypotheses of 1 to 9 tokens."""
    from transformer_course.engine import gnmt_best

    g = torch.Generator().manual_seed(0)
    for alpha in (0.0, 0.6, 1.0, 2.0):
        for _ in range(200):
            lengths = torch.randint(1, 10, (4,), generator=g).tolist()
            log_p = (-torch.rand(4, generator=g) * 8).tolist()
            hypotheses = [["w"] * (n - 1) + ["</s>"] for n in lengths]
            scores = [lp / n**alpha for lp, n in zip(log_p, lengths)]
            gnmt = [lp / ((5 + n) / 6) ** alpha for lp, n in zip(log_p, lengths)]
            assert gnmt_best(hypotheses, scores, alpha) == gnmt.index(max(gnmt))
