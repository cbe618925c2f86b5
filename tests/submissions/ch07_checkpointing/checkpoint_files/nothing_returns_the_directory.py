"""Does nothing: latest_checkpoint returns the directory itself as a Path and rotate_checkpoints returns an empty list, deleting nothing."""
import pathlib

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def latest_checkpoint(directory):
    return pathlib.Path(directory)


def rotate_checkpoints(directory, keep):
    return []
