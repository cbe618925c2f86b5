"""Correct, written differently: pushes every input and skips nodes already seen when they are popped."""
EXPECT_PASS = True

import collections
def graph_ops(t):
    counts = collections.Counter()
    stack, seen = [t.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        counts[type(node).__name__] += 1
        stack.extend(fn for fn, _ in node.next_functions)
    return counts
