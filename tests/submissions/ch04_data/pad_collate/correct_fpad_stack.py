"""Correct, written differently: F.pad each sequence on the right to the longest, then stack."""
import torch
import torch.nn.functional as F

EXPECT_PASS = True


def pad_collate(batch):
    seqs, labels = zip(*batch)
    longest = max(len(s) for s in seqs)
    padded = torch.stack([F.pad(s, (0, longest - len(s)), value=0) for s in seqs])
    return padded.long(), torch.tensor([len(s) for s in seqs], dtype=torch.int64), torch.tensor(labels).long()
