"""Reliability of the inputs (docs/reliability.md): downloads with a total deadline and a size limit,
damaged data files kept aside, temporary files swept, a damaged token cache rebuilt, configs and arguments
validated before anything is allocated, bounded beams, a full disk named, and a command line that turns
every expected failure into one line and lets a real bug show its traceback.

Each test reproduces one input of the audit that was handled badly and states the behaviour now expected.
Servers run on 127.0.0.1 and misbehave on purpose (a trickle, an endless body); every test is bounded.
"""

import errno
import gzip
import hashlib
import http.server
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

import transformer_course as tc
from transformer_course import cli, files
from transformer_course.checkpoint import save_checkpoint
from transformer_course.config import LIMITS, MAX_BEAM_SIZE, PRESETS, Config, get_preset
from transformer_course.data import (
    BOS,
    EOS,
    MIRROR_ENV,
    MULTI30K_SHA256,
    MULTI30K_SIZES,
    DownloadError,
    download_multi30k,
    load_pairs,
    tokenize_file,
    toy_vocab,
)
from transformer_course.data import download as download_module
from transformer_course.decode import beam_search, greedy_decode, translate
from transformer_course.evaluate import EvalResult, evaluate_checkpoint
from transformer_course.files import TEMP_SUFFIX
from transformer_course.model import build_model

from helpers import MULTI30K, needs_multi30k


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def one_line(text: str) -> bool:
    return text.strip() != "" and text.strip().count("\n") == 0


def run_cli(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "transformer_course", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


# --- Stand-in data files and servers that misbehave ---------------------------------------------------------------


@pytest.fixture
def standins(tmp_path, monkeypatch) -> Path:
    """Six small gzip files standing in for Multi30k: their sizes and SHA-256 replace the published ones."""
    folder = tmp_path / "standins"
    folder.mkdir()
    for name in MULTI30K_SHA256:
        with gzip.open(folder / name, "wt", encoding="utf-8") as f:
            f.write("".join(f"{name} line {i}\n" for i in range(100)))
        data = (folder / name).read_bytes()
        monkeypatch.setitem(download_module.MULTI30K_SHA256, name, hashlib.sha256(data).hexdigest())
        monkeypatch.setitem(download_module.MULTI30K_SIZES, name, len(data))
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    return folder


class HostileHandler(http.server.BaseHTTPRequestHandler):
    """``trickle``: announces ``body`` and sends one byte every ``interval`` seconds; ``endless``: no length,
    zero bytes as fast as the client reads; ``liar``: announces a terabyte. HTTP/1.0: the body ends when
    the connection closes."""

    mode = "trickle"
    body = b""
    interval = 0.5
    stop: threading.Event

    def do_GET(self):
        self.send_response(200)
        if self.mode == "trickle":
            self.send_header("Content-Length", str(len(self.body)))
        elif self.mode == "liar":
            self.send_header("Content-Length", str(10**12))
        self.end_headers()
        try:
            if self.mode == "trickle":
                for i in range(len(self.body)):
                    if self.stop.wait(self.interval):
                        return
                    self.wfile.write(self.body[i : i + 1])
            else:
                while not self.stop.is_set():
                    self.wfile.write(bytes(1 << 16))
        except OSError:  # the client hung up
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile():
    """A server on 127.0.0.1 that misbehaves as its handler's ``mode`` says: yields (base URL, handler class)."""
    handler = type("Handler", (HostileHandler,), {"stop": threading.Event()})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    ).start()  # a quick shutdown()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    handler.stop.set()
    httpd.shutdown()
    httpd.server_close()


def within(seconds: float, fn):
    """Run ``fn`` in a thread; fail the test if it has not returned after ``seconds`` (the bug was a hang).
    Returns what ``fn`` raised (None if it returned)."""
    outcome: list = []

    def target():
        try:
            fn()
            outcome.append(None)
        except BaseException as e:
            outcome.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return outcome[0]


# --- Every network wait has a total deadline, every download a size limit -----------------------------------------


