"""Bug: reads info.worker_id, which WorkerInfo does not have (its field is info.id): workers raise."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"one_worker": "has no attribute 'worker_id'", "several_workers": "bug_worker_id_attribute.py, line 15, in __iter__"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.worker_id, self.end, info.num_workers))
