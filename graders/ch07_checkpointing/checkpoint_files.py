"""latest_checkpoint(directory) and rotate_checkpoints(directory, keep): find and prune ``step_<N>.pt`` files.

The judge lays out a real directory in a temporary folder (checkpoints, look-alike names that are not
checkpoints, folders), the student's function runs on it in the runner, and a scenario reports what came
back as observations (the type of each path and its text). The judge knows which names are checkpoints
and works out the expected answer itself; afterwards it lists the directory to see what was deleted.
Every temporary folder is removed, whether the check passed or not.

When a look-alike (``step_٣.pt``, ``step_1_0.pt``, a folder named ``step_99.pt``) comes back as the latest
checkpoint, or is deleted, the failure names that look-alike and why it is not a checkpoint: the decoys
carry step numbers larger than every real one, so any decoy taken for a checkpoint shows up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import random
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from typing import Any

from graders import domain
from graders.isolation import RunnerStudent, StudentRaised, exchange_folder
from graders.outcomes import StudentCodeError, fail, fail_mismatch
from graders.registry import exercise, judge_only
from graders.student import Submission, expect_error

CHECKPOINT_FILES = exercise("checkpoint_files", chapter="07_checkpointing",
                            names=["latest_checkpoint", "rotate_checkpoints"], writes_files=True)

# Names that look like checkpoints and are not, each with the reason a student's pattern lets it through.
# Their numbers are larger than any real checkpoint's, so accepting one changes the answer.
DECOY_FILES = {
    "step_12.pt.tmp": "a temporary file (it ends in .tmp, not .pt)",
    ".step_13.pt.x7.tmp": "a temporary file left by an atomic save",
    "step_14.pt.bak": "a backup copy (the name must end exactly in .pt)",
    "xstep_15.pt": "the name must start with step_ (a search, not a full match)",
    "Step_16.pt": "names are case-sensitive: Step_ is not step_",
    "step_17.PT": "names are case-sensitive: .PT is not .pt",
    "step_.pt": "N must have at least one digit",
    "step_18a.pt": "N must be digits only",
    "step_-19.pt": "N must be digits only (int() accepts a sign)",
    "step_+20.pt": "N must be digits only (int() accepts a sign)",
    "step_ 21.pt": "N must be digits only (int() ignores spaces)",
    "step_2_2.pt": "N must be digits only (int() accepts underscores between digits)",
    "step_\u0662\u0663.pt": "N must be ASCII digits (str.isdigit() and \\d also accept Arabic-Indic digits such as ٢٣)",
    "step_\uff12\uff14.pt": "N must be ASCII digits (str.isdigit() and \\d also accept full-width digits such as ２４)",
    "step_25.pt.pt": "the name must be exactly step_<N>.pt",
    "step_27Xpt": "the dot must be a real dot (an unescaped . in a pattern matches any character)",
    "step__26.pt": "N must be digits only",
    "notes.txt": "not a checkpoint name at all",
}
DECOY_FOLDERS = {"step_99.pt": "a folder, not a regular file"}


# ==================================================================================================
# Directories on disk (made and removed by the judge)
# ==================================================================================================
@contextlib.contextmanager
def _directory(files: list[str], folders: tuple[str, ...] = ()) -> Iterator[pathlib.Path]:
    """A temporary ``checkpoints`` folder holding ``files`` (each with its own name as content) and ``folders``."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="course-checkpoint-files-", dir=exchange_folder()))
    try:
        directory = root / "checkpoints"
        directory.mkdir()
        for name in files:
            (directory / name).write_text(name)
        for name in folders:
            (directory / name).mkdir()
            (directory / name / "inside.txt").write_text("a file inside a folder")
        yield directory
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _contents(directory: pathlib.Path) -> dict[str, str]:
    """Every entry of ``directory`` (folders as ``<folder>``) with its content, to see what changed."""
    if not directory.is_dir():
        return {}
    return {entry.name: f"<folder {sorted(os.listdir(entry))}>" if entry.is_dir()
            else "<fifo>" if stat.S_ISFIFO(entry.lstat().st_mode) else entry.read_text()  # (a FIFO's read waits)
            for entry in directory.iterdir()}


_STEP = re.compile(r"step_([0-9]+)\.pt")


@judge_only
def _checkpoints_oldest_first(names: list[str]) -> list[str]:
    """The specified order: by N as a number, equal N by name (``names`` are regular files)."""
    found = [(int(m.group(1)), name) for name in names if (m := _STEP.fullmatch(name))]
    return [name for _, name in sorted(found)]


# ==================================================================================================
# In the runner: call the student's function, describe what came back
# ==================================================================================================
def _describe_path(value: Any) -> dict[str, Any]:
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    return {"type": type(value).__name__, "is_path": isinstance(value, pathlib.Path), "text": text,
            "repr": repr(value)[:300]}


def run_and_describe(student: RunnerStudent, name: str, *args: Any, cwd: str | None = None) -> dict[str, Any]:
    """Call the student's ``name(*args)`` (from the folder ``cwd`` when given, for a relative directory) and
    describe its result: None, one path, or a list of paths."""
    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = student.call(name, *args)
    finally:
        os.chdir(previous)
    if result is None:
        return {"kind": "none"}
    if isinstance(result, (list, tuple)):
        return {"kind": "sequence", "type": type(result).__name__, "items": [_describe_path(v) for v in result]}
    return {"kind": "one", **_describe_path(result)}


# ==================================================================================================
# In the judge: what each result means
# ==================================================================================================
def _shown(observed: dict[str, Any]) -> str:
    if observed["kind"] == "none":
        return "None"
    if observed["kind"] == "sequence":
        items = ", ".join(_shown_path(item) for item in observed["items"][:8])
        more = ", …" if len(observed["items"]) > 8 else ""
        return f"a {observed['type']} [{items}{more}]"
    return _shown_path(observed)


def _shown_path(item: dict[str, Any]) -> str:
    return item["repr"] if not item["is_path"] else f"Path({item['text']!r})"


def _name_of(item: dict[str, Any]) -> str | None:
    return pathlib.PurePath(item["text"]).name if item["text"] is not None else None


