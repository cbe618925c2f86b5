"""Mutation score of the graders: mutants of each exercise's reference, graded as student files.

    python benchmarks/mutation.py                      # every exercise
    python benchmarks/mutation.py shard_indices glu    # some exercises
    python benchmarks/mutation.py --list move_to       # the mutants only, not graded
    python benchmarks/mutation.py --json out.json ...  # also write the results

For each exercise the reference module in ``solutions/`` is parsed and every *site* inside the exercise's own
definitions (its names in ``graders`` and the module's functions they call) is mutated once by each operator
that applies (a small AST pass of our own, the operators of mutmut and cosmic-ray: comparison, arithmetic and
boolean swaps, constants off by one, slice bounds off by one, dropped statements, dropped keyword and positional
arguments, swapped arguments, negated conditions, ``max``/``min``/``abs`` removed, ``break``/``continue``
swapped, a return value dropped). Each mutant is the whole module with that one change, graded by
``graders.check_file`` on the CPU; it is *killed* when any check does not pass (checks run in order and stop at
the first that fails).

A surviving mutant is graded again with the exercise's generated domains scaled up (``COURSE_DOMAIN_SCALE``)
and drawn afresh (``COURSE_DOMAIN_SALT``) until the checks have drawn at least 10 000 generated cases: if that
kills it, it is counted *killed late* (a hole in the graded sample: the grader must draw better); if not, it is
*equivalent*, listed with that evidence. An exercise whose checks draw no generated cases cannot show
equivalence: its survivors stay survivors.

Goal (issue 32): at least 99 % of the non-equivalent mutants rejected by the graded checks, for every exercise.
A script, not a test (it grades hundreds of files); ``tests/test_mutation.py`` runs its machinery on a few.
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import difflib
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EQUIVALENCE_CASES = 10_000  # generated cases a survivor must pass before it is called equivalent (issue 32)
GOAL = 0.99


# ==================================================================================================
# Operators: each yields (description, replacement node) for one node; None replacement drops a statement
# ==================================================================================================
COMPARE_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                 ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
COMPARE_FLIPS = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
BINOP_SWAPS = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div, ast.Add], ast.Div: [ast.Mult, ast.FloorDiv],
               ast.FloorDiv: [ast.Div, ast.Mult], ast.Mod: [ast.FloorDiv], ast.Pow: [ast.Mult],
               ast.BitAnd: [ast.BitOr], ast.BitOr: [ast.BitAnd], ast.LShift: [ast.RShift], ast.RShift: [ast.LShift]}
SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is",
          ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
          ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|",
          ast.LShift: "<<", ast.RShift: ">>", ast.And: "and", ast.Or: "or"}


def _num(value: int | float) -> ast.expr:
    node = ast.Constant(abs(value))
    return ast.UnaryOp(ast.USub(), node) if value < 0 else node


def _is_docstring(node: ast.AST, parent_body: list[ast.stmt] | None) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and parent_body is not None and parent_body and parent_body[0] is node)


def expression_mutations(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    if isinstance(node, ast.Compare):
        for index, operator in enumerate(node.ops):
            op = type(operator)
            for table, what in ((COMPARE_SWAPS, "comparison"), (COMPARE_FLIPS, "comparison flipped")):
                if op in table:
                    new = copy.deepcopy(node)
                    new.ops[index] = table[op]()
                    yield f"{what}: {SYMBOL[op]} -> {SYMBOL[table[op]]}", new
    elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAPS:
        for replacement in BINOP_SWAPS[type(node.op)]:
            new = copy.deepcopy(node)
            new.op = replacement()
            yield f"arithmetic: {SYMBOL[type(node.op)]} -> {SYMBOL[replacement]}", new
        yield f"arithmetic: `a {SYMBOL[type(node.op)]} b` -> `a`", copy.deepcopy(node.left)
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield f"boolean: {SYMBOL[type(node.op)]} -> {SYMBOL[type(new.op)]}", new
        for index in range(len(node.values)):
            rest = [copy.deepcopy(v) for i, v in enumerate(node.values) if i != index]
            yield (f"boolean: operand {index + 1} of `{SYMBOL[type(node.op)]}` dropped",
                   rest[0] if len(rest) == 1 else ast.BoolOp(copy.deepcopy(node.op), rest))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
        if not (isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)):
            yield f"unary {type(node.op).__name__} removed", copy.deepcopy(node.operand)
    elif isinstance(node, ast.Constant) and not isinstance(node.value, str):
        value = node.value
        if isinstance(value, bool):
            yield f"constant: {value} -> {not value}", ast.Constant(not value)
        elif isinstance(value, int):
            yield f"constant: {value} -> {value + 1}", _num(value + 1)
            yield f"constant: {value} -> {value - 1}", _num(value - 1)
        elif isinstance(value, float):
            yield f"constant: {value!r} -> {value * 2!r}", _num(value * 2)
            yield f"constant: {value!r} -> {value + 1!r}", _num(value + 1)
        elif value is None:
            pass
    elif isinstance(node, ast.Call):
        name = (node.func.id if isinstance(node.func, ast.Name) else
                node.func.attr if isinstance(node.func, ast.Attribute) else "call")
        if isinstance(node.func, ast.Name) and node.func.id in ("max", "min", "abs") and node.args:
            for index, argument in enumerate(node.args):
                yield f"{node.func.id}(...) -> its argument {index + 1}", copy.deepcopy(argument)
            if node.func.id in ("max", "min"):
                new = copy.deepcopy(node)
                new.func.id = "min" if node.func.id == "max" else "max"
                yield f"{node.func.id} -> {new.func.id}", new
        for index, keyword in enumerate(node.keywords):
            if keyword.arg is not None:
                new = copy.deepcopy(node)
                del new.keywords[index]
                yield f"{name}(): keyword {keyword.arg}= dropped", new
        if node.args and not any(isinstance(a, ast.Starred) for a in node.args):
            new = copy.deepcopy(node)
            del new.args[-1]
            yield f"{name}(): last positional argument dropped", new
            if len(node.args) >= 2:
                new = copy.deepcopy(node)
                new.args[0], new.args[1] = new.args[1], new.args[0]
                yield f"{name}(): first two arguments swapped", new
    elif isinstance(node, ast.Slice):
        for part in ("lower", "upper"):
            bound = getattr(node, part)
            for delta, sign in ((1, "+"), (-1, "-")):
                new = copy.deepcopy(node)
                base = copy.deepcopy(bound) if bound is not None else None
                if base is None:
                    continue
                setattr(new, part, ast.BinOp(base, ast.Add() if delta > 0 else ast.Sub(), ast.Constant(1)))
                yield f"slice: {part} bound {sign} 1", new
            if bound is not None:
                new = copy.deepcopy(node)
                setattr(new, part, None)
                yield f"slice: {part} bound dropped", new
    elif isinstance(node, ast.IfExp):
        new = copy.deepcopy(node)
        new.test = ast.UnaryOp(ast.Not(), new.test)
        yield "conditional expression negated", new
        yield "conditional expression -> its first branch", copy.deepcopy(node.body)
        yield "conditional expression -> its second branch", copy.deepcopy(node.orelse)


def statement_mutations(node: ast.stmt, body: list[ast.stmt]) -> Iterator[tuple[str, ast.stmt | None]]:
    if _is_docstring(node, body) or isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                                                      ast.Global, ast.Nonlocal, ast.Pass)):
        return
    if isinstance(node, ast.Raise):
        yield "raise dropped", None
        return
    if isinstance(node, (ast.If, ast.While)):
        new = copy.deepcopy(node)
        new.test = ast.UnaryOp(ast.Not(), new.test)
        yield f"{type(node).__name__.lower()} condition negated", new
    if isinstance(node, ast.AugAssign) and type(node.op) in BINOP_SWAPS:
        for replacement in BINOP_SWAPS[type(node.op)]:
            new = copy.deepcopy(node)
            new.op = replacement()
            yield f"augmented assignment: {SYMBOL[type(node.op)]}= -> {SYMBOL[replacement]}=", new
    if isinstance(node, ast.Break):
        yield "break -> continue", ast.Continue()
    if isinstance(node, ast.Continue):
        yield "continue -> break", ast.Break()
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return value dropped (returns None)", ast.Return(None)
    yield "statement dropped", None


# ==================================================================================================
# Sites: every node of the exercise's own definitions, mutated one at a time
# ==================================================================================================
def _top_level(tree: ast.Module) -> dict[str, ast.stmt]:
    return {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def exercise_definitions(tree: ast.Module, names: tuple[str, ...]) -> list[str]:
    """The exercise's names and the module's top-level functions and classes they use, transitively."""
    definitions = _top_level(tree)
    wanted, queue = [], [n for n in names if n in definitions]
    while queue:
        name = queue.pop(0)
        if name in wanted:
            continue
        wanted.append(name)
        used = {n.id for n in ast.walk(definitions[name]) if isinstance(n, ast.Name)}
        queue.extend(sorted(n for n in used if n in definitions and n not in wanted))
    return wanted


class _Mutator(ast.NodeTransformer):
    """Visits the chosen definitions; counts mutation sites; applies the one numbered ``target``."""

    def __init__(self, target: int | None) -> None:
        self.target, self.index, self.descriptions, self.lines = target, 0, [], []
        self.applied: str | None = None

    def _offer(self, node: ast.AST, mutations: Iterator[tuple[str, ast.AST | None]]) -> tuple[bool, ast.AST | None]:
        for description, replacement in mutations:
            self.descriptions.append(description)
            self.lines.append(getattr(node, "lineno", 0))
            if self.index == self.target:
                self.index += 1
                self.applied = description
                return True, replacement
            self.index += 1
        return False, node

    def visit_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        result = []
        for statement in body:
            applied, replacement = self._offer(statement, statement_mutations(statement, body))
            if applied:
                if replacement is not None:
                    result.append(ast.copy_location(replacement, statement))
                continue
            result.append(self.visit(statement))
        return result or [ast.Pass()]

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self.visit_body(value))
            elif isinstance(value, list):
                setattr(node, field, [self._expression(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self._expression(value))
        return node

    def _expression(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            return node  # strings and f-strings: messages and names, not behaviour
        if isinstance(node, ast.arguments):
            return node  # a lambda's parameters
        if isinstance(node, ast.expr):
            applied, replacement = self._offer(node, expression_mutations(node))
            if applied:
                return ast.copy_location(replacement, node)
        return self.visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.args.defaults = [self._expression(d) for d in node.args.defaults]
        node.args.kw_defaults = [self._expression(d) if d is not None else None for d in node.args.kw_defaults]
        node.body = self.visit_body(node.body)
        return node  # annotations and decorators are left alone

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.body = self.visit_body(node.body)
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        return node  # what is raised (its message) is not mutated; dropping the raise is

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        node.test = self._expression(node.test)
        return node


@dataclasses.dataclass
class Mutant:
    exercise: str
    number: int
    description: str
    line: int
    source: str
    diff: str


def mutants(exercise_id: str) -> list[Mutant]:
    """Every mutant of the exercise's reference (its definitions in ``solutions/chNN_<slug>.py``)."""
    import graders

    exercise = graders.get_exercise(exercise_id)
    path = ROOT / "solutions" / f"ch{exercise.chapter}.py"
    return mutants_of_source(path.read_text(), exercise.names, exercise_id)


