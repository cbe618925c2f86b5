"""Correct, written differently: keyword-only style, the layout read from x[:1], validation at the end of the
argument list via a helper."""
EXPECT_PASS = True


def _check(x, size, step):
    problems = [x.dim() != 1, size < 1, step < 1]
    if any(problems) or size > x.size(0):
        raise ValueError("sliding_window: bad arguments")


def sliding_window(x, size, step=1):
    _check(x, size, step)
    first = x[:1]
    elem = first.stride()[0]
    count = (x.size(0) - size) // step + 1
    return x.as_strided(size=(count, size), stride=(elem * step, elem), storage_offset=first.storage_offset())
