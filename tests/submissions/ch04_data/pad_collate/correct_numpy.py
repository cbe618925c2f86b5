"""Correct, written differently: pads in a numpy int64 array, torch.from_numpy."""
import numpy as np
import torch

EXPECT_PASS = True


def pad_collate(batch):
    lens = np.array([len(s) for s, _ in batch], dtype=np.int64)
    out = np.zeros((len(batch), lens.max()), dtype=np.int64)
    for i, (s, _) in enumerate(batch):
        out[i, :lens[i]] = s.numpy()
    return torch.from_numpy(out), torch.from_numpy(lens), torch.tensor([y for _, y in batch])
