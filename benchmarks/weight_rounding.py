"""How many greedy translations a rounding of the weights changes: the question behind the explorer's int8 page.

    python benchmarks/weight_rounding.py CHECKPOINT [--root data] [--threads 2] [--calibration 500] [--sensitivity]
        [--record RUN]

Every weight matrix of the model (the embeddings, the tied output layer, attention and FFN projections; not the
positional table) is rounded to a grid and dequantized again, in PyTorch, and the whole of test2016 is translated
greedily (``translate``) by the rounded model. Printed per scheme: how many translations differ from the fp32
model's, and the sacreBLEU change.

- ``per-tensor 8``: one symmetric scale per matrix, 8 bits (what a single-scale int8 export stores);
- ``per-channel 8``: one scale per output channel, 8 bits (what ``export-web``'s int8 page stores, with the
  activations in fp32);
- ``per-channel 9``, ``10``, ``11``, ``12``: the same with more bits, each halving the rounding error: how the count
  scales with the error (``export-web --precision int10`` and ``int12`` store such pages);
- ``GPTQ 8``: per-channel 8 bits, each matrix's columns rounded in turn with the error pushed onto the columns
  not yet rounded, weighted by the inputs the layer sees (Frantar et al., ICLR 2023, "GPTQ"); its inputs are
  collected while the fp32 model translates the first ``--calibration`` training sentences (never test);
- ``per-group-64 8`` and ``per-group-32 8``: 8 bits, one scale per run of 64 (32) columns within each row, so an
  outlier widens the grid of its group only: one fp32 scale per 64 (32) int8 numbers, 6 % (13 %) more bytes;
- ``GPTQ per-group-32 8``: GPTQ's rounding on the per-group-32 grid.

``--sensitivity`` asks where the changes come from (about 40 more translations of test2016):

- ``alone``: each matrix rounded per channel to 8 bits on its own, the rest fp32; the largest count over the
  matrices, and their sum (each matrix's count is recorded one level down, under ``alone``);
- ``fp16 output layer``: per-channel 8 with the output layer (tied to the target embedding) kept in float16;
- ``fp16 sensitive``: per-channel 8 with the matrices that change the most translations per parameter alone kept
  in float16, up to 1.4 million parameters (what the page's 20 MiB could carry beside the rest in int8).

``--record RUN`` writes the counts as the run RUN of docs/results.json (``--results FILE`` names another file).
"""

from __future__ import annotations

import argparse
import copy
import os
import time

import torch
from torch import Tensor, nn

from transformer_course.checkpoint import load_checkpoint
from transformer_course.data import load_pairs
from transformer_course.decode import translate
from transformer_course.evaluate import sacre_bleu


def matrices(model: nn.Module) -> dict[str, nn.Parameter]:
    """The weight matrices a quantized export stores: every 2-D parameter but the positional table, once."""
    return {n: p for n, p in model.named_parameters() if p.ndim == 2 and "pos" not in n}


def round_to_grid(weight: Tensor, scale: Tensor, bits: int) -> Tensor:
    """Symmetric rounding: ``weight`` to the nearest multiple of ``scale``, within ±(2^(bits−1) − 1) steps."""
    top = 2 ** (bits - 1) - 1
    return (weight / scale).round().clamp(-top, top) * scale


def scales(weight: Tensor, bits: int, per_channel: bool, group: int | None = None) -> Tensor:
    """max |w| / (2^(bits−1) − 1), per row (an output channel of ``x @ W.T``) or over the whole matrix; with
    ``group``, per run of ``group`` columns within each row (the scale repeated over its columns)."""
    top = 2 ** (bits - 1) - 1
    if group is not None:
        rows, columns = weight.shape
        if columns % group:
            raise ValueError(f"a group of {group} columns does not divide a row of {columns}: choose a divisor")
        largest = weight.abs().reshape(rows, columns // group, group).amax(dim=2, keepdim=True)
        return (largest / top).clamp_min(1e-12).expand(rows, columns // group, group).reshape(rows, columns)
    largest = weight.abs().amax(dim=1, keepdim=True) if per_channel else weight.abs().max().expand(weight.size(0), 1)
    return (largest / top).clamp_min(1e-12)


def gptq(weight: Tensor, hessian: Tensor, scale: Tensor, bits: int, damp: float = 0.01) -> Tensor:
    """GPTQ's rounding of ``weight`` (out, in) on a fixed per-row grid, for inputs whose second moment is
    ``hessian`` (in, in): column i is rounded, and its error, scaled by the inverse Hessian's Cholesky factor, is
    taken off the columns after it (Frantar et al., 2023, Algorithm 1, without the lazy batches)."""
    w, h = weight.double().clone(), hessian.double().clone()
    dead = h.diagonal() == 0  # an input that was always 0: its column does not matter
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    h += damp * h.diagonal().mean() * torch.eye(h.size(0), dtype=h.dtype)
    u = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(h)), upper=True)
    out, scale = torch.zeros_like(w), scale.double()
    for i in range(w.size(1)):
        column_scale = scale if scale.size(1) == 1 else scale[:, i : i + 1]  # a row's scale, or its group's
        out[:, i] = round_to_grid(w[:, i : i + 1], column_scale, bits)[:, 0]
        error = (w[:, i] - out[:, i]) / u[i, i]
        w[:, i + 1 :] -= error[:, None] * u[i, i + 1 :][None, :]
    return out.to(weight.dtype)


