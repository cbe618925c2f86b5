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