@needs_multi30k
def test_the_published_sizes_are_those_of_the_files_with_the_published_checksums():
    for name in MULTI30K_SHA256:
        data = (MULTI30K / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == MULTI30K_SHA256[name]
        assert len(data) == MULTI30K_SIZES[name]


@pytest.mark.slow
def test_a_source_that_trickles_bytes_fails_at_the_deadline_instead_of_hanging(standins, hostile, tmp_path):
    url, handler = hostile
    handler.mode, handler.body = "trickle", (standins / "val.de.gz").read_bytes()  # one byte every 0.5 s
    root = tmp_path / "data"
    fetch = lambda: download_multi30k(root, ["val"], ["de"], url=url, timeout=600, deadline=2, verbose=False)  # noqa: E731
    error = within(20, fetch)  # a guard against a hang: no read waits 600 s here, the deadline must end it
    assert isinstance(error, DownloadError) and "deadline of 2 s" in str(error)  # the deadline stopped it
    assert leftovers(root) == []


def test_an_endless_file_stops_one_byte_past_the_published_size(standins, hostile, tmp_path, monkeypatch):
    url, handler = hostile
    handler.mode = "endless"
    size = MULTI30K_SIZES["val.de.gz"]
    written: list[int] = []
    real_atomic_write = download_module.atomic_write

    @contextmanager
    def counting_atomic_write(path):
        with real_atomic_write(path) as f:
            yield types.SimpleNamespace(write=lambda data: written.append(len(data)) or f.write(data))

    monkeypatch.setattr(download_module, "atomic_write", counting_atomic_write)
    root = tmp_path / "data"
    error = within(20, lambda: download_multi30k(root, ["val"], ["de"], url=url, verbose=False))
    assert isinstance(error, DownloadError)
    assert f"larger than the published file ({size} bytes): stopped reading after {size + 1} bytes" in str(error)
    assert sum(written) <= size + 1
    assert leftovers(root) == []


def test_a_source_announcing_more_than_the_published_size_is_refused_before_reading(standins, hostile, tmp_path):
    url, handler = hostile
    handler.mode = "liar"
    root = tmp_path / "data"
    error = within(20, lambda: download_multi30k(root, ["val"], ["de"], url=url, verbose=False))
    assert isinstance(error, DownloadError) and f"announces {10**12} bytes" in str(error)
    assert leftovers(root) == []


@pytest.mark.parametrize("deadline", [0, -1, math.nan, math.inf, True])
def test_a_deadline_that_is_not_a_positive_finite_number_is_refused(tmp_path, deadline):
    with pytest.raises(ValueError, match="deadline must be a positive number of seconds"):
        download_multi30k(tmp_path, ["val"], url=None, deadline=deadline, verbose=False)


# --- Data files are never lost, temporary files never stay -------------------------------------------------------


def test_a_damaged_data_file_is_kept_aside_until_a_good_copy_is_in_place(standins, tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    damaged = bytearray((standins / "val.de.gz").read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    (root / "val.de.gz").write_bytes(bytes(damaged))

    with pytest.raises(DownloadError, match=re.escape(str(root / "val.de.gz.corrupt"))):
        download_multi30k(root, ["val"], ["de"], url=None, verbose=False)  # offline: no source
    assert leftovers(root) == ["val.de.gz.corrupt"]  # not lost, and never read under its own name
    assert (root / "val.de.gz.corrupt").read_bytes() == bytes(damaged)
    with pytest.raises(FileNotFoundError):
        load_pairs("val", root, download=False)

    download_multi30k(root, ["val"], ["de"], mirror=str(standins), url=None, verbose=False)
    assert leftovers(root) == ["val.de.gz"]  # the damaged copy goes once a good one is in place
    assert (root / "val.de.gz").read_bytes() == (standins / "val.de.gz").read_bytes()


def test_temporary_files_a_killed_download_left_are_removed_by_the_next_download(standins, tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    old = root / f".val.de.gz.k1ll3d{TEMP_SUFFIX}"  # what a SIGKILL during a download leaves
    fresh = root / f".val.en.gz.l1ve{TEMP_SUFFIX}"
    foreign = root / f".notes.txt.abcd{TEMP_SUFFIX}"
    for path in (old, fresh, foreign):
        path.write_bytes(b"half a file")
    day_ago = time.time() - 86400
    os.utime(old, (day_ago, day_ago))
    os.utime(foreign, (day_ago, day_ago))
    download_multi30k(root, ["test"], mirror=str(standins), url=None, verbose=False)
    assert not old.exists()  # older than any download's deadline: left by a killed process
    assert fresh.exists() and foreign.exists()  # maybe a download running now; not a Multi30k file


@pytest.mark.slow
def test_sigterm_during_a_download_leaves_no_temporary_file(hostile, tmp_path):
    url, handler = hostile
    handler.mode, handler.body = "trickle", bytes(MULTI30K_SIZES["train.de.gz"])
    root = tmp_path / "data"
    process = subprocess.Popen(
        [sys.executable, "-m", "transformer_course", "download", "--root", str(root)],
        env={**os.environ, MIRROR_ENV: url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (root.exists() and any(p.name.endswith(TEMP_SUFFIX) for p in root.iterdir())):
            assert process.poll() is None and time.monotonic() < deadline, "the download never started"
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM and "terminated" in stderr
    assert [p.name for p in root.iterdir() if p.name.endswith(TEMP_SUFFIX)] == []


# --- A full disk: one error naming the file ------------------------------------------------------------------------


class FullDiskFile:
    """A file whose every write fails as on a full disk."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


@pytest.fixture
def full_disk(monkeypatch):
    """Every file the package writes (all go through files.atomic_write) hits a full disk."""
    fake_os = types.SimpleNamespace(**{name: getattr(os, name) for name in dir(os) if not name.startswith("__")})
    fake_os.fdopen = lambda fd, *args, **kwargs: FullDiskFile(os.fdopen(fd, *args, **kwargs))
    monkeypatch.setattr(files, "os", fake_os)


def test_a_full_disk_during_a_download_names_the_file_and_tries_no_other_source(standins, tmp_path, full_disk):
    root = tmp_path / "data"
    closed = "http://127.0.0.1:9/"  # were it tried, the error would be a DownloadError about a refused connection
    with pytest.raises(OSError) as info:
        download_multi30k(root, ["val"], ["de"], mirror=str(standins), url=closed, verbose=False)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(root / "val.de.gz")
    assert not isinstance(info.value, DownloadError) and leftovers(root) == []


def _write_gz(path: Path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def test_a_full_disk_while_writing_the_token_cache_is_a_warning_and_the_tokens_still_come(tmp_path, full_disk):
    _write_gz(tmp_path / "val.en.gz", ["A dog runs.", "A cat sleeps."])
    with pytest.warns(UserWarning, match="could not write the token cache .*No space left on device"):
        tokens = tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache")
    assert tokens == [["A", "dog", "runs", "."], ["A", "cat", "sleeps", "."]]
    assert leftovers(tmp_path / "cache") == []


# --- The token cache: a damaged cache is rebuilt, with a warning naming it -----------------------------------------


@pytest.mark.parametrize(
    "damage",
    ['[["A", "dog", "runs"', '{"not": "a list of lines"}', '[["A", "dog"], [1, 2]]', '[["only one line"]]', "\udcff"],
    ids=["cut-json", "not-a-list", "not-strings", "wrong-line-count", "not-utf8"],
)
def test_a_damaged_token_cache_is_rebuilt_with_a_warning_naming_it(tmp_path, damage):
    _write_gz(tmp_path / "val.en.gz", ["A dog runs.", "A cat sleeps."])
    tokens = tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache")
    [cache] = (tmp_path / "cache").iterdir()
    cache.write_bytes(damage.encode("utf-8", "surrogateescape"))
    with pytest.warns(UserWarning, match=re.escape(str(cache)) + ".*damaged"):
        assert tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache") == tokens
    assert json.loads(cache.read_text(encoding="utf-8")) == tokens  # rewritten whole


# --- Configs are validated (types, ranges, upper bounds) before anything is allocated -----------------------------

BAD_CONFIGS = [
    (dict(N=True), "N must be a positive integer, got N=True of type bool"),
    (dict(N=2.0), "N must be a positive integer, got N=2.0 of type float"),
    (dict(N=10**6), "N=1000000 is above 64"),
    (dict(max_len=10**9), "max_len=1000000000 is above 65536"),
    (dict(d_model=16392, h=8), "d_model=16392 is above 16384"),
    (dict(d_ff=0), "d_ff must be a positive integer"),
    (dict(h=3), "is not divisible by h=3 heads"),
    (dict(d_model=15, h=3, positional="sinusoidal"), "even d_model"),
    (dict(lr_factor=-1), "lr_factor must be a positive finite number"),
    (dict(lr_factor=math.nan), "lr_factor must be a positive finite number"),
    (dict(dropout=1.0), r"dropout=1.0 is outside \[0, 1\)"),
    (dict(attention_dropout=-0.1), r"attention_dropout=-0.1 is outside \[0, 1\)"),
    (dict(label_smoothing=math.nan), r"label_smoothing=nan is outside \[0, 1\)"),
    (dict(warmup=0), "warmup must be a positive integer"),
    (dict(epochs=0), "epochs must be a positive integer"),
    (dict(accumulate=0), "accumulate must be a positive integer"),
    (dict(tokens_per_batch=-5), "tokens_per_batch must be a positive integer"),
    (dict(min_freq=0), "min_freq must be a positive integer"),
    (dict(clip_norm=math.inf), "clip_norm must be None"),
    (dict(positional="alibi"), "positional must be one of"),
    (dict(tie_embeddings="both"), "tie_embeddings must be one of"),
    (dict(task="sort"), "task must be one of"),
    (dict(norm_first="yes"), "norm_first must be True or False"),
    (dict(shared_vocab=1), "shared_vocab must be True or False"),
    (dict(beam_size=10**5), f"beam_size=100000 is above {MAX_BEAM_SIZE}"),
    (dict(length_penalty=-0.5), "length_penalty must be a finite number >= 0"),
    (dict(seed=-1), "seed must be an integer >= 0"),
    (dict(name=""), "name must be a non-empty string"),
]


@pytest.mark.parametrize(
    "changes, message", BAD_CONFIGS, ids=[next(iter(c)) + "=" + repr(c[next(iter(c))]) for c, _ in BAD_CONFIGS]
)
def test_a_bad_config_is_one_clear_value_error_however_it_is_made(changes, message):
    with pytest.raises(ValueError, match=message):
        Config(**changes)
    with pytest.raises(ValueError, match=message):
        Config.from_dict(changes)  # a checkpoint's config is read through here
    with pytest.raises(ValueError, match=message):
        get_preset("multi30k-cpu").replace(**changes)


def test_a_huge_model_is_refused_before_any_tensor_is_allocated(monkeypatch):
    def no_building(*args, **kwargs):
        raise AssertionError("a model was built from a config that should have been refused")

    monkeypatch.setattr(tc.model.Transformer, "__init__", no_building)
    with pytest.raises(ValueError, match="N=1000000 is above 64"):
        tc.make_model(10, 10, N=10**6)
    with pytest.raises(ValueError, match="max_len=1000000000 is above 65536"):
        build_model(Config.from_dict({**get_preset("toy-copy").to_dict(), "max_len": 10**9}), 10, 10)


def test_every_preset_is_valid_and_the_limits_themselves_are_accepted():
    for config in PRESETS.values():
        assert config.validate() is config
    largest = {name: high for name, (_, high) in LIMITS.items() if name not in ("d_model", "h")}
    assert Config(**largest, d_model=16384, h=1024).N == 64  # valid, and nothing is allocated by a config


def test_numpy_integers_in_a_config_become_plain_ints():
    config = Config.from_dict({"N": __import__("numpy").int64(3)})
    assert config.N == 3 and type(config.N) is int


# --- Decoding arguments --------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_model():
    torch.manual_seed(0)
    return tc.make_model(14, 14, N=1, d_model=16, d_ff=32, h=2, dropout=0.0, max_len=64).eval()


def test_a_beam_wider_than_the_limit_is_refused_at_once(tiny_model, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the model ran before the beam size was checked")

    monkeypatch.setattr(tiny_model, "encode", no_work)  # refused before any work (it took 74 s and 3 GB)
    src = torch.tensor([[4, 5, 6]])
    with pytest.raises(ValueError, match=f"beam_size=100000 is above {MAX_BEAM_SIZE}"):
        beam_search(tiny_model, src, None, 10, BOS, EOS, beam_size=100_000)
    vocab = toy_vocab(14)
    with pytest.raises(ValueError, match=f"beam_size=100000 is above {MAX_BEAM_SIZE}"):
        translate(tiny_model, ["4 5 6"], beam_size=100_000, src_vocab=vocab, tgt_vocab=vocab)


@pytest.mark.parametrize("beam_size", [True, 2.0, 0])
def test_a_beam_size_that_is_not_a_positive_integer_is_refused(tiny_model, beam_size):
    with pytest.raises(ValueError, match="beam_size must be a positive integer"):
        beam_search(tiny_model, torch.tensor([[4, 5]]), None, 10, BOS, EOS, beam_size=beam_size)


@pytest.mark.parametrize("decoder", ["greedy", "beam"])
@pytest.mark.parametrize("shape", [(0, 5), (2, 0)], ids=["no-sentence", "no-token"])
def test_decoding_an_empty_batch_is_one_clear_error(tiny_model, decoder, shape):
    src = torch.zeros(shape, dtype=torch.long)
    with pytest.raises(ValueError, match=r"src holds no tokens to decode \(shape " + re.escape(str(shape))):
        if decoder == "greedy":
            greedy_decode(tiny_model, src, None, 10, BOS, EOS)
        else:
            beam_search(tiny_model, src, None, 10, BOS, EOS)


def test_a_one_dimensional_source_is_one_clear_error(tiny_model):
    with pytest.raises(ValueError, match=r"shape \(batch, src_len\), got shape \(3,\).*unsqueeze\(0\)"):
        beam_search(tiny_model, torch.tensor([4, 5, 6]), None, 10, BOS, EOS)


@pytest.mark.parametrize("batch_size", [0, -1, True])
def test_translate_refuses_a_batch_size_that_is_not_positive(tiny_model, batch_size):
    vocab = toy_vocab(14)
    with pytest.raises(ValueError, match="batch_size is the most sentences decoded at once and must be >= 1"):
        translate(tiny_model, ["4 5"], src_vocab=vocab, tgt_vocab=vocab, batch_size=batch_size)


def test_a_max_len_beyond_the_positional_table_is_refused(tiny_model):
    with pytest.raises(ValueError, match="max_len=65 is longer than the model's positional table"):
        greedy_decode(tiny_model, torch.tensor([[4, 5]]), None, 65, BOS, EOS)
    with pytest.raises(ValueError, match="max_len counts <s> too"):
        greedy_decode(tiny_model, torch.tensor([[4, 5]]), None, True, BOS, EOS)


@pytest.mark.parametrize("limit", [-1, 0, True])
def test_evaluate_refuses_a_limit_that_is_not_a_positive_number_before_loading_anything(tmp_path, limit):
    with pytest.raises(ValueError, match="limit is a number of sentences and must be >= 1"):
        evaluate_checkpoint(tmp_path / "missing.pt", "test", limit=limit, progress=False)


# --- The command line ----------------------------------------------------------------------------------------------


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert one_line(err) and err.startswith("error: "), err
    return err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_max_minutes_that_would_switch_the_limit_off_is_refused(tmp_path, capsys, value):
    out = tmp_path / "run"
    assert cli.main(["train", "--preset", "toy-copy", "--max-minutes", value, "--out", str(out)]) == 1
    assert f"--max-minutes must be a positive number, got {float(value)}" in error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("value", ["nan", "0"])
def test_a_download_deadline_that_would_never_end_or_never_start_is_refused(tmp_path, capsys, value):
    assert cli.main(["download", "--root", str(tmp_path / "data"), "--deadline", value]) == 1
    assert f"--deadline must be a positive number, got {float(value)}" in error_line(capsys)


@pytest.mark.parametrize(
    "option, value",
    [("--limit", "-1"), ("--limit", "0"), ("--samples", "-1"), ("--beam", "0"), ("--length-penalty", "-0.5"),
     ("--length-penalty", "nan"), ("--length-penalty", "11")],
)  # fmt: skip
def test_evaluate_refuses_bad_numbers_before_loading_anything(tmp_path, capsys, option, value):
    assert cli.main(["evaluate", "--checkpoint", str(tmp_path / "missing.pt"), option, value]) == 1
    assert option in error_line(capsys)


@pytest.mark.slow
def test_a_huge_beam_is_refused_in_one_line_with_the_limit(tmp_path):
    config, vocab = get_preset("toy-copy"), toy_vocab(14)
    path = save_checkpoint(tmp_path / "c.pt", build_model(config, 14, 14), config, vocab, vocab)
    result = run_cli("translate", "--checkpoint", str(path), "--beam", "100000", "4 5 6")
    assert result.returncode == 1 and one_line(result.stderr)
    assert f"--beam must be at least 1 (1 = greedy) and at most {MAX_BEAM_SIZE}, got 100000" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_train_on_cuda_without_cuda_is_one_line_and_leaves_no_run_folder(tmp_path):
    out = tmp_path / "run"
    result = run_cli("train", "--preset", "toy-copy", "--device", "cuda", "--max-steps", "1", "--out", str(out))
    assert result.returncode == 1 and one_line(result.stderr), result.stderr
    assert "--device cuda: CUDA is not available" in result.stderr and "--device cpu" in result.stderr
    assert not out.exists()


def test_an_unknown_device_is_one_line(tmp_path, capsys):
    assert cli.main(["train", "--preset", "toy-copy", "--device", "banana", "--out", str(tmp_path / "r")]) == 1
    assert "--device 'banana' is not a device" in error_line(capsys)
    assert not (tmp_path / "r").exists()


def test_a_failed_download_is_one_line(monkeypatch, capsys, tmp_path):
    def offline(root, **options):
        raise DownloadError(f"could not get val.de.gz (no source). set {MIRROR_ENV}")

    monkeypatch.setattr("transformer_course.data.download_multi30k", offline)
    assert cli.main(["download", "--root", str(tmp_path)]) == 1
    assert "could not get val.de.gz" in error_line(capsys)


def test_a_diverged_training_is_one_line(monkeypatch, capsys, tmp_path):
    from transformer_course.train import TrainingDiverged

    def diverging(*args, **kwargs):
        raise TrainingDiverged("the loss became nan at step 3; the last good checkpoint is run/last.pt")

    monkeypatch.setattr("transformer_course.train.fit", diverging)
    assert cli.main(["train", "--preset", "toy-copy", "--out", str(tmp_path / "run")]) == 1
    assert "the loss became nan at step 3" in error_line(capsys)


@pytest.mark.slow
def test_a_damaged_checkpoint_is_one_line_naming_it(tmp_path):
    path = tmp_path / "notes.pt"
    path.write_text("not a checkpoint")
    result = run_cli("translate", "--checkpoint", str(path), "Hallo")
    assert result.returncode == 1 and one_line(result.stderr) and str(path) in result.stderr, result.stderr


def test_a_full_disk_while_writing_the_json_report_is_one_line_naming_it(monkeypatch, capsys, tmp_path, full_disk):
    result = EvalResult("test", 1, 12.5, "sig", 13.0, ["a"], ["b"], ["c"], 1.0)
    monkeypatch.setattr("transformer_course.evaluate.evaluate_checkpoint", lambda *args, **kwargs: result)
    report = tmp_path / "report.json"
    assert cli.main(["evaluate", "--checkpoint", "c.pt", "--json", str(report), "--no-progress"]) == 1
    line = error_line(capsys)
    assert "No space left on device" in line and str(report) in line and "free some disk space" in line
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_full_disk_while_training_is_one_line_naming_the_checkpoint(capsys, tmp_path, full_disk):
    out = tmp_path / "run"
    assert cli.main(["train", "--preset", "toy-copy", "--max-steps", "2", "--out", str(out), "--no-progress"]) == 1
    line = error_line(capsys)
    assert "No space left on device" in line and str(out) in line and "inline_container" not in line


def test_a_real_bug_keeps_its_traceback(monkeypatch):
    def buggy(args):
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setitem(cli.COMMANDS, "download", buggy)
    with pytest.raises(TypeError, match="unsupported operand"):
        cli.main(["download"])


@pytest.mark.slow
def test_a_real_bug_shows_a_traceback_from_the_command_line(tmp_path):
    config, vocab = get_preset("toy-copy"), toy_vocab(14)
    path = save_checkpoint(tmp_path / "c.pt", build_model(config, 14, 14), config, vocab, vocab)
    code = (
        "import sys; from transformer_course import cli\n"
        "cli.COMMANDS['translate'] = lambda args: [].pop()\n"  # an IndexError: a bug, not a user's mistake
        f"sys.exit(cli.main(['translate', '--checkpoint', {str(path)!r}, 'x']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback (most recent call last)" in result.stderr
    assert "IndexError: pop from empty list" in result.stderr


def test_main_puts_the_sigterm_handler_back(capsys):
    before = signal.getsignal(signal.SIGTERM)
    cli.main(["train", "--preset", "nonexistent"])
    assert signal.getsignal(signal.SIGTERM) is before
    capsys.readouterr()
