"""Bug: written and tried with 2 workers: the shards step by 2 whatever num_workers is."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"one_worker": "step by 2 whatever the number of workers",
               "several_workers": "step by 2 whatever the number of workers"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, 2))
