"""Bug: returns the labels one-hot encoded, (B, num_classes), instead of the class indices (B,)."""
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"returns_int64_tensors": "not one-hot", "lengths_and_labels": "one-hot encoded"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    labels = F.one_hot(torch.tensor([y for _, y in batch]))
    return pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]), labels
