"""Downloading Multi30k: real HTTP against a server on 127.0.0.1, checksums, mirrors, clear failures.

The served files are copies of the real ones, taken from the mirror folder (TC_DATA_MIRROR, which CI points
at a shared folder) or data/. Without them the tests serve small stand-in files whose checksums
replace the published ones for the test, so the download code is always exercised.
"""

import functools
import gzip
import hashlib
import http.server
import shutil
import socket
import threading
import urllib.request
from pathlib import Path

import pytest

from transformer_course import data as data_module
from transformer_course.data import (
    MIRROR_ENV,
    MULTI30K_SHA256,
    ChecksumError,
    DownloadError,
    download_multi30k,
    load_pairs,
    read_lines,
)
from transformer_course.files import TEMP_SUFFIX, remove_stale_temp_files

from helpers import MULTI30K, needs_multi30k

REPO = Path(__file__).resolve().parents[1]
REAL = MULTI30K  # $TC_DATA_MIRROR or data/ (tests/helpers.py)
needs_files = needs_multi30k


class TruncatingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files from a folder; for names listed in ``truncate`` it promises the full length but
    sends half and closes the connection (a dropped download)."""

    truncate: set = set()
    requested: list = []

    def do_GET(self):
        self.requested.append(self.path)
        name = self.path.rsplit("/", 1)[-1]
        if name in self.truncate:
            data = (Path(self.directory) / name).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """An HTTP server on 127.0.0.1 serving tmp_path/served: yields (base URL, served folder, handler class)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = type("Handler", (TruncatingHandler,), {"truncate": set(), "requested": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(served)))
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )  # a quick shutdown()
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", served, handler
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def originals(tmp_path, monkeypatch) -> Path:
    """A folder with the six files: the real ones, or stand-ins whose sizes and SHA-256 replace the published ones."""
    folder = tmp_path / "originals"
    folder.mkdir()
    for name in MULTI30K_SHA256:
        if REAL is not None:
            shutil.copy(REAL / name, folder / name)
        else:
            with gzip.open(folder / name, "wt", encoding="utf-8") as f:
                f.write("".join(f"{name} line {i}\n" for i in range(100)))
            data = (folder / name).read_bytes()
            monkeypatch.setitem(data_module.MULTI30K_SHA256, name, hashlib.sha256(data).hexdigest())
            monkeypatch.setitem(data_module.MULTI30K_SIZES, name, len(data))
    return folder


def copy(names, source: Path, to: Path):
    for name in names:
        shutil.copy(source / name, to / name)


