"""Bug: the set of seen nodes lives at module level, so nodes seen in an earlier call (a leaf's
AccumulateGrad node is shared by every graph that uses the leaf) are skipped later."""
EXPECT_FAIL = {"small_expressions": "survives from one call to the next"}

from collections import Counter
seen = set()
def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    stack = [t.grad_fn]
    seen.add(t.grad_fn)
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child); stack.append(child)
    return counts