def _why_not_a_checkpoint(name: str | None) -> str | None:
    reason = DECOY_FILES.get(name) or DECOY_FOLDERS.get(name)
    return f"{name!r} is not a checkpoint: {reason}" if reason else None


def _path_problem(item: dict[str, Any], expected: pathlib.Path) -> str | None:
    """Why a returned path is not ``expected`` (``Path(directory) / name``), or None when it is."""
    if not item["is_path"]:
        return (f"a {item['type']} was returned; the specification asks for pathlib.Path objects "
                f"(Path(directory) / name)")
    if item["text"] != os.fspath(expected):
        if _name_of(item) == expected.name:
            return f"the name is right but the path is {item['text']!r}, not Path(directory) / name = {os.fspath(expected)!r}"
        return None  # a different file: the caller says which
    return None


def _call(student: Submission, call: str, name: str, *args: Any, cwd: pathlib.Path | None = None) -> dict[str, Any]:
    try:
        return student.scenario(run_and_describe, name, *args, cwd=os.fspath(cwd) if cwd else None)
    except StudentCodeError as exc:
        raise exc.within(call) from None


# ==================================================================================================
# latest_checkpoint
# ==================================================================================================
def _expect_latest(student: Submission, directory: pathlib.Path, *, as_text: bool, what: str,
                   relative: bool = False) -> None:
    names = [e.name for e in directory.iterdir() if e.is_file()] if directory.is_dir() else []
    order = _checkpoints_oldest_first(names)
    # Relative: called from the directory's parent with its bare name; the paths must stay relative.
    argument: Any = directory.name if relative else os.fspath(directory) if as_text else directory
    expected = pathlib.Path(argument) / order[-1] if order else None
    call = f"latest_checkpoint({argument!r})"
    before, existed = _contents(directory), directory.exists()
    observed = _call(student, call, "latest_checkpoint", argument, cwd=directory.parent if relative else None)
    given = f"{call}, {what}; the directory holds {sorted(before) or 'nothing'}"
    if _contents(directory) != before or directory.exists() != existed:
        fail(f"{call} changed the directory ({what}): latest_checkpoint must only look, never create, "
             f"delete or rewrite files")
    if expected is None:
        if observed["kind"] != "none":
            cause = _why_not_a_checkpoint(_name_of(observed)) if observed["kind"] == "one" else None
            fail_mismatch("latest_checkpoint must return None when there is no checkpoint", given=given,
                          expected="None", got=_shown(observed), cause=cause)
        return
    if observed["kind"] != "one":
        fail_mismatch("latest_checkpoint returned the wrong thing", given=given, expected=f"Path({os.fspath(expected)!r})",
                      got=_shown(observed))
    problem = _path_problem(observed, expected)
    if problem:
        fail_mismatch("latest_checkpoint returned the right file in the wrong form", given=given,
                      expected=f"Path({os.fspath(expected)!r})", got=_shown(observed), cause=problem)
    got_name = _name_of(observed)
    if got_name != expected.name:
        fail_mismatch("latest_checkpoint returned the wrong file", given=given, expected=f".../{expected.name}",
                      got=_shown(observed),
                      cause=_why_not_a_checkpoint(got_name) or _order_cause(got_name, expected.name, names))


def _order_cause(got: str | None, expected: str, names: list[str]) -> str | None:
    """Name the ordering mistake when the returned checkpoint is exactly what that wrong order picks here."""
    checkpoints = [n for n in names if _STEP.fullmatch(n)]
    if got is None or got not in checkpoints or got == expected:  # the right name (in another path): no order cause
        return None
    step = {n: int(_STEP.fullmatch(n).group(1)) for n in checkpoints}
    if got == max(checkpoints, key=lambda n: (float(step[n]), n)):
        without_zeros = [n for n in checkpoints if not _STEP.fullmatch(n).group(1).startswith("0") or step[n] == 0]
        if without_zeros and got == max(without_zeros, key=lambda n: (step[n], n)):
            return (f"{expected!r} is step {step[expected]}: compare N as an int (a float loses digits past 2**53), "
                    "and count names with leading zeros")
        return "N was converted to a float: step numbers past 2**53 lose digits as floats and compare equal; use int(N)"
    leading_zeros = [n for n in checkpoints if _STEP.fullmatch(n).group(1).startswith("0") and step[n]]
    if expected in leading_zeros and got == max((n for n in checkpoints if n not in leading_zeros),
                                                key=lambda n: (step[n], n)):
        return f"names with leading zeros are checkpoints too: {expected!r} is step {step[expected]}"
    if got == max(checkpoints):
        return "the names were compared as text: 'step_9.pt' sorts after 'step_10.pt' by name; compare int(N) instead"
    if step[got] == step[expected]:
        return f"{got!r} and {expected!r} are both step {step[got]}; equal steps are ordered by name, so {expected!r} is the later"
    if got == min(checkpoints, key=lambda n: (step[n], n)):
        return "the smallest step was returned, not the largest N"
    return None


@CHECKPOINT_FILES.check(points=2)
def latest_by_number(student: Submission, device: Any) -> None:
    """latest_checkpoint picks the largest N as a number (step_10 after step_9), equal N by name, as Path(directory) / name."""
    # (files, what they show, how the directory is passed: a Path, a str, or relative to the current folder)
    layouts = [
        (["step_2.pt", "step_9.pt", "step_10.pt", "step_100.pt"], "steps 2, 9, 10 and 100 (by name step_9 is last)", "text"),
        (["step_9.pt", "step_10.pt"], "step_9 and step_10", "path"),
        (["step_98.pt", "step_99.pt", "step_100.pt", "step_7.pt"], "steps 7, 98, 99 and 100", "text"),
        (["step_7.pt"], "one checkpoint", "path"),
        (["step_3.pt", "step_12.pt"], "a relative directory, 'checkpoints' (the paths stay relative)", "relative"),
        (["step_0.pt", "step_3.pt", "step_1.pt"], "steps 0, 1 and 3", "path"),
        (["step_5.pt", "step_007.pt", "step_7.pt"], "step_007.pt and step_7.pt are both step 7", "text"),
        (["step_0100.pt", "step_9.pt", "step_80.pt"], "step_0100.pt (step 100), step_9 and step_80", "text"),
        (["step_9007199254740992.pt", "step_09007199254740993.pt"],
         "steps 2**53 and 2**53 + 1 (written with a leading zero)", "path"),
    ]
    for files, what, form in layouts:
        with _directory(files) as directory:
            _expect_latest(student, directory, as_text=form == "text", what=what, relative=form == "relative")


