"""Bug: the chunk size is computed with / (a float), which range() refuses inside the workers."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"one_worker": "'float' object cannot be interpreted as an integer",
               "several_workers": "in DataLoader worker process"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = (self.end - self.start) / info.num_workers
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))
