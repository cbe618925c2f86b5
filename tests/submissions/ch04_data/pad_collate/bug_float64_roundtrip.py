"""Bug: builds padded in float64 and converts with .long() at the end. float64 holds every int exactly only up to
2**53: token ids near the ends of int64 (2**62 + 1, 2**63 - 1) are rounded. Token ids past 2**31 and 2**24 (what
the hand-written cases use) survive, so only generated batches with such ids show it."""
import torch

EXPECT_FAIL = {"returns_int64_tensors": "wrong padded"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    padded = torch.zeros(len(batch), width, dtype=torch.float64)
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s.double()
    lengths = torch.tensor([len(s) for s, _ in batch], dtype=torch.long)
    return padded.long(), lengths, torch.tensor([y for _, y in batch], dtype=torch.long)
