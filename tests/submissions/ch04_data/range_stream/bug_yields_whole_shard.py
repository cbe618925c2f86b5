"""Bug: yields each worker's whole shard as one tensor instead of its ints one by one."""
import torch
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"yields_the_range": "a tensor of shape (5,)", "one_worker": "a tensor of shape (7,)"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        yield torch.arange(self.start + worker, self.end, workers)
