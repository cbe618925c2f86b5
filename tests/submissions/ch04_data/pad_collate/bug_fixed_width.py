"""Bug: pads every batch to a fixed MAX_LEN instead of the longest sequence of the batch."""
import torch

EXPECT_FAIL = {"right_padding_with_zero": "not to a fixed or larger width"}


MAX_LEN = 8

def pad_collate(batch):
    padded = torch.zeros(len(batch), MAX_LEN, dtype=torch.long)
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s[:MAX_LEN]
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
