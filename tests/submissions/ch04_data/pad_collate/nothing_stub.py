"""Does nothing: the notebook's stub, still raising NotImplementedError."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def pad_collate(batch):
    raise NotImplementedError()
