"""Several processes, one model: DistributedDataParallel started by ``torchrun`` (notebook 11).

Each process (rank) trains on its own shard of every epoch's batches; after each backward pass DDP
averages the gradients over all ranks (an all-reduce), so every rank takes the same optimizer step and
the model copies stay identical. The paper trained on 8 GPUs (§5.2).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

__all__ = ["Distributed", "all_reduce_sum", "broadcast_from_main", "collective_device", "setup_distributed"]


@dataclass
class Distributed:
    """Where this process stands in the group: ``rank`` of ``world_size``, GPU ``local_rank`` on its machine."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup_distributed() -> Distributed:
    """Join the process group ``torchrun`` describes in RANK / WORLD_SIZE / LOCAL_RANK (NCCL on GPUs,
    gloo on CPU); a single process without those variables runs alone."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Distributed()
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend)
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    return Distributed(rank, world_size, local_rank)


def collective_device() -> torch.device:
    """Where the tensor of a collective (all-reduce, broadcast) must live: NCCL moves CUDA tensors only, on this
    process's GPU; gloo moves CPU tensors."""
    if torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce_sum(values: list[float], dist: Distributed) -> list[float]:
    """The sum of ``values`` over all ranks (each rank gets the totals); alone, ``values`` unchanged."""
    if not dist.enabled:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=collective_device())
    torch.distributed.all_reduce(t)
    return t.tolist()  # a sync point


def broadcast_from_main(values: list[float], dist: Distributed) -> list[float]:
    """Rank 0's ``values`` on every rank (so all ranks follow one clock or one plan); alone, ``values`` unchanged."""
    if not dist.enabled:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=collective_device())
    torch.distributed.broadcast(t, src=0)
    return t.tolist()  # a sync point
