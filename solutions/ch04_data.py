"""Chapter 04 (data): reference solutions for pad_collate, range_stream and lr_range_test."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import nn
from torch.utils.data import IterableDataset, get_worker_info


# --------------------------------------------------------------------------------------------------
# pad_collate
# --------------------------------------------------------------------------------------------------
def pad_collate(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Collate ``(sequence, label)`` pairs of different lengths into one right-padded batch.

    Returns ``padded`` (B, max_len) int64 with 0 after each sequence, ``lengths`` (B,) int64 and
    ``labels`` (B,) int64, all in the order of ``batch``.
    """
    sequences = [torch.as_tensor(sequence, dtype=torch.long) for sequence, _ in batch]
    # The true lengths are recorded, not recovered from the padding later: a token may itself be 0.
    lengths = torch.tensor([len(sequence) for sequence in sequences], dtype=torch.long)
    labels = torch.tensor([int(label) for _, label in batch], dtype=torch.long)
    max_len = int(lengths.max()) if len(sequences) else 0  # 0 when every sequence is empty
    device = sequences[0].device if sequences else None
    padded = torch.zeros((len(sequences), max_len), dtype=torch.long, device=device)
    for row, sequence in enumerate(sequences):
        padded[row, : len(sequence)] = sequence  # the sequence first, the zeros after it
    return padded, lengths, labels


# --------------------------------------------------------------------------------------------------
# range_stream
# --------------------------------------------------------------------------------------------------
class RangeStream(IterableDataset):
    """The ints ``start, ..., end - 1``, each exactly once over a pass, however many loader workers."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__()
        self.start = start
        self.end = end

    def __iter__(self) -> Iterator[int]:
        # Every worker process gets its own copy of this dataset and calls __iter__ on it, so the
        # sharding must be decided here, where get_worker_info() describes the calling worker (it is
        # None in the main process, that is with num_workers=0).
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        # Worker k takes start + k, start + k + n, ...: the shards cover the range with no overlap,
        # whatever its length, and a worker with no items (more workers than items) yields nothing.
        return iter(range(self.start + info.id, self.end, info.num_workers))


# --------------------------------------------------------------------------------------------------
# lr_range_test
# --------------------------------------------------------------------------------------------------
def lr_range_test(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn,
    loader,
    *,
    start_lr: float = 1e-7,
    end_lr: float = 10.0,
    num_iter: int = 100,
    smooth: float = 0.05,
    diverge_threshold: float = 5.0,
) -> tuple[list[float], list[float]]:
    """Smith's learning-rate range test: train with an exponentially growing lr, record smoothed losses.

    The model and the optimizer are restored afterwards, so the test leaves no trace.
    """
    if start_lr <= 0:
        raise ValueError(f"start_lr must be positive, got {start_lr}")
    if end_lr <= start_lr:
        raise ValueError(f"end_lr must be larger than start_lr, got start_lr={start_lr}, end_lr={end_lr}")
    if num_iter < 2:
        raise ValueError(f"num_iter must be at least 2, got {num_iter}")

    # Snapshots that share nothing with the live objects: state_dict() returns references to the
    # very tensors training updates in place, so it is deep-copied.
    model_state = copy.deepcopy(model.state_dict())
    optimizer_state = copy.deepcopy(optimizer.state_dict())
    modes = [(module, module.training) for module in model.modules()]  # each submodule's own mode

    lrs: list[float] = []
    losses: list[float] = []
    try:
        model.train()
        batches = iter(loader)
        smoothed = best = math.inf
        for i in range(num_iter):
            lr = start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))
            for group in optimizer.param_groups:
                group["lr"] = lr
            try:
                inputs, targets = next(batches)
            except StopIteration:  # the loader is shorter than num_iter: start it again
                batches = iter(loader)
                inputs, targets = next(batches)

            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()

            value = loss.item()  # the batch loss before the step, as a plain float
            smoothed = value if i == 0 else smooth * value + (1 - smooth) * smoothed
            lrs.append(lr)
            losses.append(smoothed)
            best = min(best, smoothed)
            if smoothed > diverge_threshold * best:
                break  # diverged: this iteration is recorded, nothing after it
    finally:
        model.load_state_dict(model_state)
        optimizer.load_state_dict(optimizer_state)
        for module, training in modes:
            module.training = training
    return lrs, losses


def suggest_lr(lrs: Sequence[float], losses: Sequence[float], *, skip_start: int = 10, skip_end: int = 5) -> float:
    """The learning rate where the (trimmed) loss curve falls fastest: the most negative np.gradient."""
    # Not losses[skip_start:-skip_end], which is empty when skip_end == 0; and clamped at 0, so that
    # skipping more points than there are leaves none (a negative stop would count from the end).
    stop = max(len(losses) - skip_end, 0)
    kept_lrs = list(lrs)[skip_start:stop]
    kept_losses = list(losses)[skip_start:stop]
    if len(kept_losses) < 2:
        raise ValueError(
            f"only {len(kept_losses)} point(s) remain after skipping {skip_start} at the start and "
            f"{skip_end} at the end of {len(losses)}; numpy.gradient needs at least 2"
        )
    steepest = int(np.argmin(np.gradient(np.asarray(kept_losses, dtype=np.float64))))
    return float(kept_lrs[steepest])


# The hand-written answers to the chapter's "predict, then run" prompts (coursekit.practice): the instructor's
# copy of the notebook checks each of them against what the code really gives.
PREDICTIONS = {
    "04.concat_len": 15,                                  # Circles(10) + Circles(5): a ConcatDataset
    "04.batches_drop_last": (4, 3),                       # 10 items, batch_size=3: 3 full + 1 short; the short one dropped
    "04.collated_pair_shapes": ((5, 1, 28, 28), (5,)),    # 5 (image, label) pairs -> (images, labels)
    "04.collated_label_dtype": "int64",                   # Python ints -> torch.tensor of ints
    "04.unsharded_copies": 2,                             # every worker runs __iter__ on its own copy
    "04.optimizer_state_before_step": 0,                  # momentum buffers appear at the first step
}
