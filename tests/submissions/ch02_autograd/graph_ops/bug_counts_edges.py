"""Bug: counts a node every time it is popped, then skips walking it again: a node with several edges
into it is counted once per edge."""
EXPECT_FAIL = {"shared_nodes_counted_once": "counted every time an edge leads to it"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    stack, visited = [t.grad_fn], set()
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        if node in visited:
            continue
        visited.add(node)
        for child, _ in node.next_functions:
            if child is not None:
                stack.append(child)
    return counts
