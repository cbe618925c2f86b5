"""Correct, written differently: new_zeros from the first sequence, narrow(...).copy_(...) per row, and
torch.LongTensor for the lengths and labels."""
import torch

EXPECT_PASS = True


def pad_collate(batch):
    sequences = [item[0] for item in batch]
    longest = 0
    for s in sequences:
        longest = max(longest, s.numel())
    padded = sequences[0].new_zeros((len(sequences), longest))
    for row, s in zip(padded, sequences):
        row.narrow(0, 0, s.numel()).copy_(s)
    return padded, torch.LongTensor([s.numel() for s in sequences]), torch.LongTensor([item[1] for item in batch])
