"""Bug: None entries of next_functions (inputs that do not require grad) are counted as nodes."""
EXPECT_FAIL = {"inputs_without_grad_skipped": "None entry of next_functions was counted"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        if node is None:
            continue
        for child, _ in node.next_functions:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
