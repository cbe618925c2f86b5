"""Bug: contiguous chunks of (end - start) // num_workers: the remainder is never yielded."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "drop the remainder", "more_workers_than_items": "nothing came out of the worker processes"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = (self.end - self.start) // info.num_workers
        lo = self.start + info.id * per
        return iter(range(lo, lo + per))
