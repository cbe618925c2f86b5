"""benchmarks/mutation.py's machinery on a toy module and on a few mutants of one exercise (the benchmark itself,
hundreds of graded files, is a script: python benchmarks/mutation.py)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_benchmark():
    spec = importlib.util.spec_from_file_location("mutation_benchmark", ROOT / "benchmarks" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mutation = _load_benchmark()

TOY = textwrap.dedent('''
    """A toy module."""
    import math

    LIMIT = 3


    def helper(values, keep=2):
        return values[:len(values) - keep]


    def answer(values, *, scale=1.5):
        """Docstrings and messages are not mutated."""
        if not values:
            raise ValueError(f"empty: {values!r}")
        total = 0
        for value in values:
            if value > LIMIT and value != 7:
                break
            total += abs(value) * scale
        return max(total, 0), helper(values, keep=1)


    def unrelated(x):
        return x + 1
''')


def _mutants():
    return mutation.mutants_of_source(TOY, ("answer",), "toy")


def test_every_operator_of_the_issue_makes_a_mutant_of_the_exercise_code():
    found = {m.description for m in _mutants()}
    expected = ["comparison: > -> >=", "comparison: != -> ==", "comparison flipped: > -> <", "arithmetic: * -> /",
                "augmented assignment: += -> -=", "constant: 0 -> 1", "constant: 1.5 -> 3.0",
                "slice: upper bound + 1", "slice: upper bound - 1", "statement dropped", "raise dropped",
                "boolean: and -> or", "if condition negated", "unary Not removed", "abs(...) -> its argument 1",
                "max -> min", "max(...) -> its argument 1", "helper(): keyword keep= dropped", "break -> continue",
                "return value dropped (returns None)", "max(): first two arguments swapped"]
    missing = [e for e in expected if e not in found]
    assert not missing, f"no mutant for {missing}; found {sorted(found)}"


def test_mutants_stay_inside_the_exercise_and_what_it_calls_and_leave_strings_alone():
    for mutant in _mutants():
        assert "def unrelated(x):\n    return x + 1" in mutant.source, mutant.description
        assert "LIMIT = 3" in mutant.source, mutant.description  # module constants are not the exercise's code
        assert "Docstrings and messages are not mutated." in mutant.source
        if "raise" in mutant.source:
            assert "f'empty: {values!r}'" in mutant.source
    assert any("values[:len(values) - keep + 1]" in m.source for m in _mutants())  # helper() is mutated too


def test_each_mutant_is_one_change_that_compiles_and_no_two_are_the_same_program():
    mutants = _mutants()
    sources = [m.source for m in mutants]
    assert len(set(sources)) == len(sources)
    for mutant in mutants:
        compile(mutant.source, "mutant.py", "exec")
        changed = [line for line in mutant.diff.splitlines() if line.startswith("+")]
        assert len(changed) <= 2, (mutant.description, mutant.diff)  # one statement, at most a header and its line


def test_a_survivor_is_equivalent_only_after_ten_thousand_generated_cases(monkeypatch):
    mutant = _mutants()[0]
    monkeypatch.setattr(mutation, "grade", lambda m, folder, scale=None, salt="", checks=None, failure=None: (False, "", 900))
    killed, _, drawn = mutation.equivalence(mutant, Path("."), first_drawn=100)
    assert not killed and drawn >= mutation.EQUIVALENCE_CASES
    assert mutation.equivalence(mutant, Path("."), first_drawn=0) == (False, "", 0)  # no domain: no evidence
    rounds = iter([(False, "", 900), (True, "some_check (failed)", 900)])
    monkeypatch.setattr(mutation, "grade", lambda m, folder, scale=None, salt="", checks=None, failure=None: next(rounds))
    killed, by, drawn = mutation.equivalence(mutant, Path("."), first_drawn=100)
    assert killed and by.startswith("some_check (failed)") and drawn == 1800
    # A scaled-up round that only ran out of time is no evidence: the rounds get smaller and go on.
    scales = []

    def timed_out_once(m, folder, scale=None, salt="", checks=None, failure=None):
        scales.append(scale)
        if len(scales) == 1:
            failure["message"] = "did not finish within 300 s and was stopped"
            return True, "some_check (error)", 900
        return False, "", 5000

    monkeypatch.setattr(mutation, "grade", timed_out_once)
    killed, _, drawn = mutation.equivalence(mutant, Path("."), first_drawn=100)
    assert not killed and drawn == 10000 and scales[1] == scales[0] / 4
    asked = []
    monkeypatch.setattr(mutation, "grade",
                        lambda m, folder, scale=None, salt="", checks=None, failure=None: asked.append(checks) or (False, "", 5000))
    mutation.equivalence(mutant, Path("."), first_drawn=100, checks=["draws"])
    assert asked == [["draws"], ["draws"]]  # only the checks that draw generated cases are graded again
    assert mutation.equivalence(mutant, Path("."), first_drawn=100, checks=[]) == (False, "", 0)


@pytest.mark.slow
def test_the_reference_survives_and_a_mutant_of_it_is_killed(tmp_path):
    """Graded as student files by the real graders: the reference of shard_indices passes the check of invalid
    ranks, and the mutant that drops its rank check is rejected by it."""
    mutants = mutation.mutants("shard_indices")
    checks = ["invalid_rank_raises_value_error"]
    reference = mutation.Mutant("shard_indices", -1, "none", 0, (ROOT / "solutions" / "ch08_ddp.py").read_text(), "")
    killed, by, _ = mutation.grade(reference, tmp_path, checks=checks)
    assert not killed, by
    dropped = next(m for m in mutants if m.description == "raise dropped")
    drawn: dict[str, int] = {}
    failure: dict[str, str] = {}
    killed, by, _ = mutation.grade(dropped, tmp_path, checks=checks, drawn_by_check=drawn, failure=failure)
    assert killed and by.startswith("invalid_rank_raises_value_error")
    assert list(drawn) == checks
    assert "ValueError" in failure["message"]  # what the student reads is kept for the list of named causes


def test_only_grades_the_mutants_it_names(tmp_path):
    """--only N,N settles a few survivors without grading the others (ddp_accumulation's rounds cost minutes)."""
    dropped = next(m for m in mutation.mutants("shard_indices") if m.description == "raise dropped")
    result = mutation.run_exercise("shard_indices", tmp_path, equivalence_runs=False, only={dropped.number})
    assert result.mutants == 1 and result.killed == 1, result


def test_the_cause_a_message_names_is_read_from_it_and_none_is_invented():
    message = ("shard_indices(10, 3, rank=1) returned [1, 4, 7] (likely cause: the padding was dropped).\n"
               "expected [1, 4, 7, 0]")
    assert mutation.likely_cause(message) == "the padding was dropped"
    assert mutation.likely_cause("Likely cause: rank starts at 1") == "rank starts at 1"
    assert mutation.likely_cause("expected [1, 4, 7, 0], got [1, 4, 7]") == ""
