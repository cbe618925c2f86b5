"""Bug: torch.tensor(rows) without a dtype: float32 when every sequence is empty (int64 otherwise)."""
import torch

EXPECT_FAIL = {"empty_sequences": "float32"}


def pad_collate(batch):
    rows = [s.tolist() for s, _ in batch]
    width = max(len(r) for r in rows)
    padded = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    return padded, torch.tensor([len(r) for r in rows]), torch.tensor([y for _, y in batch])
