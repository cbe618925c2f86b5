"""Correct, written differently: torch's pad_sequence with batch_first=True does the padding."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_PASS = True


def pad_collate(batch):
    sequences = [seq for seq, _ in batch]
    padded = pad_sequence(sequences, batch_first=True, padding_value=0)
    lengths = torch.tensor([s.numel() for s in sequences])
    labels = torch.tensor([label for _, label in batch])
    return padded, lengths, labels
