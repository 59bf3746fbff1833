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
