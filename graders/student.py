"""The judge's handle on the student's answer: every call crosses into the student's own process.

Checks never touch a live student object. They send inputs and get back observations:

- ``student.call(name, *args)``: the student's function on copies of ``args`` (they are pickled across),
  its result as a value;
- ``student.call_with_inputs(name, *args)``: also the inputs as the student's code left them, decoded
  together with the result, so a result that is a view of an input still shares its storage;
- ``student.scenario(function, *args)``: run a grader function *inside* the student's process (to build a
  student's module, train with it, run a DataLoader over it) and get back what it returns.

Whatever the student's code raises arrives as :class:`StudentCodeError` with the facts in ``.error``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from graders.compare import show
from graders.isolation import Runner
from graders.outcomes import CheckFailed, StudentCodeError


class Submission:
    def __init__(self, runner: Runner) -> None:
        self._runner = runner

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._runner.request(("call", name, args, kwargs, False))

    def call_with_inputs(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, tuple, dict]:
        result, args_after, kwargs_after = self._runner.request(("call", name, args, kwargs, True))
        return result, tuple(args_after), dict(kwargs_after)

    def scenario(self, function: Callable[..., Any], *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Run ``function(runner_student, *args, **kwargs)`` in the student's process; return its result.

        ``function`` must be a module-level function of a ``graders`` module (the runner imports it).
        """
        message = ("scenario", function.__module__, function.__qualname__, args, kwargs)
        return self._runner.request(message, timeout=timeout)

    @contextlib.contextmanager
    def fresh_process(self) -> Iterator["Submission"]:
        """Another runner for the same answer, started afresh (nothing the first one kept in memory): to
        check that what a function wrote to disk is all another process needs. Closed at the end of the block."""
        old = self._runner
        runner = Runner(old.source, seed=old.seed, device=old.device, limits=old.limits)
        try:
            runner.ready()
            yield Submission(runner)
        finally:
            runner.close()

    def on_ranks(self, scenario: Callable[..., Any], world_size: int, args_per_rank: Sequence[Sequence[Any]] | None = None,
                 **options: Any) -> Any:
        """Run ``scenario(runner_student, rank_context, *args)`` on ``world_size`` ranks of a real process
        group (gloo on CPU, NCCL with enough GPUs); see :func:`graders.ranks.run_on_ranks`."""
        from graders.ranks import run_on_ranks

        return run_on_ranks(self, scenario, world_size, args_per_rank, **options)


@dataclasses.dataclass(frozen=True, eq=False)  # compared by identity: its args may hold tensors
class ErrorCase:
    """One call the specification says must raise: its arguments, how the message shows it, and why it must.

    ``hint``: the mistake this call singles out when it is let through while another invalid call raised (a
    boundary: ``rank == world_size`` let through where ``rank > world_size`` raised is an off-by-one test);
    ``other_hint``: the one it singles out when it raises another exception after an earlier call raised the
    right one (``num_iter == 1`` dividing by zero where ``num_iter == 0`` was rejected)."""
    args: Sequence[Any]
    call: str
    why: str
    kwargs: dict | None = None
    hint: str | None = None
    other_hint: str | None = None


def expect_error(student: Submission, error: type[BaseException], name: str, args: Sequence[Any], *,
                 call: str, why: str, cause: str | None = None,
                 kwargs: dict | None = None, other_error_cause: str | None = None) -> None:
    """Fail unless the student's ``name(*args)`` raises ``error`` (or a subclass of it).

    ``cause`` is named when it returns instead; give one only when this single call singles a mistake out
    (to name "no check at all" from evidence, give several invalid calls to :func:`expect_errors`). When it
    raises another exception, ``other_error_cause`` (or the usual one: ``assert`` raises AssertionError) is
    given as the likely cause.
    """
    expect_errors(student, error, name, [ErrorCase(args, call, why, kwargs)], missing_check=cause,
                  other_error_cause=other_error_cause, from_one_call=True)


def expect_errors(student: Submission, error: type[BaseException], name: str, cases: Sequence[ErrorCase], *,
                  missing_check: str | None = "no check at all: every one of these invalid calls returned",
                  other_error_cause: str | None = None, from_one_call: bool = False) -> None:
    """Fail unless every one of ``cases`` makes the student's ``name`` raise ``error`` (or a subclass).

    Every call is made first, so that the cause is named from all of them: when none raised,
    ``missing_check`` (only from several calls, unless ``from_one_call``: one call that returns may as well come
    from a check whose condition is wrong); when some raised, the check exists and its condition lets this one
    through.
    The first failing call, in order, is reported; one that raised another exception (an assert, say) names
    its ``other_hint`` only when an earlier call raised the right one.
    """
    outcomes: list[tuple[str, Any]] = []  # per case: ("raised", None), ("returned", value) or ("other", error)
    for case in cases:
        try:
            outcomes.append(("returned", student.call(name, *case.args, **(case.kwargs or {}))))
        except StudentCodeError as exc:
            if exc.error.kind != "raised":  # a timeout, a crash: the runner is gone
                raise exc.within(case.call) from None
            outcomes.append(("raised", None) if exc.error.is_instance(error) else ("other", exc.error))
    failing = [i for i, (what, _) in enumerate(outcomes) if what != "raised"]
    if not failing:
        return
    first = failing[0]
    case, (what, got) = cases[first], outcomes[first]
    raised = [c for c, (w, _) in zip(cases, outcomes) if w == "raised"]
    if what == "other":
        earlier = any(w == "raised" for w, _ in outcomes[:first])
        other = (case.other_hint if case.other_hint and earlier else None) or other_error_cause or (
            f"assert raises AssertionError; raise {error.__name__}(...) instead"
            if got.exception_type == "AssertionError" else
            f"the specification asks for {error.__name__}; raise {error.__name__}(...) there")
        raise CheckFailed(f"{case.call} must raise {error.__name__} because {case.why}, but it {got.describe()}\n"
                          f"  likely cause: {other}")
    shown = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
    if raised:
        likely = (f" (likely cause: {case.hint})" if case.hint else
                  f" (likely cause: the check's condition lets this call through, although {raised[0].call} did "
                  f"raise {error.__name__})")
    elif missing_check and (len(cases) > 1 or from_one_call) and all(w == "returned" for w, _ in outcomes):
        likely = f" (likely cause: {missing_check})"
    else:
        likely = ""
    returned = sum(w == "returned" for w, _ in outcomes)
    others = f" ({returned - 1} other invalid call(s) returned too)" if returned > 1 else ""
    raise CheckFailed(f"{case.call} returned {shown}; it must raise {error.__name__} because {case.why}{likely}"
                      f"{others}")