@CHECKPOINT_FILES.check(points=1)
def latest_ignores_other_entries(student: Submission, device: Any) -> None:
    """latest_checkpoint ignores temporary files, look-alike names, other files and folders, and never changes the directory."""
    real = ["step_3.pt", "step_4.pt", "step_10.pt"]
    with _directory(real + list(DECOY_FILES), tuple(DECOY_FOLDERS)) as directory:
        _expect_latest(student, directory, as_text=False, what="with look-alike files and a folder named step_99.pt")
    # Each decoy alone, so the failure names the very decoy that was taken for a checkpoint.
    for decoy in [*DECOY_FILES, *DECOY_FOLDERS]:
        folders = (decoy,) if decoy in DECOY_FOLDERS else ()
        files = ["step_8.pt"] + ([] if folders else [decoy])
        with _directory(files, folders) as directory:
            _expect_latest(student, directory, as_text=True, what=f"step_8.pt next to {decoy!r}")


@CHECKPOINT_FILES.check(points=1)
def latest_missing_or_empty_directory(student: Submission, device: Any) -> None:
    """latest_checkpoint returns None for a missing or empty directory, or one without checkpoints, and finds a lone step_0.pt."""
    with _directory([]) as directory:
        _expect_latest(student, directory / "never_created", as_text=True, what="a directory that does not exist")
        _expect_latest(student, directory, as_text=False, what="an empty directory")
    with _directory(["step_1.pt.tmp", "notes.txt"], ("step_2.pt",)) as directory:
        _expect_latest(student, directory, as_text=True, what="only a temporary file, notes and a folder")
    with _directory(["step_0.pt"]) as directory:
        _expect_latest(student, directory, as_text=False, what="step_0.pt alone")


# ==================================================================================================
# rotate_checkpoints
# ==================================================================================================
def _expect_rotation(student: Submission, files: list[str], keep: int, *, what: str, as_text: bool = False,
                     folders: tuple[str, ...] = (), relative: bool = False) -> None:
    with _directory(files, folders) as directory:
        order = _checkpoints_oldest_first(files)
        expected_deleted = order[:-keep]
        before = _contents(directory)
        argument: Any = directory.name if relative else os.fspath(directory) if as_text else directory
        call = f"rotate_checkpoints({argument!r}, keep={keep})"
        given = f"{call}, {what}"
        observed = _call(student, call, "rotate_checkpoints", argument, keep,
                         cwd=directory.parent if relative else None)
        after = _contents(directory)
        deleted = sorted(set(before) - set(after))
        touched = [n for n in after if after[n] != before[n]] + sorted(set(after) - set(before))
        if observed["kind"] == "one" and observed["type"] == "generator":
            fail_mismatch("rotate_checkpoints returned a generator", given=given, expected="a list of deleted paths",
                          got=_shown(observed), cause="the function uses yield, so its body runs only when the result "
                                                      "is iterated: nothing was deleted; build and return a list")
        wrongly_deleted = [n for n in deleted if n not in expected_deleted]
        if wrongly_deleted:
            cause = next((r for n in wrongly_deleted if (r := _why_not_a_checkpoint(n))), None)
            if cause is None and len(order) == len(files):  # only checkpoints here: a wrong rule explains it
                cause = _rotation_cause(order, keep, deleted)
            fail_mismatch("rotate_checkpoints deleted a file it must keep", given=given,
                          expected=f"deleted {expected_deleted}, kept {sorted(set(before) - set(expected_deleted))}",
                          got=f"deleted {deleted}", cause=cause)
        if touched:
            fail(f"{call} created or rewrote {touched}: it may only delete old checkpoints ({what})")
        if sorted(deleted) != sorted(expected_deleted):
            fail_mismatch("rotate_checkpoints did not delete every old checkpoint", given=given,
                          expected=f"deleted {expected_deleted}", got=f"deleted {deleted}",
                          cause=_rotation_cause(order, keep, deleted) if len(order) == len(files) else None)
        if observed["kind"] != "sequence" or observed["type"] != "list":
            fail_mismatch("rotate_checkpoints must return the deleted paths as a list", given=given,
                          expected=f"a list of {len(expected_deleted)} Path(s)", got=_shown(observed))
        expected_paths = [pathlib.Path(argument) / n for n in expected_deleted]
        for item, path in zip(observed["items"], expected_paths):
            if problem := _path_problem(item, path):
                fail_mismatch("rotate_checkpoints returned a deleted path in the wrong form", given=given,
                              expected=f"Path({os.fspath(path)!r})", got=_shown_path(item), cause=problem)
        got_names = [_name_of(item) for item in observed["items"]]
        if got_names != expected_deleted:
            cause = None
            if sorted(got_names, key=str) == sorted(expected_deleted):
                cause = ("the paths must come oldest first (smallest N first)"
                         if got_names == expected_deleted[::-1] else "the paths must be in order, oldest first")
            fail_mismatch("rotate_checkpoints returned the wrong list of deleted paths", given=given,
                          expected=str(expected_deleted), got=str(got_names), cause=cause)


