"""Bug: forgets that t.grad_fn is None for a leaf or a tensor that does not require grad."""
EXPECT_FAIL = {"no_grad_fn_is_empty": "t.grad_fn is None for a leaf"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
