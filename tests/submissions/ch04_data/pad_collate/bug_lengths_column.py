"""Bug: lengths as a column, shape (B, 1), instead of shape (B,)."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"returns_int64_tensors": "lengths must be 1-D"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    lengths = torch.tensor([[len(s)] for s in seqs])
    return pad_sequence(seqs, batch_first=True), lengths, torch.tensor([y for _, y in batch])
