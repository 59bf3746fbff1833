import functools
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

SOLUTIONS_DIR = Path(__file__).resolve().parent.parent / "notebooks" / "solutions"


@functools.cache
def solutions(name: str):
    """The reference solutions ``notebooks/solutions/<name>.py`` (e.g. "nb01_masks") as a module.

    They live beside the notebooks, not in the package (a student's install holds none), so tests import them by
    path, under a private module name that no ``import`` statement can reach."""
    path = SOLUTIONS_DIR / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no reference solutions {path}; give the module's name, e.g. solutions('nb01_masks')")
    spec = importlib.util.spec_from_file_location(f"_reference_solutions_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before running it: dataclasses and pickling look their module up there
    spec.loader.exec_module(module)
    return module


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
