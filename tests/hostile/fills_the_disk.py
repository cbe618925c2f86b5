"""Writes one enormous file into its scratch (64 GiB: it would fill the disk), then would answer correctly."""
FILLER = []

EXPECT = {"score": 0, "words": "MiB per file was reached"}


def is_contiguous(shape, strides):
    if not FILLER:
        FILLER.append(open("filler.bin", "wb"))
        # Start just under the 256 MiB limit (sparse, instant): writing the first 255 MiB took over the check's
        # 2 s on a loaded machine (make test, 2026-12-04), and the limit, not the clock, is what this attack meets.
        FILLER[0].truncate(255 << 20)
        FILLER[0].seek(255 << 20)
    block = b"\0" * (1 << 24)
    for _ in range(1 << 12):  # every later call: the first block is already too many
        FILLER[0].write(block)
    expected, step = True, 1
    for size, stride in sorted(zip(shape, strides), key=lambda p: p[1]):
        if size != 1 and stride != step:
            expected = False
        step *= size
    return expected
