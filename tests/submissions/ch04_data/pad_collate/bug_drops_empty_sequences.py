"""Bug: skips the empty sequences ("nothing to pad"), so their rows, lengths and labels disappear."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"empty_sequences": "rows of the empty sequences were dropped"}


def pad_collate(batch):
    batch = [(s, y) for s, y in batch if len(s) > 0]
    if not batch:
        return torch.zeros(0, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
    seqs = [s for s, _ in batch]
    return (pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]),
            torch.tensor([y for _, y in batch]))
