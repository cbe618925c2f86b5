"""Bug: validates start < end in __init__, so the empty range start == end (which the spec allows) raises."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"empty_range": "ValueError", "more_workers_than_items": "ValueError"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        if not start < end:
            raise ValueError(f"empty range: start={start}, end={end}")
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(self.start + worker, self.end, workers))
