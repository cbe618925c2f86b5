"""Bug: takes max_len from the first sequence; F.pad with a negative pad then cuts the longer ones."""
import torch
import torch.nn.functional as F

EXPECT_FAIL = {"right_padding_with_zero": "here also the length of the first one",
               "keeps_batch_order": "the length of the FIRST sequence"}


def pad_collate(batch):
    max_len = len(batch[0][0])
    padded = torch.stack([F.pad(s, (0, max_len - len(s))) for s, _ in batch])
    return padded, torch.tensor([len(s) for s, _ in batch]), torch.tensor([y for _, y in batch])
