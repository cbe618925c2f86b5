"""Bug: torch.arange(..., dtype=torch.int32): ints past 2**31 overflow."""
import torch
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"yields_the_range": "the ints overflowed", "several_workers": "the ints overflowed"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        values = torch.arange(self.start, self.end, dtype=torch.int32)
        info = get_worker_info()
        if info is not None:
            values = values[info.id::info.num_workers]
        return iter(values)
