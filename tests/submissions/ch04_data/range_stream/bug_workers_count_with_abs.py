"""Bug: in the workers the range is split by its length taken with abs(), "to be safe". For start <= end that is
the range's length and every int comes out once; for start > end (no int in start, ..., end - 1) the workers yield
start, ..., start + (start - end) - 1. Iterated in the main process it yields nothing, as it should."""
EXPECT_FAIL = {"empty_range": "start > end"}

from torch.utils.data import IterableDataset, get_worker_info


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        count = abs(self.end - self.start)
        per = -(-count // info.num_workers)
        low = self.start + info.id * per
        return iter(range(low, min(low + per, self.start + count)))
