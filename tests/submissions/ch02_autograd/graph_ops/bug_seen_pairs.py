"""Bug: walks the (node, input_nr) entries of next_functions and remembers those pairs, so a node with
several outputs (unbind, split, a custom Function...) is counted once per output that is used."""
EXPECT_FAIL = {"shared_nodes_counted_once": "counted once per output"}

from collections import Counter


def graph_ops(t):
    counts = Counter()
    if t.grad_fn is None:
        return counts
    seen = set()
    stack = [(t.grad_fn, 0)]
    while stack:
        edge = stack.pop()
        if edge in seen:
            continue
        seen.add(edge)
        node = edge[0]
        counts[type(node).__name__] += 1
        for entry in node.next_functions:
            if entry[0] is not None:
                stack.append(entry)
    return counts
