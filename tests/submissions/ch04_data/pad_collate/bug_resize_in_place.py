"""Bug: grows each input sequence in place with resize_() and zero-fills the tail: the inputs change."""
import torch

EXPECT_FAIL = {"does_not_modify_inputs": "changed an input sequence in place"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    lengths = torch.tensor([len(s) for s, _ in batch])
    for s, _ in batch:
        n = len(s)
        s.resize_(width)
        s[n:] = 0
    padded = torch.stack([s for s, _ in batch]) if batch else torch.zeros(0, 0, dtype=torch.long)
    return padded, lengths, torch.tensor([y for _, y in batch])
