"""Bug: the workers' shards stop at end - 1 (an off-by-one written only in the worker branch)."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"one_worker": "do not subtract 1 from end", "several_workers": "do not subtract 1 from end"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end - 1, info.num_workers))
