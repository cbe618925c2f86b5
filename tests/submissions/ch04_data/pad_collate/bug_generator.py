"""Bug: yields the three results one after another, so pad_collate returns a generator, not a tuple."""
import torch
from torch.nn.utils.rnn import pad_sequence

EXPECT_FAIL = {"returns_int64_tensors": "it must return the tuple (padded, lengths, labels)",
               "works_in_dataloader": "it must return the tuple (padded, lengths, labels)"}


def pad_collate(batch):
    seqs = [s for s, _ in batch]
    yield pad_sequence(seqs, batch_first=True)
    yield torch.tensor([len(s) for s in seqs])
    yield torch.tensor([y for _, y in batch])
