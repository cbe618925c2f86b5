"""Bug: a plain class with __iter__, not a subclass of IterableDataset: a DataLoader takes it for map-style."""
from torch.utils.data import get_worker_info

EXPECT_FAIL = {"is_an_iterable_dataset": "subclass torch.utils.data.IterableDataset",
               "one_worker": "not an IterableDataset"}


class RangeStream:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(self.start + worker, self.end, workers))
