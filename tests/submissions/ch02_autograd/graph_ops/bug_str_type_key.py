"""Bug: keys by str(type(node)), which gives "<class 'MulBackward0'>" rather than the bare name."""
EXPECT_FAIL = {"small_expressions": "str(type(node)) gives", "two_layer_network": "str(type(node)) gives"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    todo, done = [t.grad_fn], {t.grad_fn}
    while todo:
        fn = todo.pop()
        counts[str(type(fn))] += 1
        for nxt, _ in fn.next_functions:
            if nxt is not None and nxt not in done:
                done.add(nxt)
                todo.append(nxt)
    return counts
