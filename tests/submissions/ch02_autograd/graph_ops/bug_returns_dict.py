"""Bug: returns a plain dict (the counts are right, the type is not the Counter the spec asks for)."""
EXPECT_FAIL = {"returns_counter": "collections.Counter"}


def graph_ops(t):
    counts = {}
    if t.grad_fn is None:
        return counts
    seen = {t.grad_fn}
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        name = type(node).__name__
        counts[name] = counts.get(name, 0) + 1
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return counts
