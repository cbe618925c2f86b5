"""Bug: matches the name with re.IGNORECASE, so Step_16.pt and step_17.PT count as checkpoints."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'names are case-sensitive: .PT is not .pt',
    'rotate_leaves_other_files_alone': 'names are case-sensitive: Step_ is not step_',
}

NAME = re.compile(r"step_([0-9]+)\.pt", re.IGNORECASE)


def _checkpoints(directory):
    d = Path(directory)
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p.name) for p in d.iterdir() if (m := NAME.fullmatch(p.name)) and p.is_file()]
    return [d / name for _, name in sorted(found)]


def latest_checkpoint(directory):
    found = _checkpoints(directory)
    return found[-1] if found else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    found = _checkpoints(directory)
    gone = found[:-keep]
    for p in gone:
        p.unlink()
    return gone
