"""Bug: __iter__ returns a list, which is iterable but not an iterator."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"yields_the_range": "must return an ITERATOR", "one_worker": "must return an ITERATOR"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return list(range(self.start, self.end))
        return list(range(self.start + info.id, self.end, info.num_workers))
