"""Bug: rotate_checkpoints deletes ckpts[keep:] of the oldest-first list, so it keeps the keep oldest checkpoints and deletes the newest."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'rotate_keeps_the_newest': 'the oldest checkpoints were kept instead of',
    'rotate_leaves_other_files_alone': 'rotate_checkpoints deleted a file it must keep',
    'rotate_missing_directory_and_bad_keep': 'the oldest checkpoints were kept instead of',
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
    old = _checkpoints(directory)[keep:]
    for p in old:
        p.unlink()
    return old
