"""checkpoint_files: the reference against the specification written out another way, over any directory
hypothesis makes (checkpoints with leading zeros and equal steps, look-alikes, folders), and the grader's
own order and decoys."""

from __future__ import annotations

import os
import pathlib
import random
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graders
from graders import domain
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


# ==================================================================================================
# The generated domain: each class the specification allows is drawn (500 cases, a fixed seed)
# ==================================================================================================
SUBMISSIONS = pathlib.Path(__file__).parent / "submissions" / "ch07_checkpointing" / "checkpoint_files"


def _drawn(rotate: bool, count: int = 500, seed: int = 7) -> list:
    return [grader.generate_layout(g, rotate=rotate) for g in [random.Random(seed)] for _ in range(count)]


def _real(layout) -> list[str]:
    return _oldest_first(list(layout.files))


@pytest.fixture(scope="module")
def rotations():
    return _drawn(True)


@pytest.fixture(scope="module")
def latests():
    return _drawn(False)


@pytest.mark.parametrize("relation", ["between", "equal", "above_double", "one", "below", "huge"])
def test_the_generator_relates_keep_to_the_count_every_way(rotations, relation):
    def holds(layout) -> bool:
        count, keep = len(_real(layout)), layout.keep
        return {"between": count < keep < 2 * count, "equal": keep == count >= 1, "above_double": keep >= 2 * count > 0,
                "one": keep == 1 and count >= 2, "below": 1 <= keep < count, "huge": keep >= 1000}[relation]
    assert any(holds(layout) for layout in rotations)


def test_the_generator_draws_keep_strictly_between_count_and_twice_count_often(rotations):
    """The held-out miss: a slice [:len - keep] deletes only when count < keep < 2*count."""
    between = [layout for layout in rotations if len(_real(layout)) < layout.keep < 2 * len(_real(layout))]
    assert len(between) >= 25
    assert any(len(_real(layout)) >= 4 for layout in between)


@pytest.mark.parametrize("what", ["equal_steps", "past_2_53", "past_2_64", "leading_zeros", "empty", "many", "step_0"])
def test_the_generator_draws_every_kind_of_step(latests, what):
    def holds(layout) -> bool:
        real = _real(layout)
        steps = [int(n[5:-3]) for n in real]
        return {"equal_steps": len(set(steps)) < len(steps), "past_2_53": any(2**53 <= s < 2**54 for s in steps),
                "past_2_64": any(s > 2**64 for s in steps), "leading_zeros": any(n[5] == "0" and len(n) > 9 for n in real),
                "empty": not real and not layout.missing, "many": len(real) >= 8, "step_0": 0 in steps}[what]
    assert any(holds(layout) for layout in latests)


@pytest.mark.parametrize("template", [t for t, _ in grader.LOOK_ALIKES])
def test_the_generator_draws_every_look_alike(template):
    layouts = _drawn(True, 1500, seed=11)
    reasons = {reason for layout in layouts for _, reason in layout.reasons}
    names = [name for layout in layouts for name, _ in layout.reasons]
    reason = dict(grader.LOOK_ALIKES)[template]
    assert reason in reasons
    assert not any(_is_checkpoint_name(name) for name in names)


def test_look_alikes_are_drawn_above_and_below_every_checkpoint(latests):
    def numbers(layout):
        return [int(n[5:-3]) for n in _real(layout)]
    above = below = False
    for layout in latests:
        steps = numbers(layout)
        for name, _ in layout.reasons:
            digits = "".join(c for c in name if c.isascii() and c.isdigit())
            if steps and digits and name.startswith("step_") and "_" not in name[5:]:
                above |= int(digits) > max(steps)
                below |= int(digits) < min(steps)
    assert above and below


@pytest.mark.parametrize("form", grader.FORMS)
def test_the_generator_passes_the_directory_in_every_form(latests, form):
    assert any(layout.form == form for layout in latests)


@pytest.mark.parametrize("name", grader.DIRECTORY_NAMES)
def test_the_generator_names_directories_every_way(rotations, name):
    assert any(layout.name == name and _real(layout) for layout in rotations)


