"""Bug: returns the lengths as a Python list, not a tensor."""
import torch

EXPECT_FAIL = {"returns_int64_tensors": "return torch.tensor(lengths"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    padded = torch.zeros(len(batch), width, dtype=torch.long)
    lengths = []
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s
        lengths.append(len(s))
    return padded, lengths, torch.tensor([y for _, y in batch])
