"""Does nothing: the body is `pass`, so it returns None."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def pad_collate(batch):
    pass
