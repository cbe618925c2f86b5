"""Bug: sorts the batch by length, longest first (the habit pack_padded_sequence teaches)."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"keeps_batch_order": "sorted by length"}


def pad_collate(batch):
    batch = sorted(batch, key=lambda item: len(item[0]), reverse=True)
    seqs = [s for s, _ in batch]
    return (pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]),
            torch.tensor([y for _, y in batch]))
