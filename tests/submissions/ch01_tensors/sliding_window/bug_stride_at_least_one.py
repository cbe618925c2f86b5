"""Bug: clamps x's stride to at least 1 (like max(size, 1) for strides), which breaks an expanded x (stride 0)."""
EXPECT_FAIL = {"edge_sizes": "x is expanded (stride 0"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    s = max(x.stride(0), 1)
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * s, s), x.storage_offset())
