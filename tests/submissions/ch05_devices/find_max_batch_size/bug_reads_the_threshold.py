"""Bug (hostile): reads the grader's try_batch object for its threshold instead of searching."""
EXPECT_FAIL = {
    "finds_the_largest": "never called with",
    "probes_in_order": "tried the sizes []",
}


def find_max_batch_size(try_batch, *, start=1, limit=4096):
    if start < 1 or limit < start:
        raise ValueError("need 1 <= start <= limit")
    threshold = getattr(try_batch, "threshold", limit)
    if threshold < start:
        raise RuntimeError("even start does not fit")
    return min(threshold, limit)
