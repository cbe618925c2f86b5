"""Bug: calls get_worker_info() in __init__ (the main process, where it is None): workers never shard."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "inside __iter__"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end
        info = get_worker_info()
        self.worker, self.workers = (0, 1) if info is None else (info.id, info.num_workers)

    def __iter__(self):
        return iter(range(self.start + self.worker, self.end, self.workers))
