"""Chapter 04's choice of images (coursekit.data_sources): a copy on disk, a download, or the drawn stand-in.

No test here downloads: the network is cut off for every test (a connection attempt fails the test), and the
download itself is replaced wherever one is expected.
"""

from __future__ import annotations

import socket
import struct

import pytest
from torchvision import datasets

from coursekit import data_sources
from coursekit.data_sources import SHAPES, choose_image_source, draw_shape, draw_shapes


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any connection or name lookup fails the test at once."""
    def refuse(*args, **kwargs):
        raise AssertionError("a test of data_sources tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture
def no_download(monkeypatch):
    """FashionMNIST.download raises: the choice must never call it."""
    def refuse(self):
        raise AssertionError("FashionMNIST.download was called")

    monkeypatch.setattr(datasets.FashionMNIST, "download", refuse)


def _write_idx(path, kind: int, shape: tuple[int, ...], payload: bytes) -> None:
    """A file in the IDX format torchvision's MNIST readers parse: magic (0, 0, 8 = uint8, number of dims),
    each dim as a big-endian int32, then the bytes."""
    path.write_bytes(bytes([0, 0, 8, kind]) + b"".join(struct.pack(">i", n) for n in shape) + payload)


def _fake_fashion_mnist(root, images: int = 5) -> None:
    """The four files FashionMNIST checks for, as tiny valid IDX files (image k is filled with the value k)."""
    raw = root / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for split in ("train", "t10k"):
        _write_idx(raw / f"{split}-images-idx3-ubyte", 3, (images, 28, 28),
                   b"".join(bytes([k]) * 28 * 28 for k in range(images)))
        _write_idx(raw / f"{split}-labels-idx1-ubyte", 1, (images,), bytes(k % 10 for k in range(images)))


def test_draw_shape_is_a_small_grey_image_and_repeats_with_its_seed():
    import random

    first = [draw_shape(kind, random.Random(3)) for kind in SHAPES]
    again = [draw_shape(kind, random.Random(3)) for kind in SHAPES]
    for kind, image, same in zip(SHAPES, first, again):
        assert image.mode == "L" and image.size == (28, 28), kind
        assert image.getextrema()[1] >= 140, f"{kind}: no ink"
        assert image.tobytes() == same.tobytes(), f"{kind}: the same seed drew a different image"
    with pytest.raises(ValueError, match="unknown shape"):
        draw_shape("hexagon", random.Random(0))


def test_draw_shapes_writes_the_imagefolder_layout(tmp_path):
    root = draw_shapes(tmp_path / "shapes", per_class=3)
    assert sorted(p.name for p in root.iterdir()) == sorted(SHAPES)
    assert all(len(list((root / kind).glob("*.png"))) == 3 for kind in SHAPES)


def test_offline_gives_the_drawn_stand_in_and_never_downloads(tmp_path, monkeypatch, no_download, capsys):
    monkeypatch.setenv("COURSE_OFFLINE", "1")
    monkeypatch.setenv("COURSE_DATA", str(tmp_path / "empty"))
    source = choose_image_source(per_class=4)
    assert source.kind == "shapes"
    assert "offline stand-in" in source.description
    assert capsys.readouterr().out == "", "offline, nothing is downloaded, so nothing is said"
    dataset = source()
    assert isinstance(dataset, datasets.ImageFolder)
    assert dataset.classes == sorted(SHAPES)
    assert len(dataset) == 4 * len(SHAPES)
    image, label = dataset[0]
    assert image.size == (28, 28) and 0 <= label < len(SHAPES)
    assert image.mode == "RGB", "ImageFolder's loader opens every file as RGB (the chapter's transforms make it grey)"


def test_each_call_builds_the_dataset_with_its_own_transform(tmp_path):
    source = choose_image_source(tmp_path, offline=True, per_class=2)
    grey = source(transform=lambda image: image.convert("L"))
    plain = source()
    assert grey[0][0].mode == "L" and plain[0][0].mode == "RGB"
    assert plain.transform is None and grey is not plain


def test_the_stand_in_folder_lives_as_long_as_the_source(tmp_path):
    source = choose_image_source(tmp_path, offline=True, per_class=1)
    folder = source.root
    assert folder.is_dir()
    del source
    import gc

    gc.collect()
    assert not folder.exists(), "the temporary folder outlived its ImageSource"


def test_cleanup_removes_the_stand_in_folder_at_once_and_leaves_a_copy_on_disk(tmp_path):
    source = choose_image_source(tmp_path / "nothing here", offline=True, per_class=1)
    assert source.kind == "shapes" and source.root.is_dir()
    source.cleanup()
    assert not source.root.exists()
    _fake_fashion_mnist(tmp_path)
    on_disk = choose_image_source(tmp_path, offline=True)
    on_disk.cleanup()
    assert on_disk.kind == "FashionMNIST" and len(list((tmp_path / "FashionMNIST" / "raw").iterdir())) == 4


def test_a_copy_on_disk_is_used_without_downloading(tmp_path, no_download, capsys):
    _fake_fashion_mnist(tmp_path)
    for offline in (True, False):  # online too: a copy on disk is never downloaded again
        source = choose_image_source(tmp_path, offline=offline)
        assert (source.kind, source.description) == ("FashionMNIST", "FashionMNIST (a copy on disk)")
        dataset = source()
        assert isinstance(dataset, datasets.FashionMNIST)
        assert len(dataset) == 5
        image, label = dataset[3]
        assert image.size == (28, 28) and image.getextrema() == (3, 3) and label == 3
    assert capsys.readouterr().out == ""


def test_the_default_root_follows_course_data(tmp_path, monkeypatch, no_download):
    _fake_fashion_mnist(tmp_path)
    monkeypatch.setenv("COURSE_DATA", str(tmp_path))
    monkeypatch.delenv("COURSE_OFFLINE", raising=False)
    assert data_sources.data_root() == tmp_path
    assert choose_image_source().kind == "FashionMNIST"


def test_a_successful_download_is_used(tmp_path, monkeypatch, capsys):
    def download(self):
        _fake_fashion_mnist(tmp_path)  # what a download leaves behind

    monkeypatch.setattr(datasets.FashionMNIST, "download", download)
    source = choose_image_source(tmp_path, offline=False)
    assert (source.kind, source.description) == ("FashionMNIST", "FashionMNIST (downloaded)")
    assert len(source()) == 5
    assert capsys.readouterr().out == f"downloading FashionMNIST into {tmp_path} ...\n"


def test_a_failed_download_falls_back_and_says_why(tmp_path, monkeypatch, capsys):
    timeouts = []

    def download(self):
        timeouts.append(socket.getdefaulttimeout())
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz:\n"
                           "Tried https://mirror-a/, got:\n<urlopen error [Errno -2] Name or service not known>")

    monkeypatch.setattr(datasets.FashionMNIST, "download", download)
    before = socket.getdefaulttimeout()
    source = choose_image_source(tmp_path, offline=False, per_class=2, timeout=7)
    assert source.kind == "shapes" and source().classes == sorted(SHAPES)
    assert timeouts == [7], "the download runs with a time limit, so a blocked network fails instead of hanging"
    assert socket.getdefaulttimeout() == before, "the default timeout is put back"
    assert capsys.readouterr().out.splitlines() == [
        f"downloading FashionMNIST into {tmp_path} ...",
        "the download failed (RuntimeError: <urlopen error [Errno -2] Name or service not known>); "
        "using the offline stand-in",
    ]
