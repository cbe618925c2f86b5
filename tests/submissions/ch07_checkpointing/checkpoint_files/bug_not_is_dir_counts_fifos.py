"""Bug: "not a folder" taken for "a regular file": a FIFO (or a socket) named step_9.pt counts as a checkpoint,
is returned as the latest, and rotation deletes the real ones around it."""
import os
import pathlib

EXPECT_FAIL = {"latest_on_generated_directories": "a FIFO, not a regular file"}


def _steps(directory):
    if not os.path.isdir(directory):
        return []
    out = []
    for entry in os.scandir(directory):
        stem = entry.name[len("step_"):-len(".pt")]
        if (entry.name.startswith("step_") and entry.name.endswith(".pt") and stem.isascii() and stem.isdigit()
                and not entry.is_dir()):
            out.append((int(stem), entry.name))
    return sorted(out)


def latest_checkpoint(directory):
    steps = _steps(directory)
    return pathlib.Path(directory) / steps[-1][1] if steps else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    gone = [pathlib.Path(directory) / name for _, name in _steps(directory)[:-keep]]
    for path in gone:
        os.remove(path)
    return gone
