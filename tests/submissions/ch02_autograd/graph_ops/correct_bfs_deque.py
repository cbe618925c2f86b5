"""Correct, written differently: breadth-first with a deque, seen nodes kept in a dict keyed by id()
(the dict holds the nodes too, so no id is reused while walking)."""
EXPECT_PASS = True

import collections


def graph_ops(t):
    result = collections.Counter()
    if t.grad_fn is None:
        return result
    seen = {id(t.grad_fn): t.grad_fn}
    queue = collections.deque([t.grad_fn])
    while queue:
        node = queue.popleft()
        result.update([type(node).__name__])
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                seen[id(child)] = child
                queue.append(child)
    return result
