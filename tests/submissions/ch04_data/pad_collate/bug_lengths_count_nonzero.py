"""Bug: recovers the lengths from the padded tensor by counting non-zero tokens (a token may be 0)."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"lengths_and_labels": "non-zero tokens"}


def pad_collate(batch):
    padded = pad_sequence([s for s, _ in batch], batch_first=True)
    lengths = (padded != 0).sum(dim=1)
    return padded, lengths, torch.tensor([y for _, y in batch])
