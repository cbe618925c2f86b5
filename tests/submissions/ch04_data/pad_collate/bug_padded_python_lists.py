"""Bug: pads Python lists but returns them as lists, never making a tensor of padded."""
import torch

EXPECT_FAIL = {"returns_int64_tensors": "return torch.tensor(padded"}


def pad_collate(batch):
    rows = [s.tolist() for s, _ in batch]
    width = max(len(r) for r in rows)
    padded = [r + [0] * (width - len(r)) for r in rows]
    return padded, torch.tensor([len(r) for r in rows]), torch.tensor([y for _, y in batch])
