"""Bug: sorts the lengths for pack_padded_sequence, but leaves the rows and labels in batch order."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"keeps_batch_order": "the lengths are sorted", "lengths_and_labels": "the lengths are sorted"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    lengths, _ = torch.tensor([len(s) for s in seqs]).sort(descending=True)
    return pad_sequence(seqs, batch_first=True), lengths, torch.tensor([y for _, y in batch])