def corrupt(path: Path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def leftovers(root: Path):
    return sorted(p.name for p in root.iterdir())


@needs_files
def test_the_shared_files_have_the_published_checksums():
    sums = (
        dict(line.split()[::-1] for line in (REAL / "SHA256SUMS").read_text().splitlines() if line.strip())
        if (REAL / "SHA256SUMS").exists()
        else {}
    )
    for name, expected in MULTI30K_SHA256.items():
        assert hashlib.sha256((REAL / name).read_bytes()).hexdigest() == expected
        if sums:
            assert sums[name] == expected


def test_a_good_file_is_downloaded_over_http_and_verified(server, originals, tmp_path, monkeypatch):
    url, served, _ = server
    copy(["val.de.gz", "val.en.gz"], originals, served)
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    root = tmp_path / "data"
    download_multi30k(root, splits=["val"], url=url, verbose=False)
    assert leftovers(root) == ["val.de.gz", "val.en.gz"]
    assert (root / "val.de.gz").read_bytes() == (originals / "val.de.gz").read_bytes()
    assert len(load_pairs("val", root, download=False)) == len(read_lines(originals / "val.en.gz"))


def test_a_corrupted_file_raises_a_checksum_error_and_leaves_nothing(server, originals, tmp_path, monkeypatch):
    url, served, _ = server
    copy(["val.de.gz"], originals, served)
    corrupt(served / "val.de.gz")
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    root = tmp_path / "data"
    with pytest.raises(ChecksumError, match="SHA-256"):
        download_multi30k(root, splits=["val"], langs=["de"], url=url, verbose=False)
    assert leftovers(root) == []


def test_a_dropped_connection_raises_a_checksum_error_and_leaves_nothing(server, originals, tmp_path, monkeypatch):
    url, served, handler = server
    copy(["val.en.gz"], originals, served)
    handler.truncate.add("val.en.gz")
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    root = tmp_path / "data"
    with pytest.raises(ChecksumError, match="not kept"):
        download_multi30k(root, splits=["val"], langs=["en"], url=url, verbose=False)
    assert leftovers(root) == []


def test_a_download_in_progress_is_a_hidden_temporary_file_that_a_stale_sweep_removes(
    server, originals, tmp_path, monkeypatch
):
    url, served, _ = server
    copy(["val.de.gz"], originals, served)
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    root = tmp_path / "data"
    during: list[list[str]] = []  # the folder's contents each time the download reads a chunk
    real_urlopen = urllib.request.urlopen

    def watched_urlopen(*args, **kwargs):
        response = real_urlopen(*args, **kwargs)
        real_read = response.read

        def read(*size):
            during.append(leftovers(root))
            return real_read(*size)

        response.read = read
        return response

    monkeypatch.setattr(urllib.request, "urlopen", watched_urlopen)
    download_multi30k(root, splits=["val"], langs=["de"], url=url, verbose=False)
    [partial] = during[0]  # never the final name before the checksum matched
    assert partial.startswith(".val.de.gz.") and partial.endswith(TEMP_SUFFIX)
    assert leftovers(root) == ["val.de.gz"]
    (root / partial).write_bytes(b"half a file")  # what a SIGKILL in the middle would leave
    assert remove_stale_temp_files(root) == [root / partial]
    assert leftovers(root) == ["val.de.gz"]


def test_a_missing_file_raises_a_clear_error(server, tmp_path, monkeypatch):
    url, _, _ = server  # serves an empty folder: 404 for every file
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    root = tmp_path / "data"
    with pytest.raises(DownloadError, match="404") as info:
        download_multi30k(root, splits=["test"], langs=["en"], url=url, verbose=False)
    assert "test_2016_flickr.en.gz" in str(info.value) and MIRROR_ENV in str(info.value)
    assert not isinstance(info.value, ChecksumError)
    assert leftovers(root) == []


def test_offline_without_a_mirror_says_how_to_get_the_files(tmp_path, monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    with socket.socket() as s:  # a port nobody listens on: the connection is refused, as offline
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/"
    with pytest.raises(DownloadError) as info:
        download_multi30k(tmp_path / "data", splits=["val"], url=closed, timeout=5, verbose=False)
    message = str(info.value)
    assert "python -m transformer_course download" in message and f"export {MIRROR_ENV}=" in message
    assert leftovers(tmp_path / "data") == []


def test_a_local_folder_mirror_from_the_environment_is_used_without_network(originals, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    copy(["test_2016_flickr.de.gz", "test_2016_flickr.en.gz"], originals, mirror)
    monkeypatch.setenv(MIRROR_ENV, str(mirror))
    root = tmp_path / "data"
    download_multi30k(root, splits=["test"], url=None, verbose=False)
    assert leftovers(root) == ["test_2016_flickr.de.gz", "test_2016_flickr.en.gz"]


def test_a_url_mirror_is_tried_first_and_the_official_url_after_it(server, originals, tmp_path, monkeypatch):
    url, served, handler = server
    (served / "official").mkdir()
    copy(["val.de.gz"], originals, served / "official")
    copy(["val.de.gz"], originals, served)
    corrupt(served / "val.de.gz")  # the mirror holds a corrupt copy: fall back to the official location
    monkeypatch.setenv(MIRROR_ENV, url)
    root = tmp_path / "data"
    download_multi30k(root, splits=["val"], langs=["de"], url=url + "/official", verbose=False)
    assert handler.requested == ["/val.de.gz", "/official/val.de.gz"]
    assert (root / "val.de.gz").read_bytes() == (originals / "val.de.gz").read_bytes()


def test_load_pairs_replaces_a_corrupt_file_already_in_data(originals, tmp_path, monkeypatch):
    root = tmp_path / "data"
    root.mkdir()
    copy(["val.en.gz"], originals, root)
    corrupt(root / "val.en.gz")
    monkeypatch.setenv(MIRROR_ENV, str(originals))
    pairs = load_pairs("val", root)
    assert (root / "val.en.gz").read_bytes() == (originals / "val.en.gz").read_bytes()
    assert [en for _, en in pairs] == read_lines(originals / "val.en.gz")


def test_unknown_split_or_language_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        download_multi30k(tmp_path, splits=["dev"], url=None, verbose=False)
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        load_pairs("val", tmp_path, src_lang="fr")


def test_mismatched_line_counts_are_refused(tmp_path):
    for name, lines in (("val.de.gz", ["eins", "zwei", "drei"]), ("val.en.gz", ["one", "two"])):
        with gzip.open(tmp_path / name, "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="has 3 lines but .* has 2"):
        load_pairs("val", tmp_path, download=False)


def test_an_empty_file_is_refused(tmp_path):
    with gzip.open(tmp_path / "val.de.gz", "wt", encoding="utf-8"):
        pass
    with pytest.raises(ValueError, match="is empty"):
        read_lines(tmp_path / "val.de.gz")


def test_a_missing_file_without_download_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m transformer_course download"):
        load_pairs("train", tmp_path, download=False)


def test_a_corrupt_file_in_data_is_moved_aside_not_lost_when_no_source_can_replace_it(originals, tmp_path, monkeypatch):
    """A corrupt file used to be deleted, so offline it was simply gone. Now it is never read under
    its own name, and kept as NAME.corrupt until a good copy is in place (tests/test_reliability_inputs.py)."""
    root = tmp_path / "data"
    root.mkdir()
    copy(["val.de.gz"], originals, root)
    corrupt(root / "val.de.gz")
    damaged = (root / "val.de.gz").read_bytes()
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    with pytest.raises(DownloadError, match="val.de.gz.corrupt"):
        download_multi30k(root, splits=["val"], langs=["de"], url=None, verbose=False)
    assert leftovers(root) == ["val.de.gz.corrupt"] and (root / "val.de.gz.corrupt").read_bytes() == damaged
