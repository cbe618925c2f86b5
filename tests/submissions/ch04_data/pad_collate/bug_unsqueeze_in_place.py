"""Bug: unsqueeze_() turns each input sequence into a (1, n) row in place before padding and concatenating."""
import torch
import torch.nn.functional as F

EXPECT_FAIL = {"does_not_modify_inputs": "changed an input sequence in place"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    lengths = torch.tensor([len(s) for s, _ in batch])
    rows = []
    for s, _ in batch:
        n = s.shape[-1]
        s.unsqueeze_(0)
        rows.append(F.pad(s, (0, width - n)))
    return torch.cat(rows), lengths, torch.tensor([y for _, y in batch])
