"""Bug: counts by the node's class itself (type(node)) instead of its name."""
EXPECT_FAIL = {"returns_counter": "the keys are node classes", "small_expressions": "the keys are node classes"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    todo, done = [t.grad_fn], {t.grad_fn}
    while todo:
        fn = todo.pop()
        counts[type(fn)] += 1
        for nxt, _ in fn.next_functions:
            if nxt is not None and nxt not in done:
                done.add(nxt)
                todo.append(nxt)
    return counts