def _rotation_cause(order: list[str], keep: int, deleted: list[str]) -> str | None:
    """The one wrong rule that deletes exactly ``deleted`` from these checkpoints, if exactly one does."""
    deleted_set = set(deleted)
    steps = {name: int(_STEP.fullmatch(name).group(1)) for name in order}
    rules = {
        "the names were compared as text (step_9.pt sorts after step_10.pt); compare int(N)":
            set(sorted(order)[:-keep]),
        f"one checkpoint too many was kept (keep={keep} keeps exactly {keep})": set(order[:-(keep + 1)]),
        f"one checkpoint too few was kept (keep={keep} keeps exactly {keep})": set(order[:-(keep - 1)] if keep > 1 else order),
        "the oldest checkpoints were kept instead of the newest": set(order[keep:]),
        # Not causes to name here, but mistakes that may give the same deletions: then nothing is named.
        "(a float N)": set(sorted(order, key=lambda n: (float(steps[n]), n))[:-keep]),
        "(a slice [:len - keep])": set(order[:len(order) - keep]),
    }
    matching = [cause for cause, rule in rules.items() if rule == deleted_set and rule != set(order[:-keep])]
    if len(matching) == 1 and not matching[0].startswith("("):
        return matching[0]
    if matching:
        return None
    same_steps = sorted(deleted_set ^ set(order[:-keep]))
    if same_steps and len({steps[n] for n in same_steps}) == 1 and sum(steps[n] == steps[same_steps[0]] for n in order) > 1:
        return (f"{' and '.join(same_steps)} have the same step {steps[same_steps[0]]}: each file is a checkpoint of its "
                f"own, and equal steps are ordered by name")
    return None


@CHECKPOINT_FILES.check(points=2)
def rotate_keeps_the_newest(student: Submission, device: Any) -> None:
    """rotate_checkpoints deletes all but the keep newest by N and returns the deleted paths, oldest first, as a list."""
    many = ["step_1.pt", "step_2.pt", "step_9.pt", "step_10.pt", "step_11.pt", "step_100.pt"]
    _expect_rotation(student, many, 2, what="steps 1, 2, 9, 10, 11 and 100")
    _expect_rotation(student, many, 1, what="steps 1, 2, 9, 10, 11 and 100", as_text=True)
    _expect_rotation(student, many, 4, what="steps 1, 2, 9, 10, 11 and 100")
    _expect_rotation(student, ["step_30.pt", "step_4.pt", "step_200.pt", "step_5.pt"], 3,
                     what="steps 4, 5, 30 and 200", as_text=True)
    _expect_rotation(student, ["step_3.pt", "step_5.pt"], 2, what="exactly keep checkpoints")
    _expect_rotation(student, ["step_8.pt", "step_10.pt", "step_9.pt"], 1,
                     what="a relative directory, 'checkpoints' (the paths stay relative)", relative=True)
    _expect_rotation(student, ["step_3.pt", "step_5.pt"], 7, what="fewer checkpoints than keep")
    _expect_rotation(student, ["step_7.pt", "step_007.pt", "step_8.pt", "step_07.pt"], 2,
                     what="step_007.pt, step_07.pt and step_7.pt are all step 7 (ordered by name)")


@CHECKPOINT_FILES.check(points=1)
def rotate_leaves_other_files_alone(student: Submission, device: Any) -> None:
    """rotate_checkpoints never deletes or changes temporary files, look-alike names, other files or folders."""
    # The real checkpoints are newer than every look-alike's number here: a look-alike taken for a checkpoint
    # is among the oldest, so it is deleted, and the failure names it.
    real = ["step_100.pt", "step_200.pt", "step_300.pt", "step_1000.pt"]
    _expect_rotation(student, real + list(DECOY_FILES), 2, what="with look-alike files and a folder named step_99.pt",
                     folders=tuple(DECOY_FOLDERS))
    for decoy in [*DECOY_FILES, *DECOY_FOLDERS]:
        folders = (decoy,) if decoy in DECOY_FOLDERS else ()
        files = ["step_500.pt", "step_600.pt"] + ([] if folders else [decoy])
        _expect_rotation(student, files, 1, what=f"step_500.pt and step_600.pt next to {decoy!r}", folders=folders,
                         as_text=True)


@CHECKPOINT_FILES.check(points=1)
def rotate_missing_directory_and_bad_keep(student: Submission, device: Any) -> None:
    """rotate_checkpoints returns [] for a missing directory and raises ValueError for keep < 1, deleting nothing."""
    with _directory(["step_1.pt", "step_2.pt"]) as directory:
        missing = directory / "never_created"
        call = f"rotate_checkpoints({os.fspath(missing)!r}, keep=2)"
        observed = _call(student, call, "rotate_checkpoints", os.fspath(missing), 2)
        if observed["kind"] != "sequence" or observed["type"] != "list" or observed["items"]:
            fail_mismatch("rotate_checkpoints must return [] for a directory that does not exist",
                          given=call, expected="[]", got=_shown(observed))
        if missing.exists():
            fail(f"{call} created the directory; a missing directory has nothing to rotate")
        for keep in (0, -1):
            before = _contents(directory)
            expect_error(student, ValueError, "rotate_checkpoints", (directory, keep),
                         call=f"rotate_checkpoints(directory, keep={keep})",
                         why="at least one checkpoint must be kept",
                         cause="keep < 1 is not checked before deleting")
            if _contents(directory) != before:
                fail(f"rotate_checkpoints(directory, keep={keep}) raised but deleted "
                     f"{sorted(set(before) - set(_contents(directory)))} first; check keep before touching files")
        expect_error(student, ValueError, "rotate_checkpoints", (os.fspath(missing), 0),
                     call=f"rotate_checkpoints({os.fspath(missing)!r}, keep=0)",
                     why="keep < 1 is an error whatever the directory holds (check keep first)", cause=None)
        # keep=1 on the same directory works: the check above was not passed by raising always.
        _expect_rotation(student, ["step_1.pt", "step_2.pt"], 1, what="keep=1 after the refused calls")


