"""Bug: cuts every sequence to the shortest one instead of padding to the longest."""
import torch

EXPECT_FAIL = {"right_padding_with_zero": "cut to the shortest"}


def pad_collate(batch):
    width = min(len(s) for s, _ in batch)
    padded = torch.stack([s[:width] for s, _ in batch])
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
