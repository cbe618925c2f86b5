"""Bug: writes the padded sequences back into the caller's list (batch[i] = ...)."""
import torch

EXPECT_FAIL = {"does_not_modify_inputs": "replaced by new ones"}


def pad_collate(batch):
    L = max(len(s) for s, _ in batch)
    lengths = torch.tensor([len(s) for s, _ in batch])
    for i, (s, y) in enumerate(batch):
        batch[i] = (torch.cat([s, s.new_zeros(L - len(s))]), y)
    return torch.stack([s for s, _ in batch]), lengths, torch.tensor([y for _, y in batch])