def input_moments(checkpoint, sentences: list[str]) -> dict[str, list[tuple[slice, Tensor]]]:
    """For each weight matrix, the second moment X^T X / n of the inputs its rows see while the model translates
    ``sentences`` greedily: per block of rows (a cross-attention's W^Q rows see the decoder, its W^K, W^V rows the
    memory). A matrix shared by two modules (the tied output layer) gets the output layer's."""
    model = checkpoint.model.eval()
    sums: dict[tuple[str, int | None, int | None], list] = {}  # (matrix, first row, end row): [X^T X, n]

    def add(name: str, rows: slice, x: Tensor) -> None:
        x = x.detach().reshape(-1, x.size(-1)).double()
        entry = sums.setdefault((name, rows.start, rows.stop), [0.0, 0])
        entry[0], entry[1] = entry[0] + x.T @ x, entry[1] + x.size(0)

    hooks, names = [], {id(p): n for n, p in matrices(model).items()}
    for module_name, module in model.named_modules():
        if hasattr(module, "in_proj") and isinstance(module.in_proj, nn.Linear):
            name, d = names[id(module.in_proj.weight)], module.in_proj.in_features

            def attention(_, args, kwargs, name=name, d=d, cross="cross" in module_name):
                query = args[0]
                key = args[1] if len(args) > 1 else kwargs.get("key")
                if not cross:
                    add(name, slice(None), query)
                    return
                add(name, slice(0, d), query)
                if key is not None:  # the memory's keys and values are projected once, at the first step
                    add(name, slice(d, None), key)

            hooks.append(module.register_forward_pre_hook(attention, with_kwargs=True))
        elif isinstance(module, nn.Linear) and not module_name.endswith("in_proj"):
            name = names[id(module.weight)]
            hooks.append(module.register_forward_pre_hook(lambda _, args, name=name: add(name, slice(None), args[0])))
    try:
        translate(checkpoint, sentences, 1)
    finally:
        for hook in hooks:
            hook.remove()
    moments: dict[str, list[tuple[slice, Tensor]]] = {}
    for (name, start, stop), (total, n) in sums.items():
        moments.setdefault(name, []).append((slice(start, stop), total / n))
    return moments


def rounded_model(
    checkpoint,
    bits: int = 8,
    per_channel: bool = True,
    moments: dict | None = None,
    half: frozenset[str] = frozenset(),
    only: set[str] | None = None,
    group: int | None = None,
) -> nn.Module:
    """A copy of the checkpoint's model with every weight matrix rounded (GPTQ where ``moments`` has its inputs),
    those in ``half`` to float16 instead, and, when ``only`` is given, no other matrix rounded at all."""
    model = copy.deepcopy(checkpoint.model).eval()
    with torch.no_grad():
        for name, weight in matrices(model).items():
            if name in half:
                weight.copy_(weight.half().float())
                continue
            if only is not None and name not in only:
                continue
            scale = scales(weight, bits, per_channel, group)
            if moments is not None and name in moments:
                for rows, hessian in moments[name]:
                    weight[rows] = gptq(weight[rows], hessian, scale[rows], bits)
            else:
                weight.copy_(round_to_grid(weight, scale, bits))
    return model


