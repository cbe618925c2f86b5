"""Correct, written differently: pads Python lists, then one torch.tensor with an explicit dtype."""
import torch

EXPECT_PASS = True


def pad_collate(batch):
    rows = [seq.tolist() for seq, _ in batch]
    width = max(map(len, rows))
    padded = torch.tensor([row + [0] * (width - len(row)) for row in rows], dtype=torch.long)
    padded = padded.reshape(len(rows), width)  # torch.tensor([[], []]) is (2, 0) already; no harm
    return (padded, torch.tensor(list(map(len, rows)), dtype=torch.long),
            torch.tensor([label for _, label in batch], dtype=torch.long))
