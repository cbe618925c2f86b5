"""Bug: torch.linspace(...).long(): the values pass through float32, which rounds ints past 2**24."""
import torch
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"yields_the_range": "went through float32", "single_process_loader": "went through float32"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        values = torch.linspace(self.start, self.end - 1, self.end - self.start).long()
        info = get_worker_info()
        if info is not None:
            values = values[info.id::info.num_workers]
        return iter(values)
