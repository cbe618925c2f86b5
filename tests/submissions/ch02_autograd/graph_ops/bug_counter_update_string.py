"""Bug: Counter.update(name) with a string, which counts the letters of the name."""
EXPECT_FAIL = {"small_expressions": "counts its letters"}

from collections import Counter
def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen, stack = {t.grad_fn}, [t.grad_fn]
    while stack:
        node = stack.pop()
        counts.update(type(node).__name__)    # counts letters!
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child); stack.append(child)
    return counts
