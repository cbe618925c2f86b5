"""Bug: the labels are made float ("a tensor of numbers"), not the int64 class indices CrossEntropyLoss wants."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"returns_int64_tensors": "labels are class indices"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    labels = torch.tensor([y for _, y in batch], dtype=torch.float)
    return pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]), labels
