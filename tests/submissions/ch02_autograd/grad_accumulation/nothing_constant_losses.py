"""Nothing trained: validates its arguments, then returns a list of zeros of the right length."""
EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad accum_steps")
    return [0.0] * (len(micro_batches) // accum_steps)
