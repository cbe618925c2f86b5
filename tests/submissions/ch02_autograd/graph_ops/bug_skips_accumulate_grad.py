"""Bug: treats the leaves' AccumulateGrad nodes as "not operations" and leaves them out."""
EXPECT_FAIL = {"small_expressions": "AccumulateGrad nodes are missing"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        if hasattr(node, "variable"):  # an AccumulateGrad node: a leaf, not an op
            continue
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
