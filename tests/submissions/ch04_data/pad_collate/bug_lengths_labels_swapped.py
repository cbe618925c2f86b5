"""Bug: returns (padded, labels, lengths), the last two swapped."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"lengths_and_labels": "lengths and labels are swapped"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    padded = pad_sequence(seqs, batch_first=True)
    lengths = torch.tensor([len(s) for s in seqs])
    labels = torch.tensor([y for _, y in batch])
    return padded, labels, lengths
