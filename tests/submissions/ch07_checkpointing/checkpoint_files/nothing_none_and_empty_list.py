"""Does nothing: latest_checkpoint always returns None and rotate_checkpoints always returns [] without looking at the directory."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def latest_checkpoint(directory):
    return None


def rotate_checkpoints(directory, keep):
    return []
