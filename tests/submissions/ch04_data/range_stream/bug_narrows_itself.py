"""Bug: each worker narrows its copy of the dataset (self.start, self.end) inside __iter__: right for one pass,
but with persistent workers the next pass narrows the narrowed range again."""
import math

from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"fresh_pass_each_time": "persistent_workers=True"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is not None:
            per = math.ceil((self.end - self.start) / info.num_workers)
            self.start = self.start + info.id * per
            self.end = min(self.start + per, self.end)
        return iter(range(self.start, self.end))
