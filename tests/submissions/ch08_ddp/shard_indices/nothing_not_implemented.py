"""Does nothing: raises NotImplementedError."""

EXPECT_FAIL = {"*": ""}
EXPECT_SCORE = 0


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    raise NotImplementedError