# ==================================================================================================
# Generated directories: the whole domain of the specification's sentences
# ==================================================================================================
# What is drawn (each sentence of the specification, and the classes hand-picked layouts miss):
# - checkpoints: 0 to 9, N from 0, small, past 2**53 and past 2**64, written with leading zeros (so that equal
#   steps occur, ordered by name), in any order on disk;
# - look-alikes built around a real number (a temporary file, a backup, a sign, a space, an underscore, other
#   scripts' digits, the wrong case, a missing or unescaped dot, ...), their N larger than every checkpoint's
#   or smaller, so that taking one for a checkpoint changes the answer; folders named like checkpoints, or not,
#   holding a checkpoint's name of a larger N (a search into subfolders finds it); a FIFO named like the latest
#   checkpoint (not a regular file); a name ending in a newline after .pt;
# - keep related to the count every way: 1, count - 1, count, count + 1, count < keep < 2*count (where a slice
#   ``[:len - keep]`` wraps around), 2*count and above, huge;
# - the directory as a Path, a str, a str ending in "/" or passing through "sub/../" (returned paths keep it, as
#   Path(directory) / name does), relative to the current folder (bare, "./", two levels,
#   as a Path), named with spaces, glob brackets and stars, non-ASCII letters, a leading dot, a name like a
#   checkpoint's; missing (never created) now and then.
DIRECTORY_NAMES = ["checkpoints", "ckpts", "my runs", "run [1]", "a*b?", "données", ".hidden", "step_5.pt",
                   "v1.2", "x"]
FORMS = ["path", "text", "text_slash", "relative", "relative_dot", "relative_nested", "relative_path", "text_dotdot"]

# (template, why it is not a checkpoint): {n} a number, {a}_{b} its digits split, {arabic}/{wide} other scripts' digits
LOOK_ALIKES = [
    ("step_{n}.pt.tmp", "a temporary file (it ends in .tmp, not .pt)"),
    (".step_{n}.pt.k3x9.tmp", "a temporary file left by an atomic save"),
    ("step_{n}.pt.bak", "a backup copy (the name must end exactly in .pt)"),
    ("step_{n}.pt~", "an editor's backup copy (the name must end exactly in .pt)"),
    ("xstep_{n}.pt", "the name must start with step_ (a search, not a full match)"),
    ("Step_{n}.pt", "names are case-sensitive: Step_ is not step_"),
    ("step_{n}.PT", "names are case-sensitive: .PT is not .pt"),
    ("step_{n}a.pt", "N must be digits only"),
    ("step_-{n}.pt", "N must be digits only (int() accepts a sign)"),
    ("step_+{n}.pt", "N must be digits only (int() accepts a sign)"),
    ("step_ {n}.pt", "N must be digits only (int() ignores spaces)"),
    ("step_{n} .pt", "N must be digits only (int() ignores spaces)"),
    ("step_{a}_{b}.pt", "N must be digits only (int() accepts underscores between digits)"),
    ("step_{arabic}.pt", "N must be ASCII digits (str.isdigit() and \\d also accept Arabic-Indic digits)"),
    ("step_{wide}.pt", "N must be ASCII digits (str.isdigit() and \\d also accept full-width digits)"),
    ("step_{n}.pt.pt", "the name must be exactly step_<N>.pt"),
    ("step_{n}Xpt", "the dot must be a real dot (an unescaped . in a pattern matches any character)"),
    ("step__{n}.pt", "N must be digits only"),
    ("step_{n}", "the name must end in .pt"),
    ("step{n}.pt", "the name must start with step_"),
    ("step_{n}.pth", "the name must end exactly in .pt"),
    ("step_{n}.pt\n", "the name must end exactly in .pt (a pattern's $ also matches before a final newline: "
                      "re.fullmatch)"),
]


@dataclasses.dataclass(frozen=True)
class Layout:
    """One generated case: a directory's entries, how it is passed, and keep (None: latest_checkpoint)."""

    files: tuple[str, ...]
    folders: tuple[str, ...] = ()
    keep: int | None = None
    form: str = "path"
    name: str = "checkpoints"
    missing: bool = False
    reasons: tuple[tuple[str, str], ...] = ()  # look-alike name -> why it is not a checkpoint
    fifos: tuple[str, ...] = ()  # named like checkpoints, not regular files
    nested: str = ""  # a checkpoint's name inside each folder (a search into subfolders finds it)

    @property
    def size(self) -> tuple[int, ...]:
        return (len(self.files) + len(self.folders) + len(self.fifos), self.keep or 0,
                sum(map(len, self.files + self.folders + self.fifos)))

    @property
    def relative(self) -> bool:
        return self.form.startswith("relative")

    def argument(self, base: pathlib.Path) -> Any:
        """What the student's function is given, for a case laid out in ``base`` (the directory's parent)."""
        folder = base / "outer" / self.name if self.form == "relative_nested" else base / self.name
        return {"path": folder, "text": os.fspath(folder), "text_slash": os.fspath(folder) + os.sep,
                "text_dotdot": os.path.join(os.fspath(base), "sub", os.pardir, self.name),  # kept as given
                "relative": self.name, "relative_dot": f".{os.sep}{self.name}",
                "relative_nested": os.path.join("outer", self.name),
                "relative_path": pathlib.Path(self.name)}[self.form]

    def folder(self, base: pathlib.Path) -> pathlib.Path:
        return base / "outer" / self.name if self.form == "relative_nested" else base / self.name

    def shown_argument(self) -> str:
        return {"path": f"Path('.../{self.name}')", "text": f"'.../{self.name}'", "text_slash": f"'.../{self.name}/'",
                "text_dotdot": f"'.../sub/../{self.name}'",
                "relative": repr(self.name), "relative_dot": repr(f"./{self.name}"),
                "relative_nested": repr(f"outer/{self.name}"), "relative_path": f"Path({self.name!r})"}[self.form]

    def call(self) -> str:
        if self.keep is None:
            return f"latest_checkpoint({self.shown_argument()})"
        return f"rotate_checkpoints({self.shown_argument()}, keep={self.keep})"

    def lay_out(self, base: pathlib.Path) -> pathlib.Path:
        """Make the case's directory below ``base`` (its files, folders, FIFOs; nothing when missing); its path."""
        if self.form == "text_dotdot":
            (base / "sub").mkdir()  # the directory is given as .../sub/../name
        folder = self.folder(base)
        if self.missing:
            return folder
        folder.mkdir(parents=True)
        for name in self.files:
            (folder / name).write_text(name)
        for name in self.folders:
            (folder / name).mkdir()
            (folder / name / "inside.txt").write_text("a file inside a folder")
            if self.nested:
                (folder / name / self.nested).write_text(self.nested)
        for name in self.fifos:
            os.mkfifo(folder / name)
        return folder

    def holding(self) -> str:
        if self.missing:
            return "a directory that does not exist"
        inside = f" holding {self.nested}" if self.nested else ""
        entries = (sorted(self.files) + [f"{name}/ (a folder{inside})" for name in sorted(self.folders)]
                   + [f"{name} (a FIFO, not a regular file)" for name in sorted(self.fifos)])
        return f"the directory holds {entries or 'nothing'}"


