"""Bug: a heuristic, "strides decrease and the last one is 1", which misses gaps and overlaps."""
EXPECT_FAIL = {"non_contiguous_layouts": "merely decrease"}


def is_contiguous(shape, strides):
    if len(shape) != len(strides):
        raise ValueError("length mismatch")
    if 0 in shape or not shape:
        return True
    kept = [st for sz, st in zip(shape, strides) if sz != 1]
    return not kept or (kept[-1] == 1 and all(a >= b for a, b in zip(kept, kept[1:])))
