"""Exercises and their checks, found by id.

Each exercise lives in one module, ``graders/chNN_<slug>/<exercise_id>.py``, which declares it and its
checks::

    EXAMPLE = exercise("<exercise id>", chapter="NN_<slug>", names=["<name the student defines>"])

    @EXAMPLE.check(points=1)
    def check_name(student, device):
        \"\"\"What this check proves, in one line (shown to the student).\"\"\"

Chapter packages and their exercise modules are discovered on import, so a new exercise needs no edit
anywhere else in ``graders/``.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from graders.outcomes import UsageError

CheckFunction = Callable[[Any, Any], None]


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    points: int
    description: str
    function: CheckFunction


@dataclasses.dataclass
class Exercise:
    id: str
    chapter: str
    names: tuple[str, ...]
    module: str = ""
    # Its checks use what imports torch's compiler stack on first use (torch._dynamo, sympy: 0.3-1 s), so the runners'
    # forkserver imports it first (graders.isolation.warm_up): a torch optimizer, FakeTensorMode, gradcheck.
    warm_compiler_stack: bool = False
    # Its checks lay out files for the student's code (a checkpoint to write, a folder to rotate) in the judge's
    # exchange folders (graders.isolation.exchange_folder), made before its runners start: they may write only there
    # besides their own scratch.
    writes_files: bool = False
    checks: list[Check] = dataclasses.field(default_factory=list)

    def check(self, points: int = 1) -> Callable[[CheckFunction], CheckFunction]:
        """Decorator registering a check; its docstring's first line is its description."""

        def register(function: CheckFunction) -> CheckFunction:
            if any(c.name == function.__name__ for c in self.checks):
                raise ValueError(f"duplicate check {function.__name__} in {self.id}")
            description = (function.__doc__ or function.__name__).strip().splitlines()[0]
            self.checks.append(Check(function.__name__, points, description, function))
            return function

        return register

    @property
    def max_score(self) -> int:
        return sum(c.points for c in self.checks)

    def select(self, names: Sequence[str] | None) -> list[Check]:
        if not names:
            return list(self.checks)
        by_name = {c.name: c for c in self.checks}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise UsageError(f"exercise {self.id!r} has no check named {', '.join(map(repr, unknown))}; "
                             f"its checks are: {', '.join(by_name)}")
        return [by_name[n] for n in names]


REGISTRY: dict[str, Exercise] = {}
LOAD_ERRORS: dict[str, str] = {}
_CHAPTER_PACKAGE = re.compile(r"ch\d\d_\w+$")


