"""Bug: caches the counts by id(t.grad_fn) in a module-level dict. Once a graph is freed, a new node can get the
same id, and the cached counts of the old graph come back (the checks' fixed graphs stay alive together, so only
graphs built and freed one after another show it)."""
EXPECT_FAIL = {"small_expressions": "wrong node counts"}

from collections import Counter

_CACHE = {}


def graph_ops(t):
    if t.grad_fn is None:
        return Counter()
    key = id(t.grad_fn)
    if key in _CACHE:
        return Counter(_CACHE[key])
    counts = Counter()
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    _CACHE[key] = counts
    return Counter(counts)
