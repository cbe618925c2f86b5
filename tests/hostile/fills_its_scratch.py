"""Fills its scratch folder with files of 16 MiB each, far below the limit of one file, until it would fill the
disk (64 GiB)."""
EXPECT = {"score": 0, "words": "MiB into its scratch folder", "checks": ["contiguous_layouts"], "timeout": 20}


def is_contiguous(shape, strides):
    block = b"\1" * (1 << 24)
    for number in range(4096):
        with open(f"part{number}.bin", "wb") as f:
            f.write(block)
    return True
