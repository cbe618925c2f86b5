"""Bug: stops after 1000 nodes "to be safe against cycles" (a backward graph has none), so a bigger graph is
under-counted."""
EXPECT_FAIL = {"unrolled_rnn": "side by side"}
from collections import Counter

def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen, stack = {t.grad_fn}, [t.grad_fn]
    while stack and sum(counts.values()) < 1000:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt); stack.append(nxt)
    return counts
