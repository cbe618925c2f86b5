"""Bug: sorts the checkpoint names as text, so step_9.pt comes after step_10.pt and step_100.pt."""
import pathlib
import re

EXPECT_FAIL = {
    'latest_by_number': 'the names were compared as text',
    'latest_ignores_other_entries': 'the names were compared as text',
    'rotate_keeps_the_newest': 'the names were compared as text',
    'rotate_leaves_other_files_alone': 'rotate_checkpoints deleted a file it must keep',
}


def _checkpoints(directory):
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    names = [p.name for p in directory.iterdir()
             if p.is_file() and re.fullmatch(r"step_[0-9]+\.pt", p.name)]
    return [directory / name for name in sorted(names)]


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
