"""Bug: takes the items off the caller's list with batch.pop(0) while collating, leaving it empty."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"does_not_modify_inputs": "items were added or removed"}


def pad_collate(batch):
    seqs, labels = [], []
    while batch:
        seq, label = batch.pop(0)
        seqs.append(seq)
        labels.append(label)
    return pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]), torch.tensor(labels)
