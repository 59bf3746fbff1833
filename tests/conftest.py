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
