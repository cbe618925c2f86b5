"""average_gradients: the grader's expected gradients are DistributedDataParallel's (proved on real gloo ranks),
the reference averages within a group and skips parameters without a gradient, and the catalogue of
mistakes the grader names really differs from the mean."""

from __future__ import annotations

import pytest
import torch

from graders import _rank_demos as demos
from graders.ch08_ddp import average_gradients as grader
from graders.isolation import StudentSource
from graders.ranks import run_on_ranks

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def no_answer(tmp_path):
    path = tmp_path / "answer.py"
    path.write_text("def average_gradients(model, group=None):\n    pass\n")
    return StudentSource.from_file(str(path), ["average_gradients"])


def _expected_means(case: grader.GradCase) -> dict[str, torch.Tensor | None]:
    """The grader's expectation for the first call."""
    states = grader.local_states(case)
    return {name: None if local is None else grader._mean(states, 0, case.members(0), name)
            for name, local in states[0][0]["grads"].items()}


def _first_batches(case: grader.GradCase) -> list[tuple]:
    return [(case, grader.rank_batches(case, r)[0]) for r in range(case.world_size)]


@pytest.mark.parametrize("case", [grader.GradCase(world_size=2), grader.GradCase(world_size=3, model="conv", seed=8)],
                         ids=["two_ranks_mlp", "three_ranks_conv_float64"])
def test_the_expected_gradients_are_those_of_ddp(no_answer, case):
    run = run_on_ranks(no_answer, demos.ddp_gradients, case.world_size, _first_batches(case))
    expected = _expected_means(case)
    for rank, gradients in enumerate(run.values()):
        for name, want in expected.items():
            torch.testing.assert_close(gradients[name].double(), want, rtol=grader.RTOL, atol=grader.ATOL,
                                       msg=f"rank {rank}, {name}")


def test_ddp_leaves_parameters_without_a_gradient_alone(no_answer):
    """The frozen layer has no gradient under DDP either; the used one gets the mean."""
    case = grader.GradCase(world_size=2, model="partly_used", seed=3)
    run = run_on_ranks(no_answer, demos.ddp_gradients, 2, _first_batches(case))
    expected = _expected_means(case)
    for gradients in run.values():
        assert gradients["frozen.weight"] is None and expected["frozen.weight"] is None
        torch.testing.assert_close(gradients["used.weight"].double(), expected["used.weight"],
                                   rtol=grader.RTOL, atol=grader.ATOL)


@pytest.mark.parametrize("case", [grader.GradCase(world_size=2, calls=(None, None)),
                                  grader.GradCase(world_size=3, calls=((1, 2), (0, 2), None), seed=6),
                                  grader.GradCase(world_size=2, weights_differ=True, seed=9)],
                         ids=["two_ranks_two_calls", "groups_of_three", "weights_differ"])
def test_each_mistake_differs_from_the_mean(case):
    """Every mistake the grader can name gives another gradient than the mean on its case, on every member rank
    of every call (on some parameter: a bias before a BatchNorm has no gradient at all)."""
    states = grader.local_states(case)
    for call in range(len(case.calls)):
        for rank in case.members(call):
            differs: dict[str, bool] = {}
            for name, local in states[rank][call]["grads"].items():
                if local is None:
                    continue
                mean = grader._mean(states, call, case.members(call), name)
                for cause, value in grader._mistakes(case, states, call, rank, name):
                    differs[cause] = differs.get(cause, False) or not torch.allclose(value, mean, rtol=grader.RTOL,
                                                                                      atol=grader.ATOL)
            assert differs and all(differs.values()), (call, {cause[:50]: d for cause, d in differs.items()})


def test_each_rank_gets_only_its_own_batches():
    """No rank can compute another's gradients: the batches are made in the judge, differ per rank and call."""
    case = grader.GradCase(world_size=3, calls=(None, None))
    batches = [grader.rank_batches(case, r) for r in range(3)]
    firsts = [b[0][0] for b in batches]
    assert not torch.equal(firsts[0], firsts[1]) and not torch.equal(batches[0][0][0], batches[0][1][0])
    assert getattr(grader.rank_batches, "__course_judge_only__", False)


def test_the_weights_differ_between_ranks_when_the_case_says_so():
    """leaves_the_weights_alone depends on it: averaging identical weights would change nothing."""
    case = grader.GradCase(world_size=2, weights_differ=True, seed=9)
    first, second = (grader.build_model(case, r).state_dict() for r in range(2))
    assert any(not torch.equal(first[k], second[k]) for k in first if k.endswith("weight"))
    assert any(k.endswith("running_mean") for k in first), "a buffer that averaging a state_dict would change"


def test_build_model_leaves_the_callers_rng_alone():
    torch.manual_seed(1)
    before = torch.get_rng_state()
    grader.build_model(grader.GradCase(world_size=2), 0)
    assert torch.equal(torch.get_rng_state(), before)


# ==================================================================================================
# The generated domain: each class the specification allows is drawn (500 models, a fixed seed)
# ==================================================================================================
import random  # noqa: E402

from graders import domain  # noqa: E402


def _drawn(count=500, seed=5):
    random.seed(seed)
    return domain.draw(lambda g: grader.generate_model_case(g, grader.GENERATED_WORLD), count)


