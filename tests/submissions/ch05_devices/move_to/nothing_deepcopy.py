"""Does nothing: returns copy.deepcopy(obj), every tensor copied but left on its old device."""
import copy

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def move_to(obj, device, *, non_blocking=False):
    return copy.deepcopy(obj)
