"""Bug: sizes the chunk with num_workers but forgets the worker id: every worker yields the first chunk."""
import math

from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "use both info.id and info.num_workers"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = math.ceil((self.end - self.start) / info.num_workers)
        return iter(range(self.start, min(self.start + per, self.end)))
