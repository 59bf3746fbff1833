"""DDP: two gloo processes on CPU train like one process that averages the two ranks' gradients."""

import socket

import pytest
import torch
import torch.multiprocessing as mp

from transformer_course import train
from transformer_course.config import get_preset
from transformer_course.data import PAD
from transformer_course.model import build_model
from transformer_course.train import LabelSmoothingLoss, fit, load_checkpoint, make_scheduler, toy_data

CONFIG = get_preset("toy-copy")  # dropout 0: the two runs see the same numbers
STEPS = 3


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def sgd(model):
    """Plain SGD for both runs: an update is proportional to the gradient, so the comparison is sharp
    (Adam's m/√v would turn rounding noise in near-zero gradients into full-size steps)."""
    return torch.optim.SGD(model.parameters(), lr=100.0)


def shard_data(rank: int, world_size: int):
    return toy_data(n_train=640, batch_size=16, rank=rank, world_size=world_size)


def ddp_worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    import os

    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank)
    )
    torch.set_num_threads(1)
    train.make_optimizer = sgd  # this process only
    fit(CONFIG, shard_data(rank, world_size), out_dir, max_steps=STEPS, device="cpu", progress=False)
    torch.distributed.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_processes_equal_one_process_averaging_the_rank_gradients(tmp_path):
    mp.start_processes(ddp_worker, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True, start_method="spawn")

    # One checkpoint set, written by rank 0 only.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "best.pt",
        "history.csv",
        "history.json",
        "last.pt",
        "loss.png",
    ]
    ddp = load_checkpoint(tmp_path / "last.pt")
    assert ddp.step == STEPS

    # The same training in one process: each rank's loss (per token of its own shard), gradients averaged.
    torch.manual_seed(CONFIG.seed)
    shards = [shard_data(rank, 2) for rank in range(2)]
    model = build_model(CONFIG, len(shards[0].src_vocab), len(shards[0].tgt_vocab))
    optimizer = sgd(model)
    scheduler = make_scheduler(optimizer, CONFIG)
    loss_fn = LabelSmoothingLoss(CONFIG.label_smoothing, PAD, reduction="sum")
    streams = [shard.train_batches(0, 0) for shard in shards]
    for _ in range(STEPS):
        grads = []
        for stream in streams:
            batch = next(stream)
            model.zero_grad()
            logits = model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask))
            (loss_fn(logits, batch.tgt_out) / batch.n_tokens).backward()
            grads.append([p.grad.clone() for p in model.parameters()])
        for p, g0, g1 in zip(model.parameters(), *grads):
            p.grad = (g0 + g1) / 2
        optimizer.step()
        scheduler.step()
    for name, value in model.state_dict().items():
        torch.testing.assert_close(ddp.model.state_dict()[name], value)


def test_each_rank_gets_its_own_shard_of_equal_length():
    ranks = [shard_data(rank, 2) for rank in range(2)]
    batches = [list(r.train_batches(0, 0)) for r in ranks]
    assert len(batches[0]) == len(batches[1]) == ranks[0].batches_per_epoch(0)
    assert not torch.equal(batches[0][0].src, batches[1][0].src)
