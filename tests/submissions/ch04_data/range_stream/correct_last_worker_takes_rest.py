"""Correct, written differently: floor-sized chunks, the last worker takes the remainder (all of it with more workers than items)."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_PASS = True


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            yield from range(self.start, self.end)
            return
        per = (self.end - self.start) // info.num_workers
        lo = self.start + info.id * per
        hi = self.end if info.id == info.num_workers - 1 else lo + per
        yield from range(lo, hi)
