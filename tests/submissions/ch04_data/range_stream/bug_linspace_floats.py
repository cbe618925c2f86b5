"""Bug: torch.linspace makes the values, which are float32: the stream yields floats, not ints."""
import torch
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"yields_the_range": "a float tensor", "single_process_loader": "float tensor", "several_workers": "gave a float32 batch"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        values = torch.linspace(self.start, self.end - 1, self.end - self.start)
        info = get_worker_info()
        if info is not None:
            values = values[info.id::info.num_workers]
        return iter(values)
