"""Bug: shortens the names ("MulBackward0" -> "Mul") to make them look like the operations."""
EXPECT_FAIL = {"small_expressions": "the keys are the full type names"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen, stack = {t.grad_fn}, [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__.replace("Backward0", "")] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
