"""Bug: padded is int32, not int64."""
import torch

EXPECT_FAIL = {"returns_int64_tensors": "integer type, but not int64"}


def pad_collate(batch):
    L = max(len(s) for s, _ in batch)
    padded = torch.zeros(len(batch), L, dtype=torch.int32)
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
