"""Bug: the early return for a tensor without grad_fn returns {}, not an empty Counter."""
EXPECT_FAIL = {"no_grad_fn_is_empty": "return Counter() there too"}

from collections import Counter
def graph_ops(t):
    if t.grad_fn is None:
        return {}
    counts, seen, stack = Counter(), {t.grad_fn}, [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child); stack.append(child)
    return counts
