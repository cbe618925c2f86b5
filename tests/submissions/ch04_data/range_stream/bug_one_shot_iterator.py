"""Bug: creates the iterator once in __init__, so a second pass over the stream gives nothing."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"fresh_pass_each_time": "used up after one pass"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end
        self.items = iter(range(start, end))

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return self.items
        return iter(range(self.start + info.id, self.end, info.num_workers))
