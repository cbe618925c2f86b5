"""Bug: ceil-sized chunks, but the last chunk is not clamped to end, so it runs past the range."""
import math

from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "clamp the last chunk to end"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = math.ceil((self.end - self.start) / info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, lo + per))
