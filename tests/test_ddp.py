"""DDP: two gloo processes on CPU train like one process that averages the two ranks' gradients."""

import os

import pytest
import torch
import torch.multiprocessing as mp

from transformer_course.config import get_preset
from transformer_course.data import PAD
from transformer_course.model import build_model
from transformer_course.train import LabelSmoothingLoss, RunOptions, fit, load_checkpoint, make_scheduler, toy_data

CONFIG = get_preset("toy-copy")  # dropout 0: the two runs see the same numbers
STEPS = 3


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def sgd(model):
    """Plain SGD for both runs: an update is proportional to the gradient, so the comparison is sharp
    (Adam's m/√v would turn rounding noise in near-zero gradients into full-size steps)."""
    return torch.optim.SGD(model.parameters(), lr=100.0)


def shard_data(rank: int, world_size: int):
    return toy_data(n_train=640, batch_size=16, rank=rank, world_size=world_size)


def join_group(rank: int, world_size: int, rendezvous: str) -> None:
    """The ranks meet through a file (a FileStore), not a TCP port: a port probed free can be taken by another
    process before the group binds it. The environment is the one torchrun gives; fit's setup_distributed finds
    the group already joined and uses it."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
    torch.distributed.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world_size)
    torch.set_num_threads(1)


def rendezvous_file(tmp_path) -> str:
    """A file beside the test's folder (the folder itself holds only what the run writes)."""
    return str(tmp_path.with_name(tmp_path.name + ".rendezvous"))


def ddp_worker(rank: int, world_size: int, rendezvous: str, out_dir: str) -> None:
    join_group(rank, world_size, rendezvous)
    fit(
        CONFIG,
        shard_data(rank, world_size),
        RunOptions(out_dir, max_steps=STEPS, device="cpu", progress=False),
        optimizer_factory=sgd,
    )
    torch.distributed.destroy_process_group()


def logits_of(model, batch):
    return model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask))  # (B, T, V)


def average_rank_gradients_and_step(model, optimizer, scheduler, loss_fn, groups) -> None:
    """One update of the single-process reference: each rank's gradient is the mean over its group of the
    per-token loss gradients; the update uses the mean of the ranks' gradients (what DDP's all-reduce gives)."""
    grads = []
    for group in groups:  # one group of micro-batches per rank
        model.zero_grad()
        for batch in group:
            (loss_fn(logits_of(model, batch), batch.tgt_out) / batch.n_tokens / len(group)).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for p, *rank_grads in zip(model.parameters(), *grads):
        p.grad = sum(rank_grads) / len(rank_grads)
    optimizer.step()
    scheduler.step()


@pytest.mark.slow
def test_two_gloo_processes_equal_one_process_averaging_the_rank_gradients(tmp_path):
    mp.start_processes(
        ddp_worker, args=(2, rendezvous_file(tmp_path), str(tmp_path)), nprocs=2, join=True, start_method="spawn"
    )

    # One checkpoint set, written by rank 0 only.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "best.pt",
        "history.csv",
        "history.json",
        "last.pt",
        "loss.png",
        "run.json",  # the run's identity
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
        average_rank_gradients_and_step(model, optimizer, scheduler, loss_fn, [[next(s)] for s in streams])
    for name, value in model.state_dict().items():
        torch.testing.assert_close(ddp.model.state_dict()[name], value)


# Gradient accumulation under DDP, over an epoch whose last accumulation group is short.
ACCUMULATE = 3
BATCHES_PER_RANK = 7  # not a multiple of 3: each epoch's groups hold 3, 3 and 1 micro-batches
EPOCHS = 2
ACCUMULATING = CONFIG.replace(accumulate=ACCUMULATE)


def accumulation_shard(rank: int, world_size: int):
    return toy_data(n_train=BATCHES_PER_RANK * 16 * world_size, batch_size=16, rank=rank, world_size=world_size)


def ddp_accumulation_worker(rank: int, world_size: int, rendezvous: str, out_dir: str) -> None:
    join_group(rank, world_size, rendezvous)
    after_each_step = []  # this rank's parameters after every optimizer step

    def record(step, model):
        after_each_step.append({name: value.detach().clone() for name, value in model.state_dict().items()})

    data = accumulation_shard(rank, world_size)
    fit(
        ACCUMULATING,
        data,
        RunOptions(epochs=EPOCHS, device="cpu", progress=False),
        optimizer_factory=sgd,
        after_step=record,
    )
    torch.save(after_each_step, os.path.join(out_dir, f"rank{rank}.pt"))
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_accumulation_with_a_short_last_group_keeps_the_ranks_identical_after_every_step(tmp_path):
    mp.start_processes(
        ddp_accumulation_worker,
        args=(2, rendezvous_file(tmp_path), str(tmp_path)),
        nprocs=2,
        join=True,
        start_method="spawn",
    )
    ranks = [torch.load(tmp_path / f"rank{rank}.pt", weights_only=True) for rank in range(2)]
    steps_per_epoch = -(-BATCHES_PER_RANK // ACCUMULATE)  # 3 updates: groups of 3, 3 and 1 micro-batches
    assert len(ranks[0]) == len(ranks[1]) == EPOCHS * steps_per_epoch

    # Bit-identical copies after every update, the one after each epoch's short group included.
    for step, (rank0, rank1) in enumerate(zip(*ranks), start=1):
        for name in rank0:
            assert torch.equal(rank0[name], rank1[name]), f"after step {step} the ranks differ in {name}"

    # And equal to one process that averages the two ranks' gradients, group by group.
    torch.manual_seed(ACCUMULATING.seed)
    shards = [accumulation_shard(rank, 2) for rank in range(2)]
    model = build_model(ACCUMULATING, len(shards[0].src_vocab), len(shards[0].tgt_vocab))
    optimizer = sgd(model)
    scheduler = make_scheduler(optimizer, ACCUMULATING)
    loss_fn = LabelSmoothingLoss(ACCUMULATING.label_smoothing, PAD, reduction="sum")
    step = 0
    for epoch in range(EPOCHS):
        batches = [list(shard.train_batches(epoch, 0)) for shard in shards]  # (rank, micro-batch)
        assert len(batches[0]) == BATCHES_PER_RANK
        for first in range(0, BATCHES_PER_RANK, ACCUMULATE):
            groups = [rank_batches[first : first + ACCUMULATE] for rank_batches in batches]
            average_rank_gradients_and_step(model, optimizer, scheduler, loss_fn, groups)
            for name, value in model.state_dict().items():
                torch.testing.assert_close(
                    ranks[0][step][name], value, msg=lambda m, at=f"step {step + 1}, {name}": f"{at}: {m}"
                )
            step += 1
    assert step == len(ranks[0])


def test_each_rank_gets_its_own_shard_of_equal_length():
    ranks = [shard_data(rank, 2) for rank in range(2)]
    batches = [list(r.train_batches(0, 0)) for r in ranks]
    assert len(batches[0]) == len(batches[1]) == ranks[0].batches_per_epoch(0)
    assert not torch.equal(batches[0][0].src, batches[1][0].src)
