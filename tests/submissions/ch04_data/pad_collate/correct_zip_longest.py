"""Correct, written differently: itertools.zip_longest(fillvalue=0) over the token lists, transposed."""
import itertools
import torch

EXPECT_PASS = True


def pad_collate(batch):
    rows = [seq.tolist() for seq, _ in batch]
    cols = list(itertools.zip_longest(*rows, fillvalue=0))
    padded = torch.tensor(cols, dtype=torch.long).T.reshape(len(rows), -1) if cols else torch.zeros(len(rows), 0, dtype=torch.long)
    return padded.contiguous(), torch.LongTensor([len(r) for r in rows]), torch.LongTensor([l for _, l in batch])
