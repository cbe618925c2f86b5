"""Bug: globs os.path.join(directory, "step_*.pt") with glob.glob: the directory's own name becomes part of the
pattern, so a directory named "run [1]" (brackets are a character class) or "a*b?" finds nothing, or the wrong files."""
import glob
import os
import re
from pathlib import Path

EXPECT_FAIL = {'latest_on_generated_directories': 'latest_checkpoint is wrong on',
               'rotate_on_generated_directories': 'rotate_checkpoints is wrong on'}

PATTERN = re.compile(r"step_([0-9]+)\.pt")


def _checkpoints(directory):
    found = []
    for path in glob.glob(os.path.join(directory, "step_*.pt")):
        name = os.path.basename(path)
        m = PATTERN.fullmatch(name)
        if m and os.path.isfile(path):
            found.append((int(m.group(1)), name))
    return [Path(directory) / name for _, name in sorted(found)]


def latest_checkpoint(directory):
    ckpts = _checkpoints(directory)
    return ckpts[-1] if ckpts else None


def rotate_checkpoints(directory, keep):
    if keep < 1:
        raise ValueError("keep must be at least 1")
    doomed = _checkpoints(directory)[:-keep]
    for p in doomed:
        p.unlink()
    return doomed
