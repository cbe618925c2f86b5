"""Bug: follows only the first input of each node (next_functions[0]), as if the graph were a chain."""
EXPECT_FAIL = {"small_expressions": "only the first entry of next_functions"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    node = t.grad_fn
    while node is not None:
        counts[type(node).__name__] += 1
        node = node.next_functions[0][0] if node.next_functions else None
    return counts
