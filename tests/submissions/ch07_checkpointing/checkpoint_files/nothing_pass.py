"""Does nothing: both bodies are just pass, so both functions return None."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def latest_checkpoint(directory):
    pass


def rotate_checkpoints(directory, keep):
    pass
