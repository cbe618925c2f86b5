"""Does nothing: returns a constant, three empty int64 tensors of the right number of dims."""
import torch

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def pad_collate(batch):
    return torch.zeros(1, 0, dtype=torch.long), torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long)