def test_the_generator_draws_folders_named_like_checkpoints_and_missing_directories(rotations):
    assert any(layout.folders and all(_is_checkpoint_name(f) for f in layout.folders) for layout in rotations)
    assert any(layout.missing for layout in rotations)


def test_the_generator_draws_fifos_checkpoints_one_folder_down_and_paths_through_dotdot(rotations, latests):
    for layouts in (rotations, latests):
        assert any(layout.fifos for layout in layouts)  # named like a checkpoint, not a regular file
        assert any(layout.nested and layout.folders for layout in layouts)  # a recursive search finds it
        assert any(any(not _is_checkpoint_name(f) for f in layout.folders) for layout in layouts)  # "old", "sub"
        assert any(layout.form == "text_dotdot" for layout in layouts)
        assert any(name.endswith(".pt\n") for layout in layouts for name in layout.files)


def test_the_generators_forms_give_the_path_the_specification_names(tmp_path):
    for form in grader.FORMS:
        layout = grader.Layout(files=("step_1.pt",), form=form, name="run [1]")
        argument = layout.argument(tmp_path)
        assert isinstance(argument, (str, pathlib.Path))
        relative = form.startswith("relative")
        assert pathlib.Path(argument).is_absolute() != relative
        if form == "text_dotdot":  # the same folder, through sub/.. (kept in the paths returned)
            (tmp_path / "sub").mkdir(exist_ok=True)
            assert "sub/.." in os.fspath(argument)
            assert pathlib.Path(argument).resolve() == layout.folder(tmp_path).resolve()
        elif not relative:
            assert pathlib.Path(argument) == layout.folder(tmp_path)


def test_the_reference_passes_a_thousand_generated_cases_in_the_judges_own_terms(tmp_path):
    """The judge's expected values equal what the reference does on every generated layout (both functions)."""
    for index, layout in enumerate(_drawn(True, 300, seed=3) + _drawn(False, 300, seed=4)):
        base = tmp_path / f"c{index}"
        base.mkdir()
        folder = layout.lay_out(base)
        expected = grader._expected_for(layout, folder)
        if layout.keep is None:
            got = reference.latest_checkpoint(folder)
            assert (None if got is None else os.fspath(got)) == expected["latest"]
        else:
            assert [os.fspath(p) for p in reference.rotate_checkpoints(folder, layout.keep)] == expected["paths"]


# ==================================================================================================
# The generated checks reject the held-out kinds of bug and report the smallest failing case
# ==================================================================================================
def _message(fixture: str, check: str) -> str:
    report = graders.check_file("checkpoint_files", str(SUBMISSIONS / fixture), [check], device="cpu")
    assert not report.passed
    return report.results[0].message


def test_a_slice_that_wraps_when_keep_exceeds_the_count_is_rejected_on_the_smallest_case():
    message = _message("bug_len_minus_keep_slice_wraps.py", "rotate_on_generated_directories")
    assert "the smallest found" in message
    # Smallest: two checkpoints and keep=3 (the first count with count < keep < 2*count), nothing else around.
    given = next(line for line in message.splitlines() if "input:" in line)
    assert "keep=3" in given and given.count("step_") == 2 and "folder" not in given
    assert "wraps around" in message


def test_a_glob_of_the_directory_name_is_rejected_without_a_guessed_cause():
    message = _message("bug_glob_pattern_with_the_directory.py", "latest_on_generated_directories")
    assert "run [1]" in message or "a*b?" in message
    assert "likely cause" not in message


def test_the_generated_checks_are_seeded():
    layouts = []
    for _ in range(2):
        random.seed(1234)
        layouts.append(domain.draw(lambda g: grader.generate_layout(g, rotate=True), 20, size=lambda c: c.size))
    assert layouts[0] == layouts[1]


def test_the_generated_cases_do_not_depend_on_the_processs_hash_seed():
    """The same draw in another process with another hash seed (a set's order changes with it)."""
    import subprocess
    import sys
    script = ("import random; from graders.ch07_checkpointing import checkpoint_files as g; g0 = random.Random(9); "
              "print(repr([g.generate_layout(g0, rotate=True) for _ in range(40)]))")
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
    here = random.Random(9)
    assert other == repr([grader.generate_layout(here, rotate=True) for _ in range(40)])
