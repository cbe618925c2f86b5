"""Bug: no set of seen nodes, so a node reached by two paths is counted twice."""
EXPECT_FAIL = {"shared_nodes_counted_once": "reached by two (or more) paths was counted twice"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    stack = [t.grad_fn] if t.grad_fn is not None else []
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        stack.extend(child for child, _ in node.next_functions if child is not None)
    return counts
