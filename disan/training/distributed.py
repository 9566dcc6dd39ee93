"""Data-parallel training over the processes that torchrun starts.

``torchrun --nproc_per_node N -m disan train ...`` runs N copies of the command, each with RANK,
WORLD_SIZE and LOCAL_RANK in its environment. Every process builds the same model from the same
seed and draws the same shuffled global batches; :class:`World` gives each its share of every batch,
wraps the model in DistributedDataParallel (which averages the gradients, so that every process takes
the same optimiser step), and holds the few collectives that keep the processes' decisions identical:
a process that decided alone (to stop early, to save, that a loss is NaN) would leave the others
waiting for it forever.

Without torchrun, or with one process, the world is this process alone: no process group, no
collective, and the model is not wrapped.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from disan.nn.device import resolve_device


@dataclass(frozen=True)
class World:
    """This process's place among the processes of a run, and the device it trains on."""
    rank: int = 0
    size: int = 1
    local_rank: int = 0     # the process's index on its own machine: its GPU
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @classmethod
    def from_env(cls, device: str = "cpu", env: Mapping[str, str] | None = None) -> World:
        """The world torchrun describes in the environment (this process alone when it does not), on
        ``device`` (auto, cpu, cuda: :func:`~disan.nn.device.resolve_device`). Under torchrun on CUDA
        every process takes the GPU of its LOCAL_RANK. Raises ValueError for an inconsistent
        environment or a device that is not there."""
        env = os.environ if env is None else env
        if "WORLD_SIZE" not in env:
            return cls(device=resolve_device(device))
        try:
            rank, size = int(env["RANK"]), int(env["WORLD_SIZE"])
            local_rank = int(env.get("LOCAL_RANK", rank))
        except (KeyError, ValueError):
            raise ValueError("WORLD_SIZE is set but RANK or LOCAL_RANK is missing or not a number; "
                             "start a distributed run with torchrun") from None
        if not 0 <= rank < size:
            raise ValueError(f"RANK {rank} is outside a world of {size} processes")
        resolved = resolve_device(device)
        if size > 1 and resolved.type == "cuda" and resolved.index is None:
            resolved = resolve_device(f"cuda:{local_rank}")
        return cls(rank, size, local_rank, resolved)

    @property
    def distributed(self) -> bool:
        """Whether there are other processes to work with."""
        return self.size > 1

    @property
    def is_main(self) -> bool:
        """Whether this is the process that writes: checkpoints, log lines, event files, progress."""
        return self.rank == 0

    @contextmanager
    def process_group(self) -> Iterator[None]:
        """Join the other processes for the duration (gloo on CPU, NCCL on CUDA); nothing in one process."""
        if not self.distributed:
            yield
            return
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)  # NCCL and the object collectives use the current GPU
        # MASTER_ADDR and MASTER_PORT come from torchrun
        dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo", rank=self.rank,
                                world_size=self.size)
        try:
            yield
        finally:
            dist.destroy_process_group()

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """The module to train: the model in DistributedDataParallel, or the model itself in one process."""
        if not self.distributed:
            return model
        # No buffer broadcast: the only buffer is the frozen word vectors, equal everywhere and never changed.
        return DistributedDataParallel(model, device_ids=[self.device.index] if self.device.type == "cuda" else None,
                                       broadcast_buffers=False)

    def share(self, batch: list[int]) -> list[int]:
        """This process's part of a global batch: every size-th example from its rank on, so the
        parts are disjoint, cover the batch and differ in size by one at most."""
        return batch[self.rank::self.size]

    def sum(self, values: list[float]) -> list[float]:
        """Each value summed over all processes."""
        if not self.distributed:
            return values
        total = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(total)
        return total.tolist()

    def all_true(self, flag: bool) -> bool:
        """Whether the flag holds in every process."""
        if not self.distributed:
            return flag
        votes = torch.tensor([int(flag)], device=self.device)
        dist.all_reduce(votes, op=dist.ReduceOp.MIN)
        return bool(votes.item())

    def from_main(self, value):
        """The main process's value (picklable) in every process; what the others pass is ignored."""
        if not self.distributed:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]
