"""Bug: counts t.grad_fn and its direct inputs only, not the whole graph behind them."""
EXPECT_FAIL = {"small_expressions": "missing Counter(", "unrolled_rnn": "missing Counter("}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    counts[type(t.grad_fn).__name__] += 1
    inputs = {child for child, _ in t.grad_fn.next_functions if child is not None}
    for child in inputs:
        counts[type(child).__name__] += 1
    return counts
