"""Fixtures every test file may use. Helpers that tests import (reference solutions, the Multi30k folder, the
notebook runner, the glossary reader) live in tests/helpers.py: ``from helpers import …``, never from a test file."""

import pytest
import torch


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
