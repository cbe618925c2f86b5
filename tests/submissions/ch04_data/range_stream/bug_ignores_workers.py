"""Bug: never looks at get_worker_info(), so every worker yields the whole range."""
from torch.utils.data import IterableDataset

EXPECT_FAIL = {"several_workers": "duplicated across workers", "more_workers_than_items": "get_worker_info()"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))
