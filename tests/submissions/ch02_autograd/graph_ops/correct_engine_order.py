"""Correct, written differently: asks the autograd engine which nodes a backward pass would run (a
pre-hook on t.grad_fn reads the execution order, then raises to stop the pass before any node runs)."""
EXPECT_PASS = True

import collections

import torch


class _Stop(Exception):
    pass


def graph_ops(t):
    if t.grad_fn is None:
        return collections.Counter()
    order = []

    def grab(grad_outputs):
        order.extend(torch._C._current_graph_task_execution_order())
        raise _Stop

    handle = t.grad_fn.register_prehook(grab)
    try:
        with torch.autograd.set_multithreading_enabled(False):
            torch.autograd.backward(t, torch.ones_like(t), retain_graph=True)
    except _Stop:
        pass
    finally:
        handle.remove()
    return collections.Counter(type(node).__name__ for node in order)
