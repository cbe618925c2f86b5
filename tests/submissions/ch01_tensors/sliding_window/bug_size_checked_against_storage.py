"""Bug: compares size with the number of elements in x's storage instead of len(x)."""
EXPECT_FAIL = {"validation": "compared with something other than len(x)"}


def sliding_window(x, size, step=1):
    stored = x.untyped_storage().nbytes() // x.element_size()
    if x.dim() != 1 or size < 1 or step < 1 or size > stored:
        raise ValueError("bad arguments")
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
