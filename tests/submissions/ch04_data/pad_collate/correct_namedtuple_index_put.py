"""Correct, written differently: returns a named tuple; padded is filled with one index_put_ over all tokens at
once; items are read by index (lists or tuples alike); labels go through torch.as_tensor."""
from collections import namedtuple

import torch

EXPECT_PASS = True

Padded = namedtuple("Padded", ["padded", "lengths", "labels"])


def pad_collate(batch):
    seqs = [batch[i][0] for i in range(len(batch))]
    lengths = torch.as_tensor([s.shape[0] for s in seqs], dtype=torch.int64)
    rows = torch.repeat_interleave(torch.arange(len(seqs)), lengths)
    cols = torch.cat([torch.arange(int(n)) for n in lengths]) if len(seqs) else torch.zeros(0, dtype=torch.long)
    padded = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.int64)
    padded.index_put_((rows, cols), torch.cat(seqs).to(torch.int64))
    labels = torch.as_tensor([int(batch[i][1]) for i in range(len(batch))]).to(torch.int64)
    return Padded(padded, lengths, labels)
