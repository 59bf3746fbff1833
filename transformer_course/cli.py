"""The command line: ``python -m transformer_course download | train | evaluate | translate | average | choose``
(notebook 11). A teacher trains a model before class with it; every command has ``--help``.

    python -m transformer_course download
    python -m transformer_course train --preset multi30k-cpu --max-minutes 45 --out runs/multi30k-cpu
    python -m transformer_course average --run runs/multi30k-cpu --around-best 5
    python -m transformer_course choose --run runs/multi30k-cpu     # best / best-ema / averaged-… by validation
    python -m transformer_course evaluate --checkpoint runs/multi30k-cpu --split test --beam 4   # the chosen one
    python -m transformer_course translate --checkpoint runs/multi30k-cpu "Ein Mann fährt Fahrrad."
    python -m transformer_course train --preset gpt-cpu --out runs/gpt-cpu     # a language model (notebook 12)
    python -m transformer_course generate --checkpoint runs/gpt-cpu/lm.pt --prompt "A dog" --temperature 0.8

Every failure a user can act on — a bad argument or config, a missing or damaged file, a failed download, a
diverged training, a full disk — ends the program with exit code 1 and one line ``error: …`` on stderr that
names the argument or file and says what to do (2 for unknown options, argparse's convention). A real bug
(a TypeError, an IndexError …) still shows its whole traceback. SIGTERM is turned into an exception, so
temporary files are removed as on Ctrl-C (exit code 143; Ctrl-C: 130).
Multi-GPU: ``torchrun --nproc_per_node=N -m transformer_course train --preset multi30k-base``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from .cli_checks import check_beam, check_device, check_length_penalty_option, check_positive, check_train_options
from .config import PRESETS, get_preset
from .failures import WRITE_ERRORS, Terminated, expected_errors, on_sigterm, one_line, write_text
from .files import check_writable_folder, claim_file, refuse_writing_onto_inputs
from .overrides import apply_overrides

__all__ = ["COMMANDS", "TOOLS", "build_parser", "main", "run_guarded", "run_tool"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_course",
        description="Train, evaluate and use the Transformer of 'Attention Is All You Need' (Multi30k de→en).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser(
        "download",
        help="download Multi30k (de→en) and verify its SHA-256 checksums",
        description="Fetch the six Multi30k task-1 files into --root, checking each SHA-256. "
        "The TC_DATA_MIRROR environment variable (a folder or base URL) is tried first.",
    )
    p.add_argument("--root", default="data", help="folder for the data files (default: data)")
    p.add_argument(
        "--deadline", type=float, default=300.0, help="seconds one file may take from one source (default: 300)"
    )

    p = commands.add_parser(
        "train",
        help="train a model from a preset",
        description="Train a preset; checkpoints, history.json/.csv and loss.png go to --out.",
    )
    p.add_argument("--preset", required=True, help=f"one of: {', '.join(PRESETS)}")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="change one field of the preset's Config, e.g. --set dropout=0.3 --set schedule=budget (repeatable)",
    )
    p.add_argument("--epochs", type=int, help="number of epochs (default: the preset's)")
    p.add_argument("--max-minutes", type=float, help="stop after this many minutes of training")
    p.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    p.add_argument("--out", help="run folder (default: runs/PRESET)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last.pt")
    p.add_argument(
        "--adopt",
        action="store_true",
        help="with --resume: continue a last.pt copied from another run, as the start of a new run",
    )
    p.add_argument("--root", help="Multi30k: data folder (default: data)")
    p.add_argument("--device", help="cpu, cuda, cuda:1 … (default: cuda when available)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--save-every", type=int, help="write last.pt every N steps (default: 100 on a CPU, 1000 on a GPU)")
    p.add_argument("--limit", type=int, help="Multi30k: only the first N pairs of each split (quick checks)")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")

    p = commands.add_parser(
        "generate",
        help="continue a prompt with a language model (train --preset gpt-cpu)",
        description="Sample captions from a language model checkpoint: --temperature 0 is greedy; otherwise top-k, "
        "then top-p, then a draw seeded by --seed.",
    )
    p.add_argument("--checkpoint", required=True, help="the lm.pt that `train --preset gpt-cpu` wrote")
    p.add_argument("--prompt", default="", help="the start of each caption (default: none, a caption from scratch)")
    p.add_argument(
        "--temperature", type=float, default=0.8, help="0 = greedy, 1 = the model's distribution (default: 0.8)"
    )
    p.add_argument("--top-k", type=int, help="keep only the k most probable tokens (default: all)")
    p.add_argument("--top-p", type=float, help="nucleus: keep the most probable tokens up to this mass (default: 1)")
    p.add_argument(
        "--seed", type=int, default=0, help="the sampling seed: the same seed, the same captions (default: 0)"
    )
    p.add_argument("--steps", type=int, default=40, help="at most this many tokens after the prompt (default: 40)")
    p.add_argument("--samples", type=int, default=1, help="how many captions to write (default: 1)")

    p = commands.add_parser(
        "evaluate",
        help="BLEU of a checkpoint on a Multi30k split",
        description="Translate a split and print sacreBLEU (detokenized, cased, with its "
        "signature) and tokenized lowercase BLEU.",
    )
    p.add_argument(
        "--checkpoint", required=True, help="a .pt file written by train, or a run folder: the one `choose` chose"
    )
    p.add_argument("--split", default="test", help="train, val, test or test_2016_flickr (default: test)")
    p.add_argument("--beam", type=int, default=1, help="beam size; 1 = greedy (default: 1)")
    p.add_argument(
        "--length-penalty", type=float, help="the beam's α, ((5 + length) / 6)^α (default: the checkpoint's config)"
    )
    p.add_argument("--limit", type=int, help="only the first N sentences")
    p.add_argument("--root", default="data", help="data folder (default: data)")
    p.add_argument("--samples", type=int, default=5, help="print this many sample translations (default: 5)")
    p.add_argument("--json", help="also write the scores and translations to this JSON file")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")

    p = commands.add_parser(
        "translate",
        help="translate sentences (German for Multi30k)",
        description="Translate each SENTENCE from the checkpoint's source language (German for Multi30k) to its "
        "target language.",
    )
    p.add_argument(
        "--checkpoint",
        required=True,
        help="a .pt file written by train, or a run folder: the one `choose` chose (--engine ctranslate2: a "
        "folder written by export-ct2)",
    )
    p.add_argument("--beam", type=int, default=1, help="beam size; 1 = greedy (default: 1)")
    p.add_argument(
        "--engine",
        default="course",
        choices=("course", "ctranslate2"),
        help="the decoder: the course's own (default), or CTranslate2 on an export-ct2 folder ([engine] extra)",
    )
    p.add_argument("sentences", nargs="+", metavar="SENTENCE")

    p = commands.add_parser(
        "average",
        help="average the parameters of the last N epoch checkpoints of a run (or K around its best epoch)",
        description="Average epoch-NNN.pt checkpoints of --run (the paper averages the last 5); the file records "
        "the ones it averaged (averaged_from).",
    )
    p.add_argument("--run", required=True, help="a run folder written by train")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--last", type=int, help="how many of the last epoch checkpoints (default: 5)")
    which.add_argument(
        "--around-best",
        type=int,
        metavar="K",
        help="K epochs centred on the one with the lowest validation loss in history.json: best-K//2 … "
        "(those that exist)",
    )
    p.add_argument("--out", help="output file (default: RUN/averaged-last-N.pt or RUN/averaged-around-best-K.pt)")

    p = commands.add_parser(
        "choose",
        help="choose a run's checkpoint by validation (best, best-ema, averaged-…) and record it in chosen.json",
        description="Score each of --run's best.pt, best-ema.pt and averaged-*.pt on the validation split and write "
        "the winner's label to RUN/chosen.json (test is never read): evaluate that checkpoint on test afterwards.",
    )
    p.add_argument("--run", required=True, help="a run folder written by train")
    p.add_argument(
        "--by",
        default="val_loss",
        choices=("val_loss", "bleu"),
        help="val_loss: the lowest validation loss (default); bleu: the highest validation sacreBLEU",
    )
    p.add_argument("--beam", type=int, default=1, help="with --by bleu: beam size (default: 1, greedy)")
    p.add_argument(
        "--length-penalty", type=float, help="with --by bleu: the beam's α (default: each checkpoint's config)"
    )
    p.add_argument("--root", default="data", help="Multi30k: data folder (default: data)")
    p.add_argument("--limit", type=int, help="Multi30k: the --limit the run was trained with")
    p.add_argument("--device", default="cpu", help="cpu, cuda … (default: cpu)")

    for name, (_, summary) in TOOLS.items():  # each parses its own options: COMMAND --help
        commands.add_parser(name, add_help=False, help=summary)
    return parser


def cmd_download(args) -> None:
    from .data import download_multi30k

    check_positive(args, ("deadline",))
    root = download_multi30k(args.root, deadline=args.deadline)
    print(f"Multi30k is in {root}/ (SHA-256 verified)")


def cmd_train(args) -> None:
    import torch

    from .data import multi30k_data, toy_data
    from .train import RunOptions, fit, setup_distributed
    from .train.allocator import keep_freed_memory

    config = apply_overrides(get_preset(args.preset), args.set)  # a bad --set is one line, before any work
    check_positive(args, ("epochs", "max_minutes", "max_steps", "save_every", "limit", "threads"))
    check_device(args.device)  # before the run folder is made
    check_train_options(args, config)
    if config.task == "captions":
        return train_language_model(config, args)
    if args.adopt and not args.resume:
        raise ValueError("--adopt continues a last.pt copied from another run: give it with --resume")
    out = Path(args.out or f"runs/{config.name}")
    check_writable_folder(out, "--out")  # a file, under a file, read-only: one line naming it, not "[Errno 17]"
    if not args.resume and (out / "last.pt").exists():
        raise ValueError(f"{out} already holds a run; pass --resume to continue it or choose another --out")
    if args.resume and not (out / "last.pt").exists():
        raise ValueError(f"nothing to resume: {out / 'last.pt'} does not exist; drop --resume to start a new run")
    if args.threads:
        torch.set_num_threads(args.threads)
    keep_freed_memory()  # a CPU step's 69 MB logits reuse freed memory instead of faulting in new pages
    on_gpu = (args.device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    dist = setup_distributed()
    if config.task in ("copy", "reverse"):
        data = toy_data(config.task, rank=dist.rank, world_size=dist.world_size, seed=config.seed)
    else:
        data = multi30k_data(
            config,
            args.root or "data",
            rank=dist.rank,
            world_size=dist.world_size,
            limit=args.limit,
            progress=not args.no_progress and dist.is_main,
        )
    try:
        options = RunOptions(
            out,
            epochs=args.epochs,
            max_minutes=args.max_minutes,
            max_steps=args.max_steps,
            resume="adopt" if args.resume and args.adopt else args.resume,
            device=args.device,
            compile=args.compile,
            save_every=args.save_every or (1000 if on_gpu else 100),  # last.pt of a base model is ~600 MB
            progress=not args.no_progress,
        )
        result = fit(config, data, options, dist=dist)
    except OSError as err:
        if err.filename is None and err.errno in WRITE_ERRORS:  # training writes only into the run folder
            raise OSError(err.errno, f"{err.strerror} while writing into the run folder {out}/") from err
        raise
    if dist.is_main:
        print(
            f"done ({result.stopped_by}): {result.step} steps, {result.epoch} full epochs, "
            f"{result.train_seconds / 60:.1f} min of training; checkpoints in {out}/"
        )


def train_language_model(config, args) -> None:
    """``train`` for a decoder-only LM preset (task="captions"): Multi30k's English captions, ``train_lm``, and
    ``OUT/lm.pt`` (with ``history.json``) for ``generate``."""
    import torch

    from .data.captions import prepare_captions
    from .train.lm import save_lm, train_from_config

    refused = [f"--{n.replace('_', '-')}" for n in ("resume", "adopt", "compile") if getattr(args, n)]
    refused += ["--save-every"] if args.save_every is not None else []
    if refused:
        raise ValueError(
            f"{' and '.join(refused)} {'apply' if len(refused) > 1 else 'applies'} to translation presets only; "
            f"{config.name} trains a language model in minutes: drop {' and '.join(refused)}"
        )
    out = Path(args.out or f"runs/{config.name}")
    check_writable_folder(out, "--out")
    if (out / "lm.pt").exists():
        raise ValueError(f"{out} already holds a language model (lm.pt); choose another --out or remove it")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    progress = not args.no_progress
    if progress:
        print(f"preparing Multi30k's English captions in {args.root or 'data'}/ (download, verify, subwords) …")
    data = prepare_captions(args.root or "data", config.subword_vocab, "en", args.limit)
    config = config.replace(epochs=args.epochs) if args.epochs else config
    model, result = train_from_config(config, data, args.max_steps, args.max_minutes, progress, device)
    out.mkdir(parents=True, exist_ok=True)
    save_lm(out / "lm.pt", model, config, data.tokenizer, result.history)
    write_text(out / "history.json", json.dumps(result.history, indent=1))
    print(
        f"done: {result.steps} steps, {result.seconds / 60:.1f} min of training, validation perplexity "
        f"{result.valid_perplexity:.2f}; the model is {out / 'lm.pt'}"
    )


def cmd_generate(args) -> None:
    import torch

    from .data import EOS
    from .train.lm import load_lm

    if args.steps < 1 or args.samples < 1:
        name, value = ("--steps", args.steps) if args.steps < 1 else ("--samples", args.samples)
        raise ValueError(f"{name} must be a whole number >= 1, got {value}")
    if args.seed < 0:
        raise ValueError(f"--seed must be a whole number >= 0, got {args.seed}")
    check_sampling(args.temperature, args.top_k, args.top_p)  # before the checkpoint is read
    model, config, tokenizer = load_lm(args.checkpoint)
    prompt = tokenizer.encode_ids(args.prompt) if args.prompt else []
    if 1 + len(prompt) + args.steps > config.max_len:
        raise ValueError(
            f"the prompt's {len(prompt)} tokens + --steps {args.steps} exceed the model's {config.max_len - 1} "
            "positions after </s>; give a shorter prompt or fewer --steps"
        )
    ids = torch.tensor([[EOS] + prompt] * args.samples)  # (samples, 1 + prompt): a caption starts after </s>
    generator = torch.Generator().manual_seed(args.seed)
    out = model.generate(
        ids, args.steps, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, generator=generator, eos=EOS
    )
    for row in out[:, 1:]:
        print(tokenizer.decode(row.tolist()))


def check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    """The sampler's checks (sampling.check_settings), the message naming the command line's option."""
    from .sampling import check_settings

    try:
        check_settings(temperature, top_k, top_p)
    except ValueError as err:
        message = str(err)
        for name in ("temperature", "top_k", "top_p"):
            message = message.replace(f"{name} must", f"--{name.replace('_', '-')} must", 1)
        raise ValueError(message) from None


def cmd_evaluate(args) -> None:
    from .evaluate import evaluate_checkpoint
    from .train.choose import checkpoint_or_chosen

    check_beam(args.beam)
    check_length_penalty_option(args.length_penalty)
    check_positive(args, ("limit",))
    args.checkpoint = str(checkpoint_or_chosen(args.checkpoint))  # a run folder: the checkpoint choose chose
    if args.samples < 0:
        raise ValueError(f"--samples is how many translations to print and must be >= 0, got {args.samples}")
    if args.json:  # checked before the translation's minutes of work
        refuse_writing_onto_inputs(args.json, [args.checkpoint], "--json")
        claim_file(args.json, "evaluate --json", is_evaluation_report, "--json")
    result = evaluate_checkpoint(
        args.checkpoint,
        args.split,
        args.beam,
        args.root,
        args.limit,
        progress=not args.no_progress,
        length_penalty=args.length_penalty,
    )
    print(result.summary())
    for src, ref, hyp in list(zip(result.sources, result.references, result.hypotheses))[: args.samples]:
        print(f"\n  source:     {src}\n  reference:  {ref}\n  model:      {hyp}")
    if args.json:
        write_text(
            args.json,
            json.dumps(
                {
                    "checkpoint": args.checkpoint,
                    "split": args.split,
                    "beam_size": args.beam,
                    "length_penalty": result.length_penalty,
                    "bleu": result.bleu,
                    "signature": result.signature,
                    "tokenized_bleu": result.tokenized_bleu,
                    "seconds": result.seconds,
                    "sources": result.sources,
                    "references": result.references,
                    "hypotheses": result.hypotheses,
                },
                ensure_ascii=False,
                indent=1,
            ),
        )


REPORT_KEYS = {"checkpoint", "split", "beam_size", "bleu", "hypotheses"}  # what evaluate --json writes


def is_evaluation_report(path: Path) -> bool:
    """Whether ``path`` holds a report that ``evaluate --json`` wrote (so another may replace it)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(report, dict) and REPORT_KEYS <= report.keys()


