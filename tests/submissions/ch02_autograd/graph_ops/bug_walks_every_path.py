"""Bug: counts each node once, but keeps walking below nodes already seen, so it follows every path
(exponentially many in a residual network)."""
EXPECT_FAIL = {"residual_network": "follows every path"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    seen = set()

    def visit(node):
        if node is None:
            return
        if node not in seen:
            seen.add(node)
            counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            visit(child)

    visit(t.grad_fn)
    return counts