def mutants_of_source(text: str, names: tuple[str, ...], exercise_id: str = "") -> list[Mutant]:
    """Every mutant of the definitions ``names`` (and what they use) in the module ``text``, one change each."""
    tree = ast.parse(text)
    wanted = exercise_definitions(tree, names)
    original = ast.unparse(tree)

    def apply(target: int | None) -> tuple[str, _Mutator]:
        copy_tree = copy.deepcopy(tree)
        mutator = _Mutator(target)
        for index, node in enumerate(copy_tree.body):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in wanted:
                copy_tree.body[index] = mutator.visit(node)
        return ast.unparse(ast.fix_missing_locations(copy_tree)), mutator

    _, census = apply(None)
    found, seen = [], {original}
    for number, (description, line) in enumerate(zip(census.descriptions, census.lines)):
        source, mutator = apply(number)
        if source in seen:  # two operators giving the same program count once
            continue
        try:
            compile(source, f"mutant_{number}.py", "exec")
        except SyntaxError:
            continue
        seen.add(source)
        diff = "".join(difflib.unified_diff(original.splitlines(True), source.splitlines(True), n=0))
        diff = "\n".join(l for l in diff.splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---")))
        found.append(Mutant(exercise_id, number, description, line, source, diff))
    return found


# ==================================================================================================
# Grading
# ==================================================================================================
def grade(mutant: Mutant, folder: Path, *, scale: float | None = None, salt: str = "",
          checks: list[str] | None = None, drawn_by_check: dict[str, int] | None = None,
          failure: dict[str, str] | None = None) -> tuple[bool, str, int]:
    """(killed, the first check that did not pass or '', generated cases drawn), on ``checks`` (default: all).
    ``drawn_by_check``, when given, receives the generated cases each graded check drew; ``failure`` the message
    of the check that rejected the mutant (what a student would read)."""
    import graders
    from graders import domain

    path = folder / f"mutant_{mutant.exercise}_{mutant.number}.py"
    path.write_text(mutant.source)
    saved = {k: os.environ.get(k) for k in (domain.SCALE_ENV, domain.SALT_ENV)}
    os.environ[domain.SCALE_ENV] = str(scale or 1)
    os.environ[domain.SALT_ENV] = salt
    before = domain.DRAWN
    try:
        for check in graders.get_exercise(mutant.exercise).checks:
            if checks is not None and check.name not in checks:
                continue
            # 20 s a check when graded (the graded limit is seconds; a loaded machine); more when scaled up, so that
            # a scaled-up domain's time is not taken for a failure
            timeout = 20 * max(1.0, min(float(scale or 1), 15.0))
            drawn_before = domain.DRAWN
            report = graders.check_file(mutant.exercise, str(path), [check.name], device="cpu", timeout=timeout)
            if drawn_by_check is not None:
                drawn_by_check[check.name] = domain.DRAWN - drawn_before
            if not report.passed:
                status = report.results[0].status if report.results else "?"
                if failure is not None:
                    failure["message"] = report.results[0].message if report.results else report.as_text()
                return True, f"{check.name} ({status})", domain.DRAWN - before
        return False, "", domain.DRAWN - before
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def equivalence(mutant: Mutant, folder: Path, first_drawn: int,
                checks: list[str] | None = None) -> tuple[bool, str, int]:
    """Grade a survivor on fresh, scaled-up domains until 10 000 generated cases: (killed, by which check, drawn).
    ``checks``: the checks that draw generated cases (the others would only repeat their hand-written cases, which
    the survivor has passed already: about half of an exercise's checks, and a survivor's rounds cost minutes)."""
    if first_drawn == 0 or checks == []:
        return False, "", 0
    total, round_number = 0, 0
    scale = max(1.0, min(200.0, EQUIVALENCE_CASES / (4 * first_drawn)))
    while total < EQUIVALENCE_CASES and round_number < 80:
        round_number += 1
        failure: dict[str, str] = {}
        killed, by, drawn = grade(mutant, folder, scale=scale, salt=f"equivalence-{round_number}", checks=checks,
                                  failure=failure)
        if killed and scale > 1 and "did not finish within" in failure.get("message", ""):
            # A scaled-up round that ran out of time says nothing about the mutant (ddp_accumulation's 1600 cases
            # on three ranks did): the next rounds are smaller, and their cases count.
            scale = max(1.0, scale / 4)
            continue
        total += drawn
        if killed:
            return True, f"{by}: {failure.get('message', '')[:300]}", total
        if drawn == 0:
            break
    return False, "", total


@dataclasses.dataclass
class Result:
    exercise: str
    mutants: int = 0
    killed: int = 0
    killed_late: list[dict] = dataclasses.field(default_factory=list)
    equivalent: list[dict] = dataclasses.field(default_factory=list)
    survived: list[dict] = dataclasses.field(default_factory=list)
    causes: list[dict] = dataclasses.field(default_factory=list)  # killed mutants whose message named a likely cause
    seconds: float = 0.0

    @property
    def score(self) -> float:
        relevant = self.mutants - len(self.equivalent)
        return 1.0 if relevant == 0 else self.killed / relevant


def run_exercise(exercise_id: str, folder: Path, *, verbose: bool = False, limit: int | None = None,
                 equivalence_runs: bool = True, only: set[int] | None = None) -> Result:
    """Grade the exercise's mutants (the first ``limit``; ``only``: those numbers, to settle a few survivors)."""
    start = time.perf_counter()
    result = Result(exercise_id)
    for mutant in [m for m in mutants(exercise_id)[:limit] if only is None or m.number in only]:
        result.mutants += 1
        drawn_by_check: dict[str, int] = {}
        failure: dict[str, str] = {}
        killed, by, drawn = grade(mutant, folder, drawn_by_check=drawn_by_check, failure=failure)
        entry = {"number": mutant.number, "line": mutant.line, "mutation": mutant.description, "diff": mutant.diff}
        if killed:
            result.killed += 1
            cause = likely_cause(failure.get("message", ""))
            if cause:
                result.causes.append(entry | {"by": by, "cause": cause})
            if verbose:
                print(f"    killed #{mutant.number} by {by}: {mutant.description}"
                      + (f"\n      likely cause named: {cause}" if cause else ""), flush=True)
            continue
        drawing = [name for name, cases in drawn_by_check.items() if cases > 0]
        late, by, total = equivalence(mutant, folder, drawn, drawing) if equivalence_runs else (False, "", 0)
        entry["generated_cases"] = total
        if late:
            result.killed_late.append(entry | {"by": by})
            result.survived.append(entry | {"by": f"only on a larger domain ({by})"})
        elif total >= EQUIVALENCE_CASES:
            result.equivalent.append(entry)
        else:
            result.survived.append(entry)
        if verbose:
            print(f"    {'EQUIVALENT' if entry in result.equivalent else 'SURVIVED'} #{mutant.number} "
                  f"(line {mutant.line}, {total} generated cases): {mutant.description}\n      "
                  + mutant.diff.replace("\n", "\n      "), flush=True)
    result.seconds = time.perf_counter() - start
    return result


def likely_cause(message: str) -> str:
    """The cause a failure message names ("likely cause: ..."), or '' when it names none (issue 32, point 3: a
    cause is named only when the evidence singles it out; the benchmark lists each one named for a mutant, so
    that a reader can see whether it is the mutant's change)."""
    marker = "likely cause:"
    at = message.lower().find(marker)
    if at < 0:
        return ""
    return message[at + len(marker):].strip().split("\n")[0].strip(" .)")


def table(results: list[Result]) -> str:
    rows = ["| exercise | mutants | equivalent | killed | survived | score |", "|---|---|---|---|---|---|"]
    for r in results:
        rows.append(f"| {r.exercise} | {r.mutants} | {len(r.equivalent)} | {r.killed} | {len(r.survived)} | "
                    f"{100 * r.score:.1f} % {'✓' if r.score >= GOAL else '✗'} |")
    total_mutants = sum(r.mutants for r in results)
    total_equivalent = sum(len(r.equivalent) for r in results)
    total_killed = sum(r.killed for r in results)
    relevant = total_mutants - total_equivalent
    rows.append(f"| all | {total_mutants} | {total_equivalent} | {total_killed} | "
                f"{sum(len(r.survived) for r in results)} | {100 * total_killed / max(1, relevant):.1f} % |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exercises", nargs="*", help="exercise ids (default: all)")
    parser.add_argument("--list", action="store_true", help="print the mutants, do not grade them")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--limit", type=int, help="at most this many mutants per exercise (a quick look)")
    parser.add_argument("--only", metavar="N,N", help="only the mutants of these numbers (to settle survivors; the "
                        "score is then of those alone)")
    parser.add_argument("--graded-only", action="store_true",
                        help="grade each mutant once, as a student's file is graded; no equivalence runs (every "
                             "survivor stays a survivor: a quick upper bound on the misses)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every mutant as it is graded")
    parser.add_argument("--causes", action="store_true",
                        help="print each killed mutant whose rejection named a likely cause, with its change")
    options = parser.parse_args(argv)
    os.environ.setdefault("COURSE_OFFLINE", "1")
    import graders

    ids = options.exercises or [e.id for e in graders.exercises()]
    if options.list:
        for exercise_id in ids:
            for mutant in mutants(exercise_id)[:options.limit]:
                print(f"{exercise_id} #{mutant.number} line {mutant.line}: {mutant.description}\n  "
                      + mutant.diff.replace("\n", "\n  "))
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        for exercise_id in ids:
            print(f"{exercise_id}:", flush=True)
            result = run_exercise(exercise_id, Path(scratch), verbose=options.verbose, limit=options.limit,
                                  equivalence_runs=not options.graded_only,
                                  only={int(n) for n in options.only.split(",")} if options.only else None)
            results.append(result)
            print(f"  {result.mutants} mutants, {len(result.equivalent)} equivalent, {result.killed} killed "
                  f"({len(result.causes)} of them with a likely cause named), {len(result.survived)} survived "
                  f"({100 * result.score:.1f} %, {result.seconds:.0f} s)", flush=True)
            for entry in result.survived:
                print(f"  SURVIVED #{entry['number']} line {entry['line']}: {entry['mutation']}"
                      f"{' — ' + entry['by'] if 'by' in entry else ''} ({entry.get('generated_cases', 0)} generated "
                      f"cases)\n    " + entry["diff"].replace("\n", "\n    "), flush=True)
            if options.causes:
                for entry in result.causes:
                    print(f"  cause named for #{entry['number']} ({entry['mutation']}) by {entry['by']}: "
                          f"{entry['cause']}\n    " + entry["diff"].replace("\n", "\n    "), flush=True)
            for entry in result.equivalent:
                print(f"  equivalent #{entry['number']} line {entry['line']}: {entry['mutation']} "
                      f"(no difference on {entry['generated_cases']} generated cases)\n    "
                      + entry["diff"].replace("\n", "\n    "), flush=True)
    print()
    print(table(results))
    if options.json:
        options.json.write_text(json.dumps([dataclasses.asdict(r) | {"score": r.score} for r in results], indent=1))
    return 0 if all(r.score >= GOAL for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
