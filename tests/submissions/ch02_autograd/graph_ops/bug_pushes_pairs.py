"""Bug: pushes the (node, input_nr) pairs of next_functions instead of the nodes."""
EXPECT_FAIL = {"small_expressions": "unpack it"}

from collections import Counter
def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen, stack = {t.grad_fn}, [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child); stack.append(child)
    return counts
