"""Correct, written differently: preallocated int64 zeros filled element by element in Python loops."""
import torch

EXPECT_PASS = True


def pad_collate(batch):
    B = len(batch)
    max_len = max(seq.size(0) for seq, _ in batch)
    padded = torch.zeros(B, max_len, dtype=torch.int64)
    lengths = torch.zeros(B, dtype=torch.int64)
    labels = torch.zeros(B, dtype=torch.int64)
    for i, (seq, label) in enumerate(batch):
        n = seq.size(0)
        for j in range(n):
            padded[i, j] = seq[j]
        lengths[i] = n
        labels[i] = label
    return padded, lengths, labels
