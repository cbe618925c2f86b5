"""Bug: itertools.islice takes positions, but end (a value) is passed as the stop position: with a negative
start the last ints are lost."""
import itertools

from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"yields_the_range": "missing [-2, -1, 0, 1]"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        return itertools.islice(range(self.start, self.end), worker, max(self.end, 0), workers)
