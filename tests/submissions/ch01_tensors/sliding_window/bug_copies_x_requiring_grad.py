"""Bug: "to keep autograd out of it", an x that requires grad is replaced by a detached clone first, so the
windows of such an x are a copy, not a view of x (no hand-written x requires grad; generated ones do)."""
EXPECT_FAIL = {"random_layouts_and_dtypes": "that requires grad, size="}


def sliding_window(x, size, step=1):
    if x.dim() != 1:
        raise ValueError("x must be 1-D")
    if size < 1 or step < 1 or size > len(x):
        raise ValueError("size and step must be at least 1 and size at most len(x)")
    if x.requires_grad:
        x = x.detach().clone()
    rows = (len(x) - size) // step + 1
    return x.as_strided((rows, size), (step * x.stride(0), x.stride(0)), x.storage_offset())
