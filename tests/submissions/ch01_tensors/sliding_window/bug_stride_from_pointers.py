"""Bug: measures x's stride from the addresses of x[0] and x[1], which fails for a length-1 x."""
EXPECT_FAIL = {"edge_sizes": "IndexError"}


def sliding_window(x, size, step=1):
    if x.dim() != 1 or size < 1 or step < 1 or size > len(x):
        raise ValueError("bad arguments")
    s = (x[1].data_ptr() - x[0].data_ptr()) // x.element_size()
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * s, s), x.storage_offset())
