"""Bug: the labels go through a float64 tensor (torch.tensor(labels, dtype=torch.float64).long()). Labels up to
2**53 survive, so the hand-written cases (2**33 + 7, 2**40 + 1) pass; generated labels up to 2**62 do not."""
import torch

EXPECT_FAIL = {"lengths_and_labels": "wrong labels"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    padded = torch.zeros(len(batch), width, dtype=torch.long)
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s
    lengths = torch.tensor([len(s) for s, _ in batch], dtype=torch.long)
    labels = torch.tensor([float(y) for _, y in batch], dtype=torch.float64).long()
    return padded, lengths, labels
