"""Correct, written differently: one masked assignment of the concatenated sequences into torch.full(..., 0)."""
import torch

EXPECT_PASS = True


def pad_collate(batch):
    sequences, labels = map(list, zip(*batch))
    lengths = torch.tensor(list(map(len, sequences)), dtype=torch.long)
    padded = torch.full((len(sequences), lengths.max()), 0, dtype=torch.long)
    mask = torch.arange(padded.shape[1])[None, :] < lengths[:, None]
    if mask.any():
        padded[mask] = torch.cat(sequences)
    return padded, lengths, torch.tensor(labels, dtype=torch.long)
