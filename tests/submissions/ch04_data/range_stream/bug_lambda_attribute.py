"""Bug: keeps a lambda on the dataset (a factory of its numbers). A forked worker inherits it, so every check with
fork passes; but spawn (the default start method on macOS and Windows) and forkserver pickle the dataset for each
worker, and a lambda cannot be pickled: DataLoader(..., num_workers=2) fails at once on a laptop."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "pickled (spawn"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end
        self.numbers = lambda first, step: iter(range(first, end, step))

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return self.numbers(self.start, 1)
        return self.numbers(self.start + info.id, info.num_workers)
