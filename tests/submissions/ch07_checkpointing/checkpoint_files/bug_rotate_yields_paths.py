"""Bug: rotate_checkpoints is written as a generator (yield each deleted path), so calling it returns a generator and deletes nothing until someone iterates it."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'rotate_keeps_the_newest': 'the function uses yield, so its body',
    'rotate_leaves_other_files_alone': 'the function uses yield, so its body',
    'rotate_missing_directory_and_bad_keep': 'rotate_checkpoints must return',
}


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for p in d.iterdir():
        m = re.fullmatch(r"step_([0-9]+)\.pt", p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p.name))
    return [d / name for _, name in sorted(found)]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    for p in _checkpoints(directory)[:-keep]:
        p.unlink()
        yield p
