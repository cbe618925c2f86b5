"""Nothing done: returns an empty list."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    return []
