"""Bug: stops reading a node's next_functions at the first None (break instead of continue), so the
inputs after an input that does not require grad are lost."""
EXPECT_FAIL = {"inputs_without_grad_skipped": "missing Counter({'AccumulateGrad': 1})"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen, stack = {t.grad_fn}, [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is None:
                break
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
