"""Bug: when an item is a [sequence, label] list, stores the padded sequence back into it (item[0] = ...)."""
import torch
import torch.nn.functional as F

EXPECT_FAIL = {"does_not_modify_inputs": "changed the items of the list it was given"}


def pad_collate(batch):
    width = max(len(item[0]) for item in batch)
    lengths = torch.tensor([len(item[0]) for item in batch])
    rows = []
    for item in batch:
        row = F.pad(item[0], (0, width - len(item[0])))
        if isinstance(item, list):
            item[0] = row  # reuse the item's slot
        rows.append(row)
    return torch.stack(rows), lengths, torch.tensor([item[1] for item in batch])
