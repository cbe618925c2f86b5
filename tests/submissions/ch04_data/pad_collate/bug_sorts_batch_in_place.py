"""Bug: batch.sort(...) sorts the caller's list in place, longest first (for pack_padded_sequence)."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"keeps_batch_order": "sorted by length (longest first)", "does_not_modify_inputs": "items were reordered"}


def pad_collate(batch):
    batch.sort(key=lambda item: len(item[0]), reverse=True)
    seqs = [s for s, _ in batch]
    return (pad_sequence(seqs, batch_first=True), torch.tensor([len(s) for s in seqs]),
            torch.tensor([y for _, y in batch]))