def _digits(number: int, table: str) -> str:
    return "".join(table[int(d)] for d in str(number))


def _look_alike(generator: random.Random, number: int) -> tuple[str, str]:
    template, reason = domain.pick(generator, LOOK_ALIKES)
    text = str(number)
    cut = generator.randint(1, len(text) - 1) if len(text) > 1 else 1
    name = template.format(n=number, a=text[:cut], b=text[cut:] or "0",
                           arabic=_digits(number, "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669"),
                           wide=_digits(number, "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19"))
    return name, reason


def _step_number(generator: random.Random) -> int:
    kind = domain.pick(generator, ["tiny", "small", "medium", "float53", "huge"], weights=[3, 4, 3, 1, 1])
    if kind == "tiny":
        return domain.small_int(generator, 0, 3)
    if kind == "small":
        return generator.randint(0, 30)
    if kind == "medium":
        return generator.randint(0, 5000)
    if kind == "float53":
        return 2**53 + generator.randint(-2, 3)
    return 2**64 + generator.randint(0, 10**6)


def _keep_for(generator: random.Random, count: int) -> int:
    relation = domain.pick(generator, ["one", "below", "equal", "above", "between", "double", "huge", "any"],
                           weights=[2, 2, 2, 2, 4, 1, 1, 3])
    if relation == "between" and count >= 2:  # count < keep < 2*count: where a slice [:len - keep] wraps around
        return generator.randint(count + 1, 2 * count - 1)
    keep = {"one": 1, "below": count - 1, "equal": count, "above": count + 1, "between": count + 1,
            "double": 2 * count + generator.randint(0, 1), "huge": 10**generator.randint(3, 18),
            "any": generator.randint(1, max(1, count))}[relation]
    return max(1, keep)


def generate_layout(generator: random.Random, *, rotate: bool) -> Layout:
    """A directory the specification allows, drawn from its sentences (see above)."""
    count = domain.small_int(generator, 0, 9, edge=0.2)
    numbers = [_step_number(generator) for _ in range(count)]
    if count >= 2 and generator.random() < 0.3:  # equal steps: the same N with other leading zeros
        numbers[generator.randrange(count)] = numbers[generator.randrange(count)]
    files: set[str] = set()
    for number in numbers:
        zeros = domain.pick(generator, [0, 0, 0, 1, 2])
        name = f"step_{'0' * zeros}{number}.pt"
        while name in files:
            name = f"step_0{name[5:]}"
        files.add(name)
    reasons: dict[str, str] = {}
    top, bottom = max(numbers, default=5), min(numbers, default=5)
    for _ in range(domain.pick(generator, [0, 0, 1, 1, 2, 3, 4])):
        # Above every checkpoint (latest would return it) or below (rotate would delete it), or anywhere.
        number = domain.pick(generator, [top + generator.randint(1, 40), max(0, bottom - generator.randint(0, 3)),
                                         generator.randint(0, 50)])
        name, reason = _look_alike(generator, number)
        if name not in files:
            files.add(name)
            reasons[name] = reason
    if generator.random() < 0.15:
        files.add("notes.txt")
        reasons["notes.txt"] = "not a checkpoint name at all"
    folders: set[str] = set()
    for _ in range(domain.pick(generator, [0, 0, 0, 1, 2])):
        name = f"step_{domain.pick(generator, [top + generator.randint(1, 9), bottom, generator.randint(0, 9)])}.pt"
        if name not in files:
            folders.add(name)
    if generator.random() < 0.15:  # a folder of another name: only what lies in it looks like a checkpoint
        folders.add(domain.pick(generator, ["old", "sub", "run 2"]))
    # a checkpoint's name inside the folders, above every one of the directory's own (a recursive search finds it)
    nested = f"step_{top + generator.randint(41, 99)}.pt" if folders and generator.random() < 0.5 else ""
    fifos: set[str] = set()
    if hasattr(os, "mkfifo") and generator.random() < 0.12:  # not a regular file, named like the latest checkpoint
        name = f"step_{top + generator.randint(1, 40)}.pt"
        if name not in files and name not in folders:
            fifos.add(name)
    missing = generator.random() < 0.05
    if missing:
        files, folders, reasons, fifos, nested = set(), set(), {}, set(), ""
    on_disk = sorted(files)  # sorted first: a set's order changes with the process's hash seed
    generator.shuffle(on_disk)
    return Layout(files=tuple(on_disk), folders=tuple(sorted(folders)), fifos=tuple(sorted(fifos)), nested=nested,
                  keep=_keep_for(generator, 0 if missing else count) if rotate else None, form=domain.pick(generator, FORMS),
                  name=domain.pick(generator, DIRECTORY_NAMES), missing=missing, reasons=tuple(sorted(reasons.items())))


# ==================================================================================================
# Generated cases: lay out, call in one scenario, compare in the judge
# ==================================================================================================
def run_layouts(student: RunnerStudent, calls: list[tuple[str, Any, tuple[Any, ...], str | None]]) -> list[dict[str, Any]]:
    """In the runner: the student's function on every laid-out directory, each result described (or what it raised)."""
    observed = []
    for name, argument, extra, cwd in calls:
        try:
            observed.append(run_and_describe(student, name, argument, *extra, cwd=cwd))
        except StudentRaised as exc:
            observed.append({"kind": "raised", "describe": exc.error.describe(), "type": exc.error.exception_type})
    return observed


