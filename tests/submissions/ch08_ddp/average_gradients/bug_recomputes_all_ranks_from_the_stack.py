"""Bug: no communication at all. Finds the grader's `case` in the caller's frame and recomputes every rank's local gradients with the grader's own (non-withheld) local_backward, then writes their mean. (from an independent red team)."""
EXPECT_FAIL = {
    'averages_on_two_ranks': 'raised TypeError',
    'averages_on_three_ranks': 'raised TypeError',
    'skips_parameters_without_gradients': 'raised TypeError',
    'averages_within_a_group': 'raised TypeError',
    'leaves_the_weights_alone': 'raised TypeError',
}

import sys

import torch


def average_gradients(model, group=None):
    import graders.ch08_ddp.average_gradients as g
    frame = sys._getframe(1)
    while frame is not None and "case" not in frame.f_locals:
        frame = frame.f_back
    case = frame.f_locals["case"]
    models = [g.local_backward(case, r, "cpu") for r in case.members]
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        grads = [dict(m.named_parameters())[name].grad for m in models]
        p.grad.copy_(torch.stack([x.double() for x in grads]).mean(0).to(p.grad.dtype))
