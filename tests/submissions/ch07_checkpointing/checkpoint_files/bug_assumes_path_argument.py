"""Bug: calls directory.is_dir() and directory.iterdir() on the argument as given, so a directory passed as a str raises AttributeError."""
import re

EXPECT_FAIL = {
    'latest_by_number': 'raised AttributeError',
    'latest_ignores_other_entries': 'raised AttributeError',
    'latest_missing_or_empty_directory': 'raised AttributeError',
    'rotate_keeps_the_newest': 'raised AttributeError',
    'rotate_leaves_other_files_alone': 'raised AttributeError',
    'rotate_missing_directory_and_bad_keep': 'raised AttributeError',
}


def _checkpoints(directory):
    if not directory.is_dir():
        return []
    found = []
    for p in directory.iterdir():
        m = re.fullmatch(r"step_([0-9]+)\.pt", p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p.name))
    return [directory / name for _, name in sorted(found)]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    old = _checkpoints(directory)[:-keep]
    for p in old:
        p.unlink()
    return old
