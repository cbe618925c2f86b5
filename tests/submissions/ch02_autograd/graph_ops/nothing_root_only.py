"""Nothing walked: counts t.grad_fn alone (an empty Counter without grad_fn)."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

from collections import Counter


def graph_ops(t):
    if t.grad_fn is None:
        return Counter()
    return Counter({type(t.grad_fn).__name__: 1})
