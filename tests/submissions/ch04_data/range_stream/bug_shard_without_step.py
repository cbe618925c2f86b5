"""Bug: each worker starts at start + info.id but then steps by 1, so the shards overlap."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "then steps by 1"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        offset = 0 if info is None else info.id
        return iter(range(self.start + offset, self.end))
