"""Correct, written differently: a generator yields each node once (breadth-first over a deque) and the
Counter is built from the type names it yields; a subclass of Counter is returned."""
EXPECT_PASS = True

from collections import Counter, deque


class NodeCounts(Counter):
    pass


def _nodes(root):
    if root is None:
        return
    queue, met = deque([root]), {root}
    while queue:
        fn = queue.popleft()
        yield fn
        for nxt, _ in fn.next_functions:
            if nxt is None or nxt in met:
                continue
            met.add(nxt)
            queue.append(nxt)


def graph_ops(t):
    return NodeCounts(type(fn).__name__ for fn in _nodes(t.grad_fn))
