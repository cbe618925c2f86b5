"""Bug: squeeze()s the result "to tidy it up", which drops the batch dim of a batch of one."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"batch_of_one": "batch dim"}


def pad_collate(batch):
    padded = pad_sequence([s for s, _ in batch], batch_first=True).squeeze()
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
