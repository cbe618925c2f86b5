"""BUG: when start does not fit, raises RuntimeError without first calling empty_cache"""
EXPECT_FAIL = {"releases_the_error": "returned or raised"}

import torch


def find_max_batch_size(try_batch, *, start=1, limit=4096) -> int:
    if start < 1:  #STARTCHECK
        raise ValueError("start must be >= 1")
    if limit < start:  #LIMITCHECK
        raise ValueError("limit must be >= start")

    def fits(b):
        oom = False
        try:
            try_batch(b)
        except torch.OutOfMemoryError:  #EXCEPT
            oom = True  #HANDLER
        if oom:
            if torch.cuda.is_available():  #AVAIL
                torch.cuda.empty_cache()
            return False
        return True

    oom = False
    try:
        try_batch(start)
    except torch.OutOfMemoryError:
        oom = True
    if oom:
        raise RuntimeError(f"even batch size {start} does not fit")  #STARTFAIL
    lo = start
    if lo == limit:  #EQ
        return limit
    b = start
    while True:
        b = min(b * 2, limit)  #DOUBLE
        if fits(b):
            lo = b
            if b == limit:
                return limit
        else:
            hi = b
            break
    while hi - lo > 1:
        mid = (lo + hi) // 2  #MID
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
