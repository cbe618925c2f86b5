"""Bug: off by one in rotate_checkpoints: deletes len - keep + 1 checkpoints, so only keep - 1 survive."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'rotate_keeps_the_newest': 'one checkpoint too few was kept',
    'rotate_leaves_other_files_alone': 'rotate_checkpoints deleted a file it must keep',
    'rotate_missing_directory_and_bad_keep': 'one checkpoint too few was kept',
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
    ckpts = _checkpoints(directory)
    n_delete = max(len(ckpts) - keep + 1, 0)
    old = ckpts[:n_delete]
    for p in old:
        p.unlink()
    return old
