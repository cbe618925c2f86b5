"""Bug: 'tolerates' start > end by swapping them: RangeStream(5, 2) yields 2, 3, 4 instead of nothing."""
EXPECT_FAIL = {"empty_range": "start > end"}
from torch.utils.data import IterableDataset, get_worker_info


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = min(start, end), max(start, end)

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))
