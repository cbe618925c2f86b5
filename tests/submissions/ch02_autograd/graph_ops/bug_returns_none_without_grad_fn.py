"""Bug: a tensor without grad_fn gives None instead of an empty Counter."""
EXPECT_FAIL = {"no_grad_fn_is_empty": "returned None on this path"}

from collections import Counter


def graph_ops(t):
    root = t.grad_fn
    if root is None:
        return None
    counts = Counter()
    seen, stack = {root}, [root]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] += 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
