"""Fixtures every test file may use. Helpers that tests import (reference solutions, the Multi30k folder, the
notebook runner, the glossary reader) live in tests/helpers.py: ``from helpers import …``, never from a test file."""

import os
from pathlib import Path

import pytest
import torch

# pytest-xdist (make test, make test-fast): the workers share the cores, so each worker, and every kernel and
# process it starts (they inherit OMP_NUM_THREADS), runs torch on its share of them. OpenMP threads that outnumber
# the cores wait on each other: two notebooks side by side, two threads each on two cores, crawl.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _share = max(1, len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ["OMP_NUM_THREADS"] = str(_share)
    torch.set_num_threads(_share)


@pytest.fixture(autouse=True)
def _torch_threads_restored():
    """A test that sets torch's thread count does not pass it on to the next test."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """pytest-xdist with ``--dist loadgroup`` (``make test``): each test file is one group, run by one worker, so
    that its module fixtures are built once; files that share a session fixture name one group of their own
    (``pytestmark = pytest.mark.xdist_group("web")``)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def no_mha_fastpath():
    """nn.Transformer* modules in eval mode take a fused 'fast path' that zeroes padded positions;
    switch it off so that every position can be compared."""
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(True)


@pytest.fixture
def one_thread():
    """Tiny models: one torch thread is faster than two, and much faster on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def matplotlib_settings_restored():
    """Every test starts from the same matplotlib settings: a zh test that draws puts a CJK font first in
    ``font.sans-serif`` (what the 中文版 wants in a notebook), and that must not leak into the next test."""
    try:
        import matplotlib
    except ImportError:  # the [notebooks] extra is not installed
        yield
        return
    with matplotlib.rc_context():
        yield


@pytest.fixture(scope="session")
def web_checkpoints(tmp_path_factory):
    """Two small Multi30k models, spaCy words and BPE pieces, trained 400 steps on the first 6,000 pairs
    (about a minute each on one idle core): enough that greedy translations are sentences, not ties
    (tests/test_web_export.py, tests/test_web_page.py). ``TC_WEB_CHECKPOINTS=DIR`` takes DIR/words.pt
    and DIR/bpe.pt instead (copies of what this fixture trained before), to rerun those tests quickly."""
    from transformer_course.config import get_preset
    from transformer_course.data import MIRROR_ENV, multi30k_data
    from transformer_course.train import RunOptions, fit

    from helpers import MULTI30K, NO_MULTI30K

    if MULTI30K is None:
        pytest.skip(NO_MULTI30K)
    mirror = MULTI30K
    root = tmp_path_factory.mktemp("web-data")
    reuse = os.environ.get("TC_WEB_CHECKPOINTS")
    if reuse:
        os.environ.setdefault(MIRROR_ENV, str(mirror))
        return {"words": Path(reuse) / "words.pt", "bpe": Path(reuse) / "bpe.pt", "root": root}
    sizes = dict(N=2, d_model=64, d_ff=128, h=4, tokens_per_batch=1000, warmup=100, lr_factor=0.5, max_len=128)
    # nn.Dropout and autograd's loss: the two models these tests were sized on. No test asks them to translate well
    # (the page and the graphs are compared with PyTorch token for token); they need only varied outputs that end.
    sizes.update(fast_dropout=False, fused_loss=False)
    recipes = {
        "words": get_preset("multi30k-cpu-words").replace(name="web-words", **sizes),
        "bpe": get_preset("multi30k-cpu").replace(name="web-bpe", subword_vocab=1000, **sizes),
    }
    checkpoints = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(MIRROR_ENV, str(mirror))
            for kind, config in recipes.items():
                out = tmp_path_factory.mktemp(f"web-{kind}")
                fit(
                    config,
                    multi30k_data(config, root, limit=6000, progress=False),
                    RunOptions(out, max_steps=400, progress=False),
                )
                checkpoints[kind] = out / "best.pt"
    finally:
        torch.set_num_threads(threads)
    checkpoints["root"] = root
    return checkpoints


@pytest.fixture(scope="session")
def web_exports(web_checkpoints, tmp_path_factory):
    """Both checkpoints exported for the browser in fp32 (PyTorch's numbers, which the tests compare token for
    token): the word model with the command line, the BPE one with ``export_web``."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from course_tools.web import export_web
    from transformer_course.cli import main

    folders = {kind: tmp_path_factory.mktemp(f"web-page-{kind}") for kind in ("words", "bpe")}
    assert main(["export-web", str(web_checkpoints["words"]), str(folders["words"]), "--precision", "fp32"]) == 0
    export_web(web_checkpoints["bpe"], folders["bpe"], precision="fp32")
    return folders
