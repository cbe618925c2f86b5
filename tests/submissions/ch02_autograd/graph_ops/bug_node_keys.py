"""Bug: uses the nodes themselves as the Counter's keys (each one then counts 1)."""
EXPECT_FAIL = {"returns_counter": "the keys are the nodes themselves", "small_expressions": "the keys are the nodes themselves"}

from collections import Counter


def graph_ops(t):
    if t.grad_fn is None:
        return Counter()
    found = [t.grad_fn]
    for node in found:  # the list grows while we walk it
        for child, _ in node.next_functions:
            if child is not None and child not in found:
                found.append(child)
    return Counter(found)
