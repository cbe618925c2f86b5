"""Bug: the dataset is its own iterator, but its counter is set in __init__, not reset in __iter__: a second
pass over the same stream yields nothing."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"fresh_pass_each_time": "used up after one pass"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end
        self.step = 1
        self.current = start

    def __iter__(self):
        info = get_worker_info()
        if info is not None and self.step == 1:
            self.current, self.step = self.start + info.id, info.num_workers
        return self

    def __next__(self):
        if self.current >= self.end:
            raise StopIteration
        value = self.current
        self.current += self.step
        return value
