"""Bug: pads with -1 (a "not a token" marker) instead of 0."""
import torch

EXPECT_FAIL = {"right_padding_with_zero": "padding value is -1"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    padded = torch.full((len(batch), width), -1, dtype=torch.long)
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
