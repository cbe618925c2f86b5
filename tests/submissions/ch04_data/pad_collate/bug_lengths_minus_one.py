"""Bug: records len(sequence) - 1 (the last token's index) as the length."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"lengths_and_labels": "len(sequence) - 1", "batch_of_one": "one short of len(sequence)"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    padded = pad_sequence(seqs, batch_first=True)
    lengths = torch.tensor([s.shape[0] - 1 for s in seqs])  # index of last token
    return padded, lengths, torch.tensor([y for _, y in batch])
