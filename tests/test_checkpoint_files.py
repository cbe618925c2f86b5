"""checkpoint_files: the reference against the specification written out another way, over any directory
hypothesis makes (checkpoints with leading zeros and equal steps, look-alikes, folders), and the grader's
own order and decoys."""

from __future__ import annotations

import pathlib
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.ch07_checkpointing import checkpoint_files as grader
from solutions import ch07_checkpointing as reference


def _is_checkpoint_name(name: str) -> bool:
    """The specification read literally: ``step_`` + one or more ASCII digits + ``.pt``, nothing else."""
    if not (name.startswith("step_") and name.endswith(".pt")):
        return False
    digits = name[len("step_"):-len(".pt")]
    return len(digits) > 0 and all(c in "0123456789" for c in digits)


def _oldest_first(names: list[str]) -> list[str]:
    checkpoints = [n for n in names if _is_checkpoint_name(n)]
    return sorted(checkpoints, key=lambda n: (int(n[5:-3]), n))


numbers = st.integers(min_value=0, max_value=2**70)
checkpoint_names = st.builds(lambda n, zeros: f"step_{'0' * zeros}{n}.pt", numbers, st.integers(0, 2))
other_names = st.sampled_from(sorted(grader.DECOY_FILES)) | st.text(
    alphabet=st.sampled_from("step_0123456789.ptPTx-+ \u0663\uff15"), min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..") and "/" not in s)


def _layout(root: pathlib.Path, files: set[str], folders: set[str]) -> pathlib.Path:
    directory = root / "ckpt"
    directory.mkdir()
    for name in files:
        (directory / name).write_text(name)
    for name in folders - files:
        (directory / name).mkdir()
    return directory


@settings(max_examples=60, deadline=None)
@given(files=st.sets(checkpoint_names | other_names, max_size=12),
       folders=st.sets(checkpoint_names | st.sampled_from(sorted(grader.DECOY_FOLDERS)), max_size=2),
       keep=st.integers(1, 5))
def test_reference_follows_the_specification(files, folders, keep):
    with tempfile.TemporaryDirectory() as root:
        directory = _layout(pathlib.Path(root), files, folders)
        order = _oldest_first(sorted(files))
        latest = reference.latest_checkpoint(str(directory))
        assert latest == (directory / order[-1] if order else None)
        assert isinstance(latest, (pathlib.Path, type(None)))
        deleted = reference.rotate_checkpoints(directory, keep)
        assert deleted == [directory / n for n in order[:-keep]]
        left = {p.name for p in directory.iterdir()}
        assert left == (files | folders) - set(order[:-keep])


@given(names=st.lists(checkpoint_names | other_names, max_size=10))
def test_the_graders_order_is_the_specifications(names):
    assert grader._checkpoints_oldest_first(names) == _oldest_first(names)


def test_every_decoy_is_a_look_alike_and_not_a_checkpoint():
    for name in [*grader.DECOY_FILES, *grader.DECOY_FOLDERS]:
        assert not _is_checkpoint_name(name) or name in grader.DECOY_FOLDERS, name
    # The folder decoy has a checkpoint's name: only "regular files" rules it out.
    assert all(_is_checkpoint_name(name) for name in grader.DECOY_FOLDERS)


@pytest.mark.parametrize("missing", ["never_created", "a/b"])
def test_reference_on_a_missing_directory(tmp_path, missing):
    assert reference.latest_checkpoint(tmp_path / missing) is None
    assert reference.rotate_checkpoints(tmp_path / missing, 1) == []
    assert not (tmp_path / missing).exists()


@pytest.mark.parametrize("keep", [0, -1])
def test_reference_refuses_keep_below_one_before_deleting(tmp_path, keep):
    (tmp_path / "step_1.pt").write_text("x")
    with pytest.raises(ValueError):
        reference.rotate_checkpoints(tmp_path, keep)
    assert (tmp_path / "step_1.pt").exists()


def test_the_numeric_traps_are_real():
    """What the decoys rely on: int() and str.isdigit() accept what the specification refuses."""
    assert int("+20") == 20 and int(" 21") == 21 and int("2_2") == 22 and int("\u0662\u0663") == 23
    assert "\uff12\uff14".isdigit() and float(9007199254740993) == float(9007199254740992)
    assert "step_9.pt" > "step_10.pt"
