"""Bug: keys by node.name(), which says 'torch::autograd::AccumulateGrad' for the leaves' nodes."""
EXPECT_FAIL = {"small_expressions": "type(node).__name__"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[node.name()] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
