"""Bug: re.match with a $ anchor: $ also matches just before a final newline, so a file named 'step_9.pt\n' counts
as a checkpoint (re.fullmatch matches the name exactly)."""
import pathlib
import re

EXPECT_FAIL = {"latest_on_generated_directories": "re.fullmatch"}

PATTERN = re.compile(r"step_([0-9]+)\.pt$")


def _checkpoints(directory):
    folder = pathlib.Path(directory)
    if not folder.is_dir():
        return []
    named = [(int(m.group(1)), f.name) for f in folder.iterdir() if f.is_file() and (m := PATTERN.match(f.name))]
    return [folder / name for _, name in sorted(named)]


def latest_checkpoint(directory):
    checkpoints = _checkpoints(directory)
    return checkpoints[-1] if checkpoints else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep < 1")
    old = _checkpoints(directory)[:-keep]
    for path in old:
        path.unlink()
    return old
