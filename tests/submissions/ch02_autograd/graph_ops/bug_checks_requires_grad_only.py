"""Bug: returns early only when t does not require grad; a leaf that requires grad has no grad_fn either."""
EXPECT_FAIL = {"no_grad_fn_is_empty": "t.grad_fn is None for a leaf"}

from collections import Counter


def graph_ops(t):
    if not t.requires_grad:
        return Counter()
    counts = Counter()
    seen, stack = {t.grad_fn}, [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
