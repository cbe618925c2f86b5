"""Fills its scratch folder with files of 200 MiB each, below the limit of one file, until it would fill the disk
(64 GiB): with fallocate, which takes the space without writing it (gigabytes in milliseconds), else by writing."""
import ctypes
import os

# One check: the others would only repeat it.
EXPECT = {"score": 0, "words": "MiB into its scratch folder", "checks": ["contiguous_layouts"], "timeout": 20}


def is_contiguous(shape, strides):
    libc = ctypes.CDLL(None, use_errno=True)
    for number in range(320):
        fd = os.open(f"part{number}.bin", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            if libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(200 << 20)) != 0:
                os.posix_fallocate(fd, 0, 200 << 20)  # refused: glibc writes the blocks instead
        finally:
            os.close(fd)
    return True