def judge_only(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a grader function that computes expected values: it runs in the judge only.

    The graders are installed with the course, so a student's answer could import one and return what it
    computes. In the student's process (a non-instructor runner) every function marked so is replaced by
    one that ends the grading with "answers must be your own code" (graders/isolation.py).
    """
    function.__course_judge_only__ = True
    return function


def exercise(id: str, chapter: str, names: Iterable[str], *, warm_compiler_stack: bool = False,
             writes_files: bool = False) -> Exercise:
    if id in REGISTRY:
        raise ValueError(f"exercise {id!r} is defined twice")
    module = sys._getframe(1).f_globals.get("__name__", "")
    REGISTRY[id] = Exercise(id, chapter, tuple(names), module, warm_compiler_stack=warm_compiler_stack,
                            writes_files=writes_files)
    return REGISTRY[id]


def load_all_chapters() -> None:
    """Import every ``graders.chNN_<slug>`` package and each exercise module in it.

    A module that fails to import is recorded in ``LOAD_ERRORS`` (the test suite requires it to be empty)
    instead of breaking the grading of every other exercise.
    """
    import graders

    for info in pkgutil.iter_modules(graders.__path__):
        if not (info.ispkg and _CHAPTER_PACKAGE.match(info.name)):
            continue
        package_name = f"graders.{info.name}"
        try:
            package = importlib.import_module(package_name)
        except Exception as exc:  # noqa: BLE001
            LOAD_ERRORS[package_name] = f"{type(exc).__name__}: {exc}"
            continue
        for sub in pkgutil.iter_modules(package.__path__):
            name = f"{package_name}.{sub.name}"
            if sub.name.startswith("_") or name in sys.modules or name in LOAD_ERRORS:
                continue
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - reported with the unknown-exercise message
                LOAD_ERRORS[name] = f"{type(exc).__name__}: {exc}"


def _import_module_of(exercise_id: str) -> None:
    """Import ``graders.chNN_<slug>.<exercise_id>``, where an exercise lives (see above), if one exists."""
    import graders

    if not exercise_id.isidentifier() or exercise_id.startswith("_"):
        return
    for info in pkgutil.iter_modules(graders.__path__):
        name = f"graders.{info.name}.{exercise_id}"
        if not (info.ispkg and _CHAPTER_PACKAGE.match(info.name)) or name in sys.modules or name in LOAD_ERRORS:
            continue
        try:
            if importlib.util.find_spec(name) is None:
                continue
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - reported with the unknown-exercise message, as load_all_chapters does
            LOAD_ERRORS[name] = f"{type(exc).__name__}: {exc}"
        return


def exercises() -> list[Exercise]:
    load_all_chapters()
    order = list(REGISTRY)
    return sorted(REGISTRY.values(), key=lambda e: (e.chapter, order.index(e.id)))


def get_exercise(exercise_id: str) -> Exercise:
    if exercise_id not in REGISTRY:
        # Its own module first: a notebook kernel's first check cell paid 0.11 s (2-core laptop) to import every
        # chapter's graders, on the critical path of each autograded submission (issue 14).
        _import_module_of(exercise_id)
    if exercise_id not in REGISTRY:
        load_all_chapters()
    try:
        return REGISTRY[exercise_id]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        broken = "".join(f"\n(grader module {m} failed to load: {e})" for m, e in LOAD_ERRORS.items())
        raise UsageError(f"unknown exercise {exercise_id!r}; known exercises: {known}{broken}") from None


OUTLINES_ENV = "_COURSE_EXERCISE_OUTLINES"  # a JSON file of every exercise's names and checks (confined kernels)


def outlines() -> dict[str, dict[str, Any]]:
    """Every exercise's id, chapter, names and checks (name, points, description): what a notebook's check cell
    needs to send its answer to the judge, without a line of the checks themselves."""
    return {e.id: {"chapter": e.chapter, "names": list(e.names),
                   "checks": [[c.name, c.points, c.description] for c in e.checks]} for e in exercises()}


def write_outlines(path: str) -> None:
    """Write :func:`outlines` to ``path`` as ``graders/outlines.json`` holds them (tests/test_core.py keeps it equal)."""
    import json

    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(outlines(), indent=1, sort_keys=True) + "\n")


def _unjudgeable(student: Any, device: Any) -> None:
    raise RuntimeError("an exercise's outline holds no checks to run: its judge runs them")


def outline(exercise_id: str) -> Exercise:
    """The exercise as a check cell sees it: from the outlines file ``$_COURSE_EXERCISE_OUTLINES`` names (the kernel
    manager of coursekit.kernel_sandbox names graders/outlines.json to a kernel that may not read the checks), else
    the exercise itself."""
    import json
    import os

    path = os.environ.get(OUTLINES_ENV)
    if not path:
        return get_exercise(exercise_id)
    with open(path, encoding="utf-8") as f:
        found = json.load(f)
    if exercise_id not in found:
        raise UsageError(f"unknown exercise {exercise_id!r}; known exercises: {', '.join(sorted(found))}")
    item = found[exercise_id]
    return Exercise(exercise_id, item["chapter"], tuple(item["names"]),
                    checks=[Check(name, points, text, _unjudgeable) for name, points, text in item["checks"]])
