"""The code only a GPU runs, checked on a CPU: where each tensor lives and its dtype.

Each test stands in for the one thing a CPU lacks (an NCCL process group, a CUDA device) with a shim that records
what the code asked for and fails as the real thing would: NCCL refuses a CPU tensor, so a collective built on the
CPU under "nccl" fails here before it fails a user on a GPU machine.
"""

from __future__ import annotations

import pytest
import torch

from transformer_course.config import get_preset
from transformer_course.data import toy_batches
from transformer_course.data.toy import toy_vocab
from transformer_course.model import build_model
from transformer_course.train import LabelSmoothingLoss, RunOptions, save_checkpoint
from transformer_course.train import distributed as dist_module
from transformer_course.train.distributed import (
    Distributed,
    all_reduce_sum,
    broadcast_from_main,
    collective_device,
    setup_distributed,
)
from transformer_course.train.step import loss_on_batch
from transformer_course.train.training import training_device

TWO_RANKS = Distributed(rank=1, world_size=2, local_rank=1)


class FakeGroup:
    """A process group of two ranks with ``backend``; each collective records the device its tensor was made
    for (``torch.tensor(..., device=...)``; a CPU build cannot make a CUDA tensor, so the tensor itself stays on
    the CPU) and, like NCCL, refuses one that is not a CUDA tensor."""

    def __init__(self, monkeypatch, backend: str, gpu: int = 1):
        self.backend, self.made_for, self.calls = backend, {}, []
        real_tensor = torch.tensor

        def tensor(data, *args, device=None, **kwargs):
            t = real_tensor(data, *args, **kwargs)
            self.made_for[id(t)] = torch.device(device or "cpu")
            return t

        monkeypatch.setattr(torch, "tensor", tensor)
        monkeypatch.setattr(torch.distributed, "get_backend", lambda group=None: self.backend)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: gpu)
        monkeypatch.setattr(torch.distributed, "all_reduce", self.collective("all_reduce", lambda t: t.mul_(2)))
        monkeypatch.setattr(torch.distributed, "broadcast", self.collective("broadcast", lambda t: t))

    def collective(self, name, apply):
        def run(t, *args, **kwargs):
            device = self.made_for.get(id(t), t.device)
            self.calls.append((name, device, t.dtype))
            if self.backend == "nccl" and device.type != "cuda":
                raise RuntimeError(f"{name}: NCCL moves CUDA tensors only, got one on {device}")
            apply(t)

        return run


def test_all_reduce_under_nccl_reduces_a_tensor_on_this_process_gpu(monkeypatch):
    group = FakeGroup(monkeypatch, "nccl", gpu=1)
    assert all_reduce_sum([1.5, 4.0], TWO_RANKS) == [3.0, 8.0]
    assert group.calls == [("all_reduce", torch.device("cuda", 1), torch.float64)]


def test_all_reduce_under_gloo_reduces_a_cpu_tensor(monkeypatch):
    group = FakeGroup(monkeypatch, "gloo")
    assert all_reduce_sum([1.0, 2.0], TWO_RANKS) == [2.0, 4.0]
    assert group.calls == [("all_reduce", torch.device("cpu"), torch.float64)]


def test_the_shim_fails_a_cpu_tensor_under_nccl_as_nccl_does(monkeypatch):
    group = FakeGroup(monkeypatch, "nccl")
    with pytest.raises(RuntimeError, match="NCCL moves CUDA tensors only"):
        torch.distributed.all_reduce(torch.tensor([1.0]))
    assert group.calls[0][1] == torch.device("cpu")


@pytest.mark.parametrize("backend, device", [("nccl", torch.device("cuda", 1)), ("gloo", torch.device("cpu"))])
def test_every_rank_follows_rank_zero_through_a_tensor_where_the_backend_needs_it(monkeypatch, backend, device):
    group = FakeGroup(monkeypatch, backend, gpu=1)
    assert broadcast_from_main([1.0, 250.5], TWO_RANKS) == [1.0, 250.5]
    assert collective_device() == device
    assert group.calls == [("broadcast", device, torch.float64)]


def test_alone_no_collective_runs(monkeypatch):
    group = FakeGroup(monkeypatch, "nccl")
    assert all_reduce_sum([1.0], Distributed()) == [1.0]
    assert broadcast_from_main([1.0], Distributed()) == [1.0]
    assert group.calls == []


def test_the_loop_and_the_budget_stop_and_plan_through_the_one_broadcast():
    """Neither builds a collective's tensor of its own (the device rule lives in one place)."""
    import inspect

    from transformer_course.train import budget, loop

    for module in (loop, budget):
        source = inspect.getsource(module)
        assert "torch.distributed.broadcast" not in source and "broadcast_from_main" in source, module.__name__