@judge_only
def _expected_for(layout: Layout, argument: Any) -> dict[str, Any]:
    order = [] if layout.missing else _checkpoints_oldest_first(list(layout.files))
    if layout.keep is None:
        return {"latest": os.fspath(pathlib.Path(argument) / order[-1]) if order else None, "order": order}
    deleted = order[:-layout.keep]
    return {"deleted": deleted, "paths": [os.fspath(pathlib.Path(argument) / n) for n in deleted], "order": order}


@dataclasses.dataclass
class Verdict:
    """One generated case judged: what came back and what was expected (None when right), and what it did."""

    got: str | None = None
    expected: str | None = None
    latest: str | None = None  # the name latest_checkpoint returned
    deleted: list[str] | None = None  # what rotate_checkpoints deleted
    raised: bool = False

    @property
    def wrong(self) -> bool:
        return self.got is not None


@judge_only
def _verdict(layout: Layout, argument: Any, observed: dict[str, Any], before: dict[str, str],
             after: dict[str, str], existed_after: bool) -> Verdict:
    """Whether one case's result is right, in the student's terms."""
    expected = _expected_for(layout, argument)
    verdict = Verdict(deleted=sorted(set(before) - set(after)))
    verdict.latest = (NOTHING if observed["kind"] == "none" else _name_of(observed)
                      if observed["kind"] == "one" and observed["is_path"] else OTHER)
    if observed["kind"] == "raised":
        verdict.got, verdict.expected, verdict.raised = f"it raised {observed['describe']}", "no error", True
        return verdict
    if layout.missing and existed_after:
        verdict.got = "the directory was created"
        verdict.expected = "a missing directory left missing (there is nothing in it)"
        return verdict
    if layout.keep is None:
        if after != before:
            changed = sorted(set(before) ^ set(after) | {n for n in before if n in after and before[n] != after[n]})
            verdict.got, verdict.expected = f"the directory changed: {changed}", "latest_checkpoint only looks"
            return verdict
        want = expected["latest"]
        if want is None and observed["kind"] != "none":
            verdict.got, verdict.expected = _shown(observed), "None"
        elif want is not None and (observed["kind"] != "one" or not observed["is_path"] or observed["text"] != want):
            verdict.got, verdict.expected = _shown(observed), f"Path({want!r})"
        return verdict
    wanted = f"deleted {expected['deleted']}, returned [{', '.join(f'Path({p!r})' for p in expected['paths'])}]"
    if verdict.deleted != sorted(expected["deleted"]):
        verdict.got, verdict.expected = f"deleted {verdict.deleted}, returned {_shown(observed)}", wanted
        return verdict
    touched = sorted(n for n in after if before.get(n) != after[n])
    if touched:
        verdict.got, verdict.expected = f"created or rewrote {touched}", "only old checkpoints deleted"
        return verdict
    right_list = (observed["kind"] == "sequence" and observed["type"] == "list"
                  and all(item["is_path"] for item in observed["items"])
                  and [item["text"] for item in observed["items"]] == expected["paths"])
    if not right_list:
        verdict.got = f"deleted {verdict.deleted}, returned {_shown(observed)}"
        verdict.expected = wanted + " (a list of Path(directory) / name, oldest first)"
    return verdict


