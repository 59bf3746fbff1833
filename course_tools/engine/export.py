"""``export_ct2``: a course checkpoint → a CTranslate2 model folder, read by :mod:`transformer_course.engine`.

    python -m transformer_course export-ct2 runs/multi30k-cpu/best.pt engine/ [--quantization int8]

CTranslate2's ``TransformerSpec`` describes the architecture of the paper; the course's parameters fill it so
(read beside ``model.py``, ``layers.py``, ``attention.py`` and CTranslate2's ``converters/opennmt_py.py``):

===============================================  =============================================================
course                                           CTranslate2 spec
===============================================  =============================================================
``src_embed.lut.weight`` (× √d_model)            ``encoder.embeddings.weight`` (``scale_embeddings`` = True)
``src_pos.table``, sinusoidal or learned         ``encoder.position_encodings.encodings`` (always written: the
                                                 engine's own sinusoids are [sin | cos], the course interleaves)
``…self_attn.in_proj`` (rows W^Q, W^K, W^V)      ``…self_attention.linear[0]`` (fused, the same order)
``…self_attn.out_proj``                          ``…self_attention.linear[1]``
``…cross_attn.in_proj[:d]`` / ``[d:]``           ``…attention.linear[0]`` (W^Q) / ``linear[1]`` (W^K, W^V)
``…cross_attn.out_proj``                         ``…attention.linear[2]``
``…sublayer.0/1/2.norm``                         ``…self_attention`` / ``attention`` / ``ffn`` ``.layer_norm``
                                                 (``pre_norm`` = ``norm_first``: before the sub-layer or after
                                                 the residual sum)
``…feed_forward.w_1``, ``w_2``                   ``…ffn.linear_0``, ``linear_1`` (ReLU)
``ffn="swiglu"``: ``w_1``, ``w_3``, ``w_2``      ``…ffn.linear_0`` (Swish), ``linear_0_noact``, ``linear_1``
                                                 (``ffn_glu``)
``norm="rms"``: ``…norm.weight``                 ``…layer_norm.gamma`` (``rms_norm``: no β)
``encoder.norm``, ``decoder.norm`` (pre-LN)      ``encoder.layer_norm``, ``decoder.layer_norm``
``generator.proj``                               ``decoder.projection``
===============================================  =============================================================

A tied matrix (``tie_embeddings`` "decoder" or "all") is the same array in both places; CTranslate2 stores it once.
Every parameter of the checkpoint must land somewhere: a model option this map does not know is refused in one
line naming it, as is a weight left over: grouped-query attention (``n_kv_heads`` < h) and rotary positions, which
``TransformerSpec.from_config`` does not take for an encoder-decoder, and a decoder-only LM.

Writes into ``OUT`` (claimed as ``export-web`` claims its folder: :func:`course_tools.folders.claim_folder`):
``model.bin``, ``config.json`` and the vocabularies (``shared_vocabulary.json``, or ``source_`` and
``target_vocabulary.json``), :data:`~transformer_course.engine.COURSE_FILE` and, for BPE,
:data:`~transformer_course.engine.TOKENIZER_FILE`. Before anything reaches ``OUT`` the export checks itself:
CTranslate2 scores the course's greedy translation of one sentence and must give the course's log-probabilities.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import fields
from pathlib import Path

import torch

from transformer_course.checkpoint import Checkpoint, load_checkpoint
from transformer_course.data import BOS, EOS, PAD
from transformer_course.engine import (
    COURSE_FILE,
    FORMAT,
    TOKENIZER_FILE,
    engine_ids,
    import_ctranslate2,
    load_engine,
)
from transformer_course.files import crash_point
from transformer_course.layers import LayerNorm, RMSNorm
from transformer_course.model import GPT, ModelConfig

from ..folders import claim_folder, plan_writes, replace_owned_files

__all__ = ["COMMAND", "QUANTIZATIONS", "check_export", "export_ct2", "model_spec"]

COMMAND = "export-ct2"  # the name its manifest records
QUANTIZATIONS = ("float32", "int8")  # --quantization: the weights' type in model.bin
CHECK_TOLERANCE = 1e-3  # fp32: CTranslate2's log P of each token against the course's (measured ~1e-6)
CHECK_SENTENCE = "Ein Hund läuft durch den Schnee."
# The ModelConfig fields this map knows, and the values it can express. dropout does nothing at inference;
# fast_dropout neither (the same in eval mode); max_len sizes the position tables it writes.
EXPRESSIBLE = {
    "norm_first": (False, True),
    "positional": ("sinusoidal", "learned"),
    "tie_embeddings": ("none", "decoder", "all"),
    # the later switches: TransformerSpec's rms_norm and ffn_glu (with the Swish activation) express RMSNorm and
    # SwiGLU; its from_config has no grouped-query attention or rotary positions for an encoder-decoder
    "norm": ("layer", "rms"),
    "ffn": ("relu", "swiglu"),
    "n_kv_heads": (None,),  # or h itself: multi-head attention
}
IGNORED_AT_INFERENCE = {"N", "d_model", "d_ff", "h", "max_len", "dropout", "attention_dropout", "ffn_dropout"}
IGNORED_AT_INFERENCE |= {"fast_dropout"}


def check_expressible(c: ModelConfig) -> None:
    """One ValueError naming the first model option CTranslate2's TransformerSpec (as this map fills it) cannot
    express: an unknown field (a feature added after this map) or a value outside :data:`EXPRESSIBLE`."""
    for f in fields(c):
        value = getattr(c, f.name)
        if f.name in IGNORED_AT_INFERENCE or (f.name == "n_kv_heads" and value == c.h):
            continue
        if f.name not in EXPRESSIBLE:
            raise ValueError(
                f"export-ct2 cannot express the model option {f.name}={value!r}: its map to CTranslate2's "
                "TransformerSpec (course_tools/engine/export.py) does not know it; translate with the course's decoder"
            )
        if value not in EXPRESSIBLE[f.name]:
            raise ValueError(
                f"export-ct2 cannot express {f.name}={value!r}: CTranslate2's TransformerSpec takes "
                f"{f.name} in {list(EXPRESSIBLE[f.name])}; translate with the course's decoder"
            )


class Weights:
    """The model's tensors by name, as float32 numpy arrays; :meth:`take` marks each one used, and
    :meth:`left_over` names those no part of the spec took."""

    def __init__(self, model: torch.nn.Module) -> None:
        # copies: CTranslate2's int8 quantization rewrites arrays in place, and a tensor's .numpy() shares its memory
        self.arrays = {name: t.detach().float().cpu().numpy().copy() for name, t in model.state_dict().items()}
        self.used: set[str] = set()

    def take(self, name: str):
        self.used.add(name)
        return self.arrays[name]

    def left_over(self) -> list[str]:
        return sorted(set(self.arrays) - self.used)


def _linear(spec, weights: Weights, scope: str, rows: slice = slice(None)) -> None:
    """An ``nn.Linear`` (or rows of it: one of the fused W^Q | W^K, W^V) → a LinearSpec: weight (out, in), bias."""
    spec.weight = weights.take(f"{scope}.weight")[rows]  # (out, in), the layout CTranslate2 reads
    spec.bias = weights.take(f"{scope}.bias")[rows]  # (out,)


def _layer_norm(spec, weights: Weights, scope: str) -> None:
    spec.gamma = weights.take(f"{scope}.weight")  # (d_model,)
    if hasattr(spec, "beta"):  # RMSNorm has no β
        spec.beta = weights.take(f"{scope}.bias")


def _positions(spec, weights: Weights, pos: torch.nn.Module, scope: str) -> None:
    if isinstance(pos.table, torch.nn.Parameter):  # learned: a trained vector per position
        spec.encodings = weights.take(f"{scope}.table")  # (max_len, d_model)
    else:  # sinusoidal: a buffer, not in the state dict; the course's interleaved table
        spec.encodings = pos.table.float().cpu().numpy().copy()  # (max_len, d_model)


def model_spec(checkpoint: Checkpoint):
    """The filled ``ctranslate2.specs.TransformerSpec`` of a loaded checkpoint (vocabularies registered, not yet
    validated). A model option or a weight it cannot place is one ValueError naming it."""
    ctranslate2 = import_ctranslate2()
    model = checkpoint.model
    if isinstance(model, GPT):
        raise ValueError("export-ct2 exports a translation model (encoder-decoder); a decoder-only LM has no encoder")
    c = model.model_config
    check_expressible(c)
    eps = {m.eps for m in model.modules() if isinstance(m, (LayerNorm, RMSNorm))}
    if len(eps) != 1:
        raise ValueError(f"export-ct2 needs one LayerNorm epsilon for the whole model, got {sorted(eps)}")
    weights = Weights(model)
    glu, rms = c.ffn == "swiglu", c.norm == "rms"
    activation = ctranslate2.specs.Activation.SWISH if glu else ctranslate2.specs.Activation.RELU
    spec = ctranslate2.specs.TransformerSpec.from_config(
        (c.N, c.N), c.h, pre_norm=c.norm_first, activation=activation, ffn_glu=glu, rms_norm=rms
    )
    spec.config.layer_norm_epsilon = eps.pop()  # CTranslate2 defaults to 1e-6; the course's LayerNorm uses 1e-5
    d = c.d_model
    for side, stack in (("encoder", spec.encoder), ("decoder", spec.decoder)):
        embed = "src" if side == "encoder" else "tgt"
        embeddings = stack.embeddings[0] if side == "encoder" else stack.embeddings
        embeddings.weight = weights.take(f"{embed}_embed.lut.weight")  # (vocab, d_model), × √d_model when read
        stack.scale_embeddings = True
        _positions(stack.position_encodings, weights, getattr(model, f"{embed}_pos"), f"{embed}_pos")
        if c.norm_first:
            _layer_norm(stack.layer_norm, weights, f"{side}.norm")
        for i, layer in enumerate(stack.layer):
            scope = f"{side}.layers.{i}"
            _linear(layer.self_attention.linear[0], weights, f"{scope}.self_attn.in_proj")  # (3·d_model, d_model)
            _linear(layer.self_attention.linear[1], weights, f"{scope}.self_attn.out_proj")
            _layer_norm(layer.self_attention.layer_norm, weights, f"{scope}.sublayer.0.norm")
            if side == "decoder":
                _linear(layer.attention.linear[0], weights, f"{scope}.cross_attn.in_proj", slice(0, d))  # W^Q
                _linear(layer.attention.linear[1], weights, f"{scope}.cross_attn.in_proj", slice(d, None))  # W^K, W^V
                _linear(layer.attention.linear[2], weights, f"{scope}.cross_attn.out_proj")
                _layer_norm(layer.attention.layer_norm, weights, f"{scope}.sublayer.1.norm")
            _linear(layer.ffn.linear_0, weights, f"{scope}.feed_forward.w_1")  # (d_ff, d_model); SwiGLU: the gate
            if glu:
                _linear(layer.ffn.linear_0_noact, weights, f"{scope}.feed_forward.w_3")  # the gated value
            _linear(layer.ffn.linear_1, weights, f"{scope}.feed_forward.w_2")  # (d_model, d_ff)
            _layer_norm(layer.ffn.layer_norm, weights, f"{scope}.sublayer.{2 if side == 'decoder' else 1}.norm")
    _linear(spec.decoder.projection, weights, "generator.proj")  # (tgt_vocab, d_model), tied or not
    left = weights.left_over()
    if left:
        raise ValueError(
            f"export-ct2 cannot place the weight {left[0]} (and {len(left) - 1} more) in CTranslate2's "
            "TransformerSpec: the model has a part this map does not know; translate with the course's decoder"
        )
    spec.register_source_vocabulary(list(checkpoint.src_vocab.itos))
    spec.register_target_vocabulary(list(checkpoint.tgt_vocab.itos))
    return spec


def vocabulary_files(checkpoint: Checkpoint) -> tuple[str, ...]:
    """The vocabulary files CTranslate2 writes: one when both sides are the same list."""
    if checkpoint.src_vocab.itos == checkpoint.tgt_vocab.itos:
        return ("shared_vocabulary.json",)
    return ("source_vocabulary.json", "target_vocabulary.json")


def check_export(checkpoint: Checkpoint, folder: str | Path, quantization: str) -> float:
    """CTranslate2 scores the course's greedy translation of :data:`CHECK_SENTENCE`; returns the largest
    difference of a token's log P. fp32 must agree within :data:`CHECK_TOLERANCE` (an int8 export is only
    reported: its weights are rounded on purpose)."""
    from transformer_course.decode import greedy_decode
    from transformer_course.masks import padding_mask

    engine = load_engine(folder, threads=1)
    [(words, _)] = engine_ids(engine, [CHECK_SENTENCE])
    model = checkpoint.model
    src = torch.tensor([checkpoint.src_vocab.encode(words)])  # (1, S)
    src_mask = padding_mask(src, PAD)  # (1, 1, 1, S)
    limit = min(src.size(1) + 51, model.model_config.max_len)
    result = greedy_decode(model, src, src_mask, limit, BOS, EOS, return_result=True)
    ids = [i for i in result.tokens[0, 1:].tolist() if i != PAD]  # w1 … </s> (PAD dropped)
    course = result.logits[0, : len(ids)].log_softmax(-1).gather(1, torch.tensor(ids)[:, None]).squeeze(1)  # (T,)
    target = [checkpoint.tgt_vocab.itos[i] for i in ids if i != EOS]
    [scored] = engine.translator.score_batch([words], [target])
    engine_log_probs = torch.tensor(scored.log_probs)  # (T,): the words, then </s> when it is there
    n = min(len(engine_log_probs), len(course))
    worst = float((engine_log_probs[:n] - course[:n]).abs().max())
    if quantization == "float32" and worst > CHECK_TOLERANCE:
        raise ValueError(
            f"CTranslate2 scores the course's translation of {CHECK_SENTENCE!r} {worst:.2e} away from the course "
            f"(more than {CHECK_TOLERANCE:g}); the export is wrong, please report it with the checkpoint's config"
        )
    return worst


def export_ct2(checkpoint: str | Path | Checkpoint, out: str | Path, quantization: str = "float32") -> Path:
    """Export ``checkpoint`` (a path or a loaded :class:`~transformer_course.checkpoint.Checkpoint`) to the
    CTranslate2 model folder ``out``; returns ``out``. ``out`` must be a new or empty folder, or one this command
    wrote before; anything else is refused before any work."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"--quantization must be one of {list(QUANTIZATIONS)}, got {quantization!r}")
    import_ctranslate2()  # missing: one line, before any work
    source = checkpoint.path if isinstance(checkpoint, Checkpoint) else Path(checkpoint)
    written = claim_folder(out, COMMAND, protected=[source])  # '', '.', a repository, a stranger's folder
    out = Path(out)
    if not isinstance(checkpoint, Checkpoint):
        checkpoint = load_checkpoint(checkpoint)
    checkpoint.model.cpu().eval()
    names = ("model.bin", "config.json", *vocabulary_files(checkpoint), COURSE_FILE)
    names += (TOKENIZER_FILE,) if checkpoint.tokenizer is not None else ()
    plan_writes(out, names, written)  # nothing it did not write is replaced, nothing written through a link
    spec = model_spec(checkpoint)
    spec.validate()
    spec.optimize(quantization=quantization)
    c = checkpoint.config
    course = {
        "format": FORMAT,
        "checkpoint": source.name,
        "step": checkpoint.step,
        "src_lang": checkpoint.src_lang,
        "tgt_lang": checkpoint.tgt_lang,
        "tokenizer": "bpe" if checkpoint.tokenizer is not None else "words",
        "tokenizer_fingerprint": checkpoint.tokenizer.fingerprint() if checkpoint.tokenizer is not None else None,
        "max_len": c.max_len,
        "length_penalty": c.length_penalty,
        "quantization": quantization,
        "config": c.to_dict(),
    }
    with tempfile.TemporaryDirectory(prefix="tc-ct2-") as tmp:  # outside OUT: a kill cannot leave it there
        spec.save(tmp)
        if checkpoint.tokenizer is not None:
            Path(tmp, TOKENIZER_FILE).write_text(checkpoint.tokenizer.to_json(), encoding="utf-8")
        Path(tmp, COURSE_FILE).write_text(json.dumps(course, ensure_ascii=False, indent=1), encoding="utf-8")
        made = sorted(p.name for p in Path(tmp).iterdir())
        if made != sorted(names):
            raise ValueError(f"CTranslate2 wrote {made}, expected {sorted(names)}; please report it")
        course["largest_difference_from_course"] = check_export(checkpoint, tmp, quantization)
        digests = {name: hashlib.sha256(Path(tmp, name).read_bytes()).hexdigest() for name in names}
        course["sha256"] = {name: digest for name, digest in digests.items() if name != COURSE_FILE}
        Path(tmp, COURSE_FILE).write_text(json.dumps(course, ensure_ascii=False, indent=1), encoding="utf-8")
        contents = {name: Path(tmp, name).read_bytes() for name in names}
    crash_point(COMMAND)  # a test hook (files.crash_point): the model made and checked, nothing yet in OUT
    replace_owned_files(out, COMMAND, written, contents)
    return out
