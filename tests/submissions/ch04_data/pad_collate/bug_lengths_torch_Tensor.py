"""Bug: torch.Tensor(lengths), the legacy constructor, which always makes float32."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"returns_int64_tensors": "lengths of dtype float32"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    lengths = torch.Tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True), lengths, torch.tensor([y for _, y in batch])
