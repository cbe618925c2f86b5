"""Bug: measures the lengths on the padded rows, so every length is max_len."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"lengths_and_labels": "measured after padding", "keeps_batch_order": "not only out of order"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    padded = pad_sequence(seqs, batch_first=True)
    lengths = torch.tensor([len(row) for row in padded], dtype=torch.long)
    return padded, lengths, torch.tensor([y for _, y in batch])