DOMAIN_CLASSES = {
    "a parameter three or more modules deep": lambda c: any(e.path.count(".") >= 3 for e in c.entries),
    "an element of a ModuleList": lambda c: any(part.isdigit() for e in c.entries for part in e.path.split(".")),
    "a tied parameter (one Parameter, two places)": lambda c: any(e.alias for e in c.entries),
    "a frozen parameter that still holds a .grad": lambda c: any(e.state == "frozen_grad" for e in c.entries),
    "a parameter unused by forward (no .grad)": lambda c: any(e.state == "unused" for e in c.entries),
    "a frozen parameter without .grad": lambda c: any(e.state == "frozen" for e in c.entries),
    "float32 and float64 in one model": lambda c: {e.dtype for e in c.entries if e.has_grad} == {"float32",
                                                                                                  "float64"},
    "an empty parameter": lambda c: any(e.numel == 0 for e in c.entries),
    "a 4-d parameter": lambda c: any(len(e.shape) == 4 for e in c.entries),
    "five or more parameters": lambda c: len(c.entries) >= 5,
    "buffers": lambda c: len(c.buffers) >= 1,
    "weights and buffers that differ per rank": lambda c: c.differ and c.buffers,
    "a group of one rank": lambda c: c.group == "new" and len(c.members) == 1,
    "a group of some ranks, rank 0 left out": lambda c: c.group == "new" and 0 not in c.members,
    "a new group of every rank": lambda c: c.group == "new" and len(c.members) == grader.GENERATED_WORLD,
    "no group argument": lambda c: c.group == "default",
    "group=None given by keyword": lambda c: c.group == "none" and c.style == "keyword",
    "dist.group.WORLD by position": lambda c: c.group == "world" and c.style == "positional",
    "gradients about 1e6": lambda c: c.magnitude == 6,
    "gradients about 1e-6": lambda c: c.magnitude == -6,
    "a module with parameters of its own and submodules": lambda c: any(
        any(o.path.startswith(e.path.rsplit(".", 1)[0] + ".") and o.path.count(".") > e.path.count(".")
            for o in c.entries) for e in c.entries if "." in e.path),
    "a channels_last gradient": lambda c: any(e.layout == "channels_last" and e.has_grad for e in c.entries),
    "a transposed gradient": lambda c: any(e.layout == "transposed" and e.has_grad for e in c.entries),
    "submodules in eval mode": lambda c: bool(c.eval_modules),
}


@pytest.mark.parametrize("name", DOMAIN_CLASSES)
def test_the_generator_draws_each_domain_class(name):
    assert any(DOMAIN_CLASSES[name](case) for case in _drawn()), name


def test_generated_models_are_built_as_described_and_the_same_on_every_rank_unless_they_differ():
    for case in _drawn(200):
        models = [grader.build_generated(case, rank) for rank in range(grader.GENERATED_WORLD)]
        names = [n for n, _ in models[0].named_parameters()]
        assert names == [e.path for e in case.entries if e.alias is None], case
        for entry in case.entries:
            parameter = grader._find(models[0], entry.path)
            assert tuple(parameter.shape) == entry.shape and parameter.dtype == getattr(torch, entry.dtype)
            assert parameter.requires_grad == (entry.state in ("grad", "unused"))
            if entry.alias:
                assert parameter is grader._find(models[0], entry.alias)
        same = all(torch.equal(a, b) for a, b in zip(models[0].state_dict().values(), models[1].state_dict().values()))
        assert same != (case.differ and any(t.numel() for t in models[0].state_dict().values()))


def test_the_generated_expectation_is_the_mean_over_the_group_and_each_mistake_differs_somewhere():
    cases = _drawn(60)
    gradients = [grader.generated_gradients(cases, r) for r in range(grader.GENERATED_WORLD)]
    expected = grader._generated_expectation(cases, grader.GENERATED_WORLD, gradients)
    differs = dict.fromkeys(grader.GENERATED_MISTAKES, False)
    for index, case in enumerate(cases):
        for rank in range(grader.GENERATED_WORLD):
            right = grader._predicted(case, expected.own[index], rank, None, grader.GENERATED_WORLD)
            for slot, entry in enumerate(e for e in case.entries if e.alias is None):
                own = expected.own[index][rank][slot]
                assert (own is None) == (not entry.has_grad)
                if own is not None and rank in case.members:
                    mean = torch.stack([expected.own[index][r][slot] for r in case.members]).mean(0)
                    torch.testing.assert_close(right[slot], mean.to(getattr(torch, entry.dtype)).double())
            for mistake in differs:
                other = grader._predicted(case, expected.own[index], rank, mistake, grader.GENERATED_WORLD)
                differs[mistake] |= any(a is not None and not torch.allclose(a, b) for a, b in zip(other, right))
    assert all(differs.values()), differs


def _grade(tmp_path, source: str):
    import graders

    path = tmp_path / "answer.py"
    path.write_text(source)
    return graders.check_file("average_gradients", str(path), ["averages_generated_models"], device="cpu").results[0]


def test_the_generated_check_rejects_a_bug_of_a_deeper_model_and_reports_the_smallest_case(tmp_path):
    """Only the parameters of the model's direct children are averaged: today's models pass, a generated one nested
    deeper does not; the failure names the smallest such model, and no cause (no catalogued mistake fits)."""
    source = (
        "import torch.distributed as dist\n"
        "def average_gradients(model, group=None):\n"
        "    size = dist.get_world_size(group)\n"
        "    for module in [model, *model.children()]:\n"
        "        for p in module.parameters(recurse=False):\n"
        "            if p.grad is not None:\n"
        "                dist.all_reduce(p.grad, group=group)\n"
        "                p.grad /= size\n"
    )
    result = _grade(tmp_path, source)
    assert not result.passed
    assert "generated models failed; this is the smallest" in result.message
    assert "likely cause" not in result.message
    given = next(line for line in result.message.splitlines() if "input:" in line)
    parameters = given.split("model parameters:")[1]
    assert parameters.count(" float") <= 2, given  # a small model: one or two parameters