def _grade_layouts(student: Submission, layouts: list[Layout]) -> list[Verdict]:
    """Lay out every case in a folder of its own, call them all in one scenario, and judge each."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="course-checkpoint-files-gen-", dir=exchange_folder(memory=True)))
    try:
        calls, arguments, befores = [], [], []
        for index, layout in enumerate(layouts):
            base = root / f"case{index}"
            base.mkdir()
            folder = layout.lay_out(base)
            argument = layout.argument(base)
            arguments.append(argument)
            befores.append(_contents(folder))
            name = "latest_checkpoint" if layout.keep is None else "rotate_checkpoints"
            extra = () if layout.keep is None else (layout.keep,)
            calls.append((name, argument, extra, os.fspath(base) if layout.relative else None))
        observed = student.scenario(run_layouts, calls)
        problems = []
        for index, layout in enumerate(layouts):
            folder = layout.folder(root / f"case{index}")
            verdict = _verdict(layout, arguments[index], observed[index], befores[index], _contents(folder),
                               folder.exists())
            base = os.fspath(root / f"case{index}")
            verdict.got = verdict.got and verdict.got.replace(base, "...")
            verdict.expected = verdict.expected and verdict.expected.replace(base, "...")
            problems.append(verdict)
        return problems
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _smaller_layouts(layout: Layout) -> list[Layout]:
    """Candidates for shrinking: one entry fewer, keep one lower, the plainest directory name and form."""
    candidates = []
    for index in range(len(layout.files)):
        files = layout.files[:index] + layout.files[index + 1:]
        keep = layout.keep
        candidates.append(dataclasses.replace(layout, files=files, keep=keep,
                                              reasons=tuple(r for r in layout.reasons if r[0] in files)))
    for index in range(len(layout.folders)):
        candidates.append(dataclasses.replace(layout, folders=layout.folders[:index] + layout.folders[index + 1:]))
    if layout.keep is not None and layout.keep > 1:
        candidates.append(dataclasses.replace(layout, keep=layout.keep - 1))
        if layout.keep > 12:
            candidates.append(dataclasses.replace(layout, keep=12))
    if layout.name != "checkpoints":
        candidates.append(dataclasses.replace(layout, name="checkpoints"))
    if layout.form != "path":
        candidates.append(dataclasses.replace(layout, form="path"))
    return candidates


def _expect_layouts(student: Submission, layouts: list[Layout], what: str) -> None:
    verdicts = _grade_layouts(student, layouts)
    failing = [v.wrong for v in verdicts]
    worst = domain.smallest(layouts, failing, lambda c: c.size)
    if worst is None:
        return
    smallest = domain.shrink(worst, _smaller_layouts, lambda options: [v.wrong for v in _grade_layouts(student, options)])
    verdict = _grade_layouts(student, [smallest])[0]
    if not verdict.wrong:  # the shrunk case passed when graded alone (an answer that varies): show the drawn one
        smallest, verdict = worst, verdicts[layouts.index(worst)]
    fail_mismatch(f"{what} is wrong on {sum(failing)} of {len(layouts)} generated directories; the smallest found",
                  given=f"{smallest.call()}, where {smallest.holding()}", expected=verdict.expected, got=verdict.got,
                  cause=_generated_cause(layouts, verdicts, smallest, verdict))


# ==================================================================================================
# Causes: a catalogued mistake named only when it alone gives the student's answer on every case
# ==================================================================================================
NOTHING = "<None>"  # latest_checkpoint returned None
OTHER = "<not a path>"
LATEST_AS_TEXT = "the names were compared as text: 'step_9.pt' sorts after 'step_10.pt'; compare int(N) instead"
LATEST_SMALLEST = "the smallest step was returned, not the largest N"
LATEST_FLOAT = "N was converted to a float: step numbers past 2**53 lose digits as floats and compare equal; use int(N)"
LATEST_TIE = "equal steps must be ordered by name (of step_7.pt and step_007.pt, the later name is the latest)"


@judge_only
def _mistaken_deletions(order: list[str], keep: int) -> dict[str, list[str]]:
    """What rotate_checkpoints deletes under each catalogued mistake, for the checkpoints ``order`` (oldest first)."""
    steps = {name: int(_STEP.fullmatch(name).group(1)) for name in order}
    by_step: dict[int, str] = {}
    for name in order:
        by_step[steps[name]] = name  # one file per step: the others are never seen
    seen_oldest_first = sorted(by_step.values(), key=lambda n: steps[n])
    return {
        "the names were compared as text (step_9.pt sorts after step_10.pt); compare int(N)": sorted(order)[:-keep],
        "one checkpoint too many was kept (keep=k keeps exactly k)": order[:-(keep + 1)],
        "one checkpoint too few was kept (keep=k keeps exactly k)": order[:-(keep - 1)] if keep > 1 else list(order),
        "the oldest checkpoints were kept instead of the newest": order[keep:],
        LATEST_FLOAT: sorted(order, key=lambda n: (float(steps[n]), n))[:-keep],
        "the slice [:len(checkpoints) - keep] wraps around when keep > len(checkpoints): a negative end counts from "
        "the end, so it deletes checkpoints it must keep (delete max(0, len - keep), or slice [:-keep])":
            order[:len(order) - keep],
        "the checkpoints were collected in a dict keyed by N, so files with equal steps (step_7.pt, step_007.pt) "
        "count as one; each file is a checkpoint of its own, equal steps ordered by name":
            sorted(seen_oldest_first[:-keep], key=lambda n: (steps[n], n)),
    }


@judge_only
def _mistaken_latest(order: list[str]) -> dict[str, str]:
    """What latest_checkpoint returns (a name, or NOTHING) under each catalogued mistake."""
    if not order:
        return dict.fromkeys((LATEST_AS_TEXT, LATEST_SMALLEST, LATEST_FLOAT, LATEST_TIE), NOTHING)
    steps = {name: int(_STEP.fullmatch(name).group(1)) for name in order}
    return {LATEST_AS_TEXT: max(order), LATEST_SMALLEST: order[0],
            LATEST_FLOAT: max(order, key=lambda n: (float(steps[n]), n)),
            LATEST_TIE: max(order, key=lambda n: (steps[n], [-ord(c) for c in n]))}


@judge_only
def _generated_cause(layouts: list[Layout], verdicts: list[Verdict], smallest: Layout, verdict: Verdict) -> str | None:
    """What singles out the cause: a look-alike or folder returned or deleted in the smallest case (an observation),
    else the one catalogued mistake that gives the student's result on every case made of checkpoints only
    (right ones included: a mistake that changes nothing there must leave the right result), else None."""
    taken = [verdict.latest] if smallest.keep is None else [n for n in verdict.deleted or []
                                                          if not _STEP.fullmatch(n) or n in smallest.folders]
    reasons = dict(smallest.reasons)
    for name in taken:
        if name in reasons:
            return f"{name!r} is not a checkpoint: {reasons[name]}"
        if name in smallest.folders:
            return f"{name!r} is a folder, not a regular file"
    fitting: set[str] | None = None
    for layout, seen in zip(layouts, verdicts):
        # Each mistake alone (everything else right: look-alikes and folders ignored) predicts every case.
        order = [] if layout.missing else _checkpoints_oldest_first(list(layout.files))
        if seen.raised:
            fits: set[str] = set()
        elif layout.keep is None:
            right = order[-1] if order else NOTHING
            got = right if not seen.wrong else seen.latest
            # (a wrong case whose name is right went wrong elsewhere, in the path's form: no order mistake explains it)
            fits = ({c for c, result in _mistaken_latest(order).items() if result == got}
                    if not seen.wrong or got != right else set())
        else:
            right_deleted = sorted(order[:-layout.keep])
            got = right_deleted if not seen.wrong else seen.deleted
            fits = ({c for c, result in _mistaken_deletions(order, layout.keep).items() if sorted(result) == got}
                    if not seen.wrong or got != right_deleted else set())
        fitting = fits if fitting is None else fitting & fits
    return next(iter(fitting)) if fitting and len(fitting) == 1 else None


@CHECKPOINT_FILES.check(points=1)
def latest_on_generated_directories(student: Submission, device: Any) -> None:
    """latest_checkpoint on 150 generated directories: any N (leading zeros, equal steps, past 2**64), look-alikes, folders, every form of directory."""
    layouts = domain.draw(lambda g: generate_layout(g, rotate=False), 150, size=lambda c: c.size)
    _expect_layouts(student, layouts, "latest_checkpoint")


@CHECKPOINT_FILES.check(points=2)
def rotate_on_generated_directories(student: Submission, device: Any) -> None:
    """rotate_checkpoints on 150 generated directories: keep below, at, above and up to twice the count (and beyond), look-alikes, folders, every form of directory."""
    layouts = domain.draw(lambda g: generate_layout(g, rotate=True), 150, size=lambda c: c.size)
    _expect_layouts(student, layouts, "rotate_checkpoints")
