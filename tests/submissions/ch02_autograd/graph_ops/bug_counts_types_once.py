"""Bug: records which node types occur (count 1 each) instead of how many nodes of each type."""
EXPECT_FAIL = {"small_expressions": "each node adds 1"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] = 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
