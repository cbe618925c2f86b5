"""Bug: the Counter is created once at module level, so counts pile up from call to call."""
EXPECT_FAIL = {"small_expressions": "survives from one call to the next"}

from collections import Counter
counts = Counter()
def graph_ops(t):
    if t.grad_fn is None:
        return Counter()
    seen, stack = {t.grad_fn}, [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child); stack.append(child)
    return counts
