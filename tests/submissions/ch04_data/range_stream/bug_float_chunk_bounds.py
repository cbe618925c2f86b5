"""Bug: balanced chunks whose bounds are computed in floating point (start + id * n / num_workers is a float).
A float64 holds every int exactly only up to 2**53: for a start near 2**62 the bounds are rounded, and the workers
yield other ints than the range's. The hand-written starts (up to 3e9, 2**40) are exact in float64; generated
starts near the end of int64 are not."""
from torch.utils.data import IterableDataset, get_worker_info

EXPECT_FAIL = {"several_workers": "wrong ints with several workers", "one_worker": "wrong ints with one worker"}


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        n = self.end - self.start
        low = int(self.start + info.id * n / info.num_workers)
        high = int(self.start + (info.id + 1) * n / info.num_workers)
        return iter(range(low, high))
