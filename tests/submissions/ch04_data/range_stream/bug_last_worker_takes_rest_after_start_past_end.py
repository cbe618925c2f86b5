"""Bug (catalogued as correct until 2026-12-04): floor-sized chunks, the last worker takes the remainder. Right for
start <= end, more workers than items too; for start > end the floor of a negative length makes each chunk step
backwards, and the last worker's range(lo, end) yields ints below start: RangeStream(12, 11) with 4 workers gives
[9, 10], where no int lies in 12, ..., 10."""
EXPECT_FAIL = {"empty_range": "start > end"}

from torch.utils.data import IterableDataset, get_worker_info


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
