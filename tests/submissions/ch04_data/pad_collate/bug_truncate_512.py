"""Bug: caps max_len at 512 (and truncates longer sequences), a habit from transformer code; the spec has no cap."""
EXPECT_FAIL = {"returns_int64_tensors": "padded has the wrong shape"}
import torch

_BUF = torch.zeros(0, 0, dtype=torch.long)


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    labels = torch.tensor([int(l) for _, l in batch], dtype=torch.long)
    max_len = int(lengths.max()) if len(seqs) else 0
    max_len = min(max_len, 512)
    padded = torch.zeros(len(seqs), max_len, dtype=torch.long)
    for i, s in enumerate(seqs):
        padded[i, : min(len(s), 512)] = s[:512]
    return padded, lengths, labels
