"""Bug: starts from the inputs of t.grad_fn, so t.grad_fn itself is never counted."""
EXPECT_FAIL = {"small_expressions": "t.grad_fn itself was not counted"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen = set()
    stack = [child for child, _ in t.grad_fn.next_functions if child is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        counts[type(node).__name__] += 1
        stack.extend(child for child, _ in node.next_functions if child is not None)
    return counts