def sensitivity(checkpoint, changed, budget: int = 1_400_000) -> dict:
    """Where the per-channel 8-bit changes come from (the module's docstring); ``changed(model)`` counts."""
    sizes = {name: p.numel() for name, p in matrices(checkpoint.model).items()}
    alone = {name: changed(rounded_model(checkpoint, only={name})) for name in sizes}
    for name, count in alone.items():
        print(f"  {name:<48} {sizes[name]:>9,} parameters {count:>4} changed alone")
    protected, used = set(), 0
    for name in sorted(sizes, key=lambda n: -alone[n] / sizes[n]):
        if alone[name] and used + sizes[name] <= budget:
            protected.add(name)
            used += sizes[name]
    output = next(n for n, p in checkpoint.model.named_parameters() if p is checkpoint.model.generator.proj.weight)
    return {
        "changed_alone_max": max(alone.values()),
        "changed_alone_sum": sum(alone.values()),
        "changed_fp16_output_layer": changed(rounded_model(checkpoint, half=frozenset({output}))),
        "fp16_output_layer_parameters": sizes[output],
        "changed_fp16_sensitive": changed(rounded_model(checkpoint, half=frozenset(protected))),
        "fp16_sensitive_parameters": used,
        "alone": {"changed": alone, "fp16_sensitive": sorted(protected)},  # one level down: not quoted
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a .pt file written by train")
    parser.add_argument("--root", default="data", help="Multi30k data folder (default: data)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    parser.add_argument("--calibration", type=int, default=500, help="training sentences GPTQ sees (default: 500)")
    parser.add_argument("--sensitivity", action="store_true", help="also: each matrix alone, and float16 kept")
    parser.add_argument("--record", metavar="RUN", help="write the counts as this run of docs/results.json")
    parser.add_argument("--results", metavar="FILE", help="with --record: this results file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    checkpoint = load_checkpoint(args.checkpoint)
    pairs = load_pairs("test", args.root, checkpoint.src_lang, checkpoint.tgt_lang)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    load_before = os.getloadavg()
    start = time.perf_counter()
    fp32 = translate(checkpoint, sources, 1)
    fp32_bleu = sacre_bleu(fp32, references)[0].score
    print(f"{args.checkpoint}: fp32 greedy sacreBLEU {fp32_bleu:.2f} on {len(sources)} test2016 sentences")
    calibration = [s for s, _ in load_pairs("train", args.root, checkpoint.src_lang, checkpoint.tgt_lang)]
    moments = input_moments(checkpoint, calibration[: args.calibration])
    schemes = {  # bits, per channel, GPTQ's input moments, columns per scale
        "per-tensor 8": (8, False, None, None),
        "per-channel 8": (8, True, None, None),
        "per-channel 9": (9, True, None, None),
        "per-channel 10": (10, True, None, None),
        "per-channel 11": (11, True, None, None),
        "per-channel 12": (12, True, None, None),
        "GPTQ 8": (8, True, moments, None),
        "per-group-64 8": (8, True, None, 64),
        "per-group-32 8": (8, True, None, 32),
        "GPTQ per-group-32 8": (8, True, moments, 32),
    }
    rows = {}

    def translated(model) -> list[str]:
        return translate(
            model,
            sources,
            1,
            src_vocab=checkpoint.src_vocab,
            tgt_vocab=checkpoint.tgt_vocab,
            src_lang=checkpoint.src_lang,
            tokenizer=checkpoint.tokenizer,
        )

    print(f"\n{'weights':<20} {'translations changed':>21} {'sacreBLEU change':>17}")
    for label, (bits, per_channel, scheme_moments, group) in schemes.items():
        out = translated(rounded_model(checkpoint, bits, per_channel, scheme_moments, group=group))
        changed = sum(a != b for a, b in zip(out, fp32))
        change = sacre_bleu(out, references)[0].score - fp32_bleu
        print(f"{label:<20} {changed:>15} of {len(sources)} {change:>+17.2f}")
        key = label.lower().replace(" ", "_").replace("-", "_")  # per_channel_8: a name prose can quote
        rows[f"changed_{key}"], rows[f"sacrebleu_change_{key}"] = changed, round(change, 2)
    if args.sensitivity:
        print("\nwhere the per-channel 8-bit changes come from:")
        found = sensitivity(checkpoint, lambda model: sum(a != b for a, b in zip(translated(model), fp32)))
        for key, value in found.items():
            if key != "alone":
                print(f"  {key}: {value:,}")
        rows.update(found)
    if args.record:
        from course_tools.results import record_figures
        from transformer_course.model import count_parameters

        figures = {
            "kind": "weight-rounding",
            "about": "benchmarks/weight_rounding.py: every weight matrix rounded to a grid in PyTorch and dequantized, "
            "test2016 translated greedily; changed: translations that differ from the fp32 model's",
            "measured": time.strftime("%Y-%m-%d"),
            "machine": {
                "threads": args.threads,
                "cpu_count": os.cpu_count(),
                "load_before": [round(x, 2) for x in load_before],
                "seconds": round(time.perf_counter() - start),
            },
            "checkpoint": {"preset": checkpoint.config.name, "parameters": count_parameters(checkpoint.model)},
            "test": {"split": "test2016", "sentences": len(sources), "calibration_sentences": args.calibration},
            **rows,  # the counts at the top: the figures prose quotes (the run's other numbers sit one level down)
        }
        record_figures(args.record, figures, args.results)
        print(f"recorded as the run {args.record!r}")


if __name__ == "__main__":
    main()
