"""Nothing done: always an empty Counter (right only for tensors without grad_fn)."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0

from collections import Counter


def graph_ops(t):
    return Counter()
