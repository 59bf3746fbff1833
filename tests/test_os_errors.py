"""Errors the operating system gives, in words: no bare ``[Errno 20]``, and a file-size limit is no full disk.

Every command ends such a failure with one line that names the path, says what is wrong with it and what to do
(:func:`transformer_course.failures.one_line`).
"""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

from transformer_course import cli
from transformer_course.failures import one_line


@pytest.mark.parametrize(
    "code, strerror, words",
    [
        (errno.ENOTDIR, "Not a directory", "afile/sub: not a folder; a part of the path is a file"),
        (errno.EEXIST, "File exists", "afile: already exists; a file of that name is where a folder is needed"),
        (errno.EISDIR, "Is a directory", "afile: is a folder, not a file; it is a folder: name a file"),
        (errno.EFBIG, "File too large", "the file is too large; the file would grow past the largest file allowed"),
    ],
)
def test_python_s_errno_wording_becomes_words_that_say_what_to_do(code, strerror, words):
    name = "afile/sub" if code == errno.ENOTDIR else "afile"
    err = OSError(code, strerror, name) if code != errno.EFBIG else OSError(code, strerror)
    message = one_line(err)
    assert words in message and "[Errno" not in message and "full disk" not in message, message


def test_a_message_of_our_own_is_kept_with_its_hint():
    err = OSError(errno.ENOSPC, "could not write best.pt: No space left on device")
    assert one_line(err).startswith("could not write best.pt") and "free some disk space" in one_line(err)


@pytest.mark.parametrize(
    "argv",
    [
        ["download", "--root", "{file}"],
        ["download", "--root", "{file}/sub"],
    ],
)
def test_a_data_folder_that_is_a_file_is_one_line_without_an_errno(tmp_path, capsys, argv, monkeypatch):
    monkeypatch.setenv("TC_DATA_MIRROR", str(tmp_path / "no-mirror"))
    (tmp_path / "file").write_text("x")
    assert cli.main([a.format(file=tmp_path / "file") for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "[Errno" not in err, err
    assert str(tmp_path / "file") in err


@pytest.mark.slow
def test_a_file_size_limit_while_writing_a_checkpoint_is_named_so_not_called_a_full_disk(tmp_path):
    code = f"""
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the kernel's signal for the limit: write() then fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
from transformer_course.checkpoint import save_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import toy_vocab
from transformer_course.failures import one_line
from transformer_course.model import build_model
config = get_preset("multi30k-cpu").replace(N=1)
vocab = toy_vocab(2000)
try:
    save_checkpoint({str(tmp_path / "big.pt")!r}, build_model(config, 2000, 2000), config, vocab, vocab)
except OSError as err:
    print(one_line(err))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    line = done.stdout.strip()
    assert "big.pt" in line and "ulimit -f" in line and "full disk" not in line, done.stdout + done.stderr[-2000:]
    assert not (tmp_path / "big.pt").exists()
