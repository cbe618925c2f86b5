"""Bug: pad_sequence without batch_first=True, so padded is (max_len, B)."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"returns_int64_tensors": "batch_first=True", "right_padding_with_zero": "time first"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    return pad_sequence(seqs), torch.tensor([len(s) for s in seqs]), torch.tensor([y for _, y in batch])
