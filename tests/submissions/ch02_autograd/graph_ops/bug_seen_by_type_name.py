"""Bug: remembers the type NAMES already seen instead of the nodes, so a second node of the same type
(a second MulBackward0, the second leaf's AccumulateGrad) is skipped with everything behind it."""
EXPECT_FAIL = {"small_expressions": "missing Counter({'AccumulateGrad': 1})", "shared_nodes_counted_once": "missing Counter("}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen_names = {type(t.grad_fn).__name__}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and type(child).__name__ not in seen_names:
                seen_names.add(type(child).__name__)
                stack.append(child)
    return counts