def test_torchrun_on_gpus_joins_nccl_and_takes_the_local_gpu(monkeypatch):
    calls = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.distributed, "init_process_group", lambda backend: calls.append(("init", backend)))
    monkeypatch.setattr(torch.cuda, "set_device", lambda index: calls.append(("set_device", index)))
    assert setup_distributed() == Distributed(rank=1, world_size=2, local_rank=1)
    assert calls == [("init", "nccl"), ("set_device", 1)]
    assert training_device(None, TWO_RANKS) == torch.device("cuda", 1)  # each process its own GPU
    assert training_device("cpu", TWO_RANKS) == torch.device("cpu")


def test_torchrun_on_cpus_joins_gloo_and_sets_no_gpu(monkeypatch):
    calls = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.distributed, "init_process_group", lambda backend: calls.append(("init", backend)))
    monkeypatch.setattr(torch.cuda, "set_device", lambda index: calls.append(("set_device", index)))
    setup_distributed()
    assert calls == [("init", "gloo")]
    assert dist_module.Distributed is Distributed


def tiny_model_and_batch():
    config = get_preset("toy-copy").replace(N=1, d_model=16, d_ff=32, h=2, dropout=0.0)
    torch.manual_seed(0)
    model = build_model(config, 12, 12)
    batch = next(iter(toy_batches("copy", n_batches=1, batch_size=4, vocab_size=12)))
    return model, batch


def test_bf16_autocast_runs_the_products_in_bfloat16_and_the_loss_in_float32():
    model, batch = tiny_model_and_batch()
    seen = []
    hook = model.generator.register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    loss = loss_on_batch(model, batch, LabelSmoothingLoss(0.1, reduction="sum"), autocast=True)
    hook.remove()
    assert seen == [torch.bfloat16]  # the generator's product ran in bfloat16, as it does on a GPU
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the weights stay float32
    plain = loss_on_batch(model, batch, LabelSmoothingLoss(0.1, reduction="sum"), autocast=False)
    assert plain.dtype == torch.float32 and abs(float(loss.detach() - plain.detach())) < 0.05 * float(plain.detach())


def test_a_batch_moves_without_blocking_only_to_a_gpu(monkeypatch):
    from transformer_course.train.history import LogWindow
    from transformer_course.train.step import prepare_batch

    model, batch = tiny_model_and_batch()
    moves = []
    monkeypatch.setattr(
        type(batch), "to", lambda self, device, non_blocking=False: moves.append((device, non_blocking))
    )
    prepare_batch(batch, model, LogWindow(), torch.device("cuda", 0))
    prepare_batch(batch, model, LogWindow(), torch.device("cpu"))
    assert moves == [(torch.device("cuda", 0), True), (torch.device("cpu"), False)]


def test_a_checkpoint_written_on_a_gpu_loads_onto_the_cpu(tmp_path, monkeypatch):
    """torch.save tags each storage with its device; a CUDA tag on a machine without CUDA loads only through
    map_location="cpu", which every reader of checkpoints passes by default."""
    from transformer_course.checkpoint import load_checkpoint

    model, _ = tiny_model_and_batch()
    path = tmp_path / "gpu.pt"
    monkeypatch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")  # as written on a GPU
    vocab = toy_vocab(12)
    save_checkpoint(
        path, model, get_preset("toy-copy").replace(N=1, d_model=16, d_ff=32, h=2, dropout=0.0), vocab, vocab
    )
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(path, weights_only=True)  # what a reader without map_location would do on this machine
    checkpoint = load_checkpoint(path)
    assert all(t.device.type == "cpu" for t in checkpoint.model.state_dict().values())
    assert torch.equal(checkpoint.model.generator.proj.weight, model.generator.proj.weight)


def test_the_memory_check_counts_the_gpu_memory_when_training_on_a_gpu(monkeypatch):
    """On a GPU the model must fit the device's memory, not the host's: a device-recording shim stands in."""
    from types import SimpleNamespace

    from transformer_course.data import toy_data
    from transformer_course.train import training

    asked = []

    def properties(device):
        asked.append(device)
        return SimpleNamespace(total_memory=2**20)  # a 1 MiB GPU: nothing fits

    monkeypatch.setattr(torch.cuda, "get_device_properties", properties)
    config = get_preset("toy-copy")
    with pytest.raises(ValueError, match="more than this machine's 0.0 GiB"):
        dist = Distributed()
        options = training.resolved_options(RunOptions(device="cuda:1", epochs=1, max_steps=1), config, dist)
        training.start_training(config, toy_data(n_train=64, batch_size=8), options, dist, writer=False)
    assert asked == [torch.device("cuda", 1)]
