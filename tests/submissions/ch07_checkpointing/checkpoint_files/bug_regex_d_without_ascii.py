"""Bug: matches N with \\d+ but without re.ASCII, so Arabic-Indic and full-width digits count as step numbers."""
import re
from pathlib import Path

EXPECT_FAIL = {
    'latest_ignores_other_entries': 'N must be ASCII digits',
    'rotate_leaves_other_files_alone': 'N must be ASCII digits',
}

STEP_RE = re.compile(r"step_(\d+)\.pt")


def _sorted_checkpoints(directory):
    directory = Path(directory)
    if not directory.is_dir():
        return []
    ckpts = []
    for p in directory.iterdir():
        m = STEP_RE.fullmatch(p.name)
        if m and p.is_file():
            ckpts.append((int(m.group(1)), p.name))
    return [directory / name for _, name in sorted(ckpts)]


def latest_checkpoint(directory):
    ckpts = _sorted_checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be >= 1")
    ckpts = _sorted_checkpoints(directory)
    to_remove = ckpts[:-keep]
    for p in to_remove:
        p.unlink()
    return to_remove
