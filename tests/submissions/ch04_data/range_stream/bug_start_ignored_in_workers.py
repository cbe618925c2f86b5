"""Bug: the worker shards stride from 0 instead of from start."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "must begin at start"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(info.id, self.end, info.num_workers))
