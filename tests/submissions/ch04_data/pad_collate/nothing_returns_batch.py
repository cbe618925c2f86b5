"""Does nothing: returns the batch it was given."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def pad_collate(batch):
    return batch
