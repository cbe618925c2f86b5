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


def expect_error(student: Submission, error: type[BaseException], name: str, args: Sequence[Any], *,
                 call: str, why: str, cause: str | None = "a missing check at the top of the function",
                 kwargs: dict | None = None, other_error_cause: str | None = None) -> None:
    """Fail unless the student's ``name(*args)`` raises ``error`` (or a subclass of it).

    When it raises another exception, ``other_error_cause`` (or the usual one: ``assert`` raises
    AssertionError) is given as the likely cause.
    """
    try:
        got = student.call(name, *args, **(kwargs or {}))
    except StudentCodeError as exc:
        if exc.error.is_instance(error):
            return
        if exc.error.kind != "raised":
            raise exc.within(call) from None
        if other_error_cause is None:
            other_error_cause = (f"assert raises AssertionError; raise {error.__name__}(...) instead"
                                 if exc.error.exception_type == "AssertionError" else
                                 f"the specification asks for {error.__name__}; raise {error.__name__}(...) there")
        raise CheckFailed(f"{call} must raise {error.__name__} because {why}, but it {exc.error.describe()}\n"
                          f"  likely cause: {other_error_cause}") from None
    shown = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else show(got)
    likely = f" (likely cause: {cause})" if cause else ""
    raise CheckFailed(f"{call} returned {shown}; it must raise {error.__name__} because {why}{likely}")