def cmd_translate(args) -> None:
    from .checkpoint import resolve_model
    from .decode import translate
    from .train.choose import checkpoint_or_chosen

    check_beam(args.beam)
    if args.engine == "ctranslate2":  # an export-ct2 folder, CTranslate2 decodes: transformer_course.engine
        from .engine import translate_with_engine

        for sentence in translate_with_engine(args.checkpoint, args.sentences, beam_size=args.beam):
            print(sentence)
        return
    resolved = resolve_model(checkpoint_or_chosen(args.checkpoint))  # a subword checkpoint brings its tokenizer
    model, src_vocab, tgt_vocab, src_lang, _ = resolved
    translations = translate(
        model,
        args.sentences,
        beam_size=args.beam,
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        src_lang=src_lang,
        tokenizer=resolved.tokenizer,
    )
    for sentence in translations:
        print(sentence)


def cmd_average(args) -> None:
    from .checkpoint import average_checkpoints, epoch_checkpoints, epochs_around_best

    for name in ("last", "around_best"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    paths = epoch_checkpoints(args.run)
    if not paths:
        raise ValueError(f"{args.run} holds no epoch-NNN.pt checkpoints; train with --out {args.run} first")
    if args.around_best is not None:  # the best epoch by validation loss, from the run's history
        history = Path(args.run) / "history.json"
        try:
            rows = json.loads(history.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(
                f"--around-best reads {history}, which cannot be read ({err}); give a run folder"
            ) from None
        best, chosen = epochs_around_best(rows if isinstance(rows, list) else [], paths, args.around_best)
        print(f"best epoch by validation loss: {best}")
        name = f"averaged-around-best-{args.around_best}.pt"
    else:
        chosen = paths[-(args.last or 5) :]
        name = f"averaged-last-{len(chosen)}.pt"
    out = Path(args.out or Path(args.run) / name)
    refuse_writing_onto_inputs(out, paths)  # not even an epoch file left out of the average
    check_writable_folder(out.parent, "--out's folder")
    average_checkpoints(chosen, out)
    print(f"averaged {', '.join(p.name for p in chosen)} → {out}")


def cmd_choose(args) -> None:
    from .train.choose import choose_checkpoint

    check_beam(args.beam)
    check_length_penalty_option(args.length_penalty)
    check_positive(args, ("limit",))
    check_device(args.device)
    record = choose_checkpoint(args.run, args.by, args.root, args.limit, args.beam, args.device, args.length_penalty)
    for label, score in record["scores"].items():
        print(f"{label:>28}: validation {args.by} {score:.4f}" + ("  ← chosen" if label == record["chosen"] else ""))
    print(f"chosen: {record['chosen']} ({record['checkpoint']}), recorded in {Path(args.run) / 'chosen.json'}")


# The commands of the course tools (the package course_tools beside this one, which imports this package and never
# the reverse: docs/architecture.md). Each is loaded only when it is named, and parses its own options.
TOOLS = {
    "export-web": (
        "course_tools.web.command",
        "export a checkpoint to a static page that translates and shows attention in the browser ([web] extra)",
    ),
    "export-ct2": (
        "course_tools.engine.command",
        "export a checkpoint to a CTranslate2 model folder for translate --engine ctranslate2 ([engine] extra)",
    ),
    "classroom": ("course_tools.classroom", "write an nbgrader course folder for teachers ([classroom] extra)"),
    "edition": ("course_tools.edition.build", "build the offline HTML edition (--slides: the slide decks)"),
    "results": ("course_tools.results", "record runs in docs/results.json, render its tables, check quoted figures"),
}


def run_tool(name: str, argv: list[str]) -> int:
    """Run the course tool ``name`` with its own arguments; an installation without the tools is told so."""
    import importlib

    module_name, _ = TOOLS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith("course_tools"):
            raise
        print(
            f"error: `{name}` is one of the course tools (the package course_tools), which this installation lacks: "
            "install the course from its repository (pip install -e .)",
            file=sys.stderr,
        )
        return 1
    return module.main(argv, prog=f"python -m transformer_course {name}")


COMMANDS = {
    "download": cmd_download,
    "train": cmd_train,
    "evaluate": cmd_evaluate,
    "translate": cmd_translate,
    "generate": cmd_generate,
    "average": cmd_average,
    "choose": cmd_choose,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in TOOLS:
        return run_tool(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    return run_guarded(COMMANDS[args.command], args)


def run_guarded(command, *args) -> int:
    """Call ``command(*args)`` as every command of the course runs: a failure a user can act on is one line
    ``error: …`` and exit code 1; Ctrl-C 130; SIGTERM 143; a bug keeps its traceback."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if in_main_thread else None
    try:
        command(*args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("terminated (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except Exception as err:
        if not isinstance(err, expected_errors()):
            raise  # a bug: keep its traceback
        print(f"error: {one_line(err)}", file=sys.stderr)
        return 1
    finally:
        if in_main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0
