"""Bug: only worker 0 yields its strided share; the other workers' condition lets nothing through."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "only worker 0's share"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            yield from range(self.start, self.end)
        elif info.id == 0:
            yield from range(self.start, self.end, info.num_workers)
