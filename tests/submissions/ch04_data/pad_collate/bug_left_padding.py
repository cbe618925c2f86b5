"""Bug: pads on the left (zeros before each sequence)."""
import torch

EXPECT_FAIL = {"right_padding_with_zero": "padding is on the left"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    padded = torch.zeros(len(batch), width, dtype=torch.long)
    for i, (s, _) in enumerate(batch):
        if len(s):
            padded[i, width - len(s):] = s
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
