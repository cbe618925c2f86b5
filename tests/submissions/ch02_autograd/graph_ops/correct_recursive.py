"""Correct, written differently: a recursive walk with a set of seen nodes (fine for graphs a few
hundred nodes deep)."""
EXPECT_PASS = True

from collections import Counter


def graph_ops(t):
    counts = Counter()
    seen = set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            visit(child)

    visit(t.grad_fn)
    return counts
