"""Bug: torch.zeros without a dtype, so padded is float32."""
import torch

EXPECT_FAIL = {"returns_int64_tensors": "float32 by default"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    padded = torch.zeros(len(batch), width)
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
