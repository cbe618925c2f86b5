"""Bug: fills a float32 buffer (torch.zeros without dtype) and converts with .long() at the end: large token ids
are rounded on the way."""
import torch

EXPECT_FAIL = {"right_padding_with_zero": "went through float32", "returns_int64_tensors": "went through float32"}


def pad_collate(batch):
    width = max(len(s) for s, _ in batch)
    padded = torch.zeros(len(batch), width)
    for i, (s, _) in enumerate(batch):
        padded[i, :len(s)] = s
    lengths = torch.tensor([len(s) for s, _ in batch], dtype=torch.long)
    return padded.long(), lengths, torch.tensor([y for _, y in batch], dtype=torch.long)
