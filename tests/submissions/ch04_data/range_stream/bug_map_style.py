"""Bug: a map-style Dataset (__len__ / __getitem__) instead of an IterableDataset."""
from torch.utils.data import Dataset

EXPECT_FAIL = {"is_an_iterable_dataset": "map-style", "several_workers": "not an IterableDataset"}


class RangeStream(Dataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __len__(self):
        return self.end - self.start

    def __getitem__(self, index):
        return self.start + index
