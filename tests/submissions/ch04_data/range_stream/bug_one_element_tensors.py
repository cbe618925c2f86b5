"""Bug: yields each int wrapped in a 1-element tensor, so batches come out (batch_size, 1)."""
import torch
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"yields_the_range": "not a 1-element or float tensor", "single_process_loader": "1-element"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(self.start + worker, self.end, workers):
            yield torch.tensor([i])
