"""Where chapter 04's images come from: FashionMNIST, or a stand-in drawn on the spot when there is no network.

The chapter needs a small image classification data set that works everywhere, offline too, the course's
tests included (they never download). :func:`choose_image_source` decides, in this order:

1. a FashionMNIST copy already on disk under ``root`` (``$COURSE_DATA``, default ``~/.cache/pytorch-course/data``)
   is used as it is: ``download=False`` only reads the folder and never touches the network;
2. otherwise FashionMNIST is downloaded into ``root`` (it stays there for next time), unless offline
   (``COURSE_OFFLINE=1``) is asked for;
3. otherwise, or when the download fails (it prints the reason: the error's last line), small grey shapes are
   drawn (:func:`draw_shapes`) as PNG files in a temporary folder and read back with ``ImageFolder``.

The result, an :class:`ImageSource`, builds the chosen dataset with whatever transform it is given, so a
notebook can make several versions of the same images (floats, bytes, augmented).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import random
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

DATA_ENV = "COURSE_DATA"
OFFLINE_ENV = "COURSE_OFFLINE"
DEFAULT_DATA_ROOT = "~/.cache/pytorch-course/data"

SHAPES = ["circle", "square", "triangle", "cross", "ring", "stripes"]
"""The stand-in's classes, one folder each (``ImageFolder`` sorts them: its class index is the sorted position)."""

IMAGE_SIZE = 28
"""The stand-in's images are IMAGE_SIZE × IMAGE_SIZE and grey, like FashionMNIST's."""


def data_root() -> Path:
    """The folder that holds downloaded data sets: ``$COURSE_DATA``, else ``~/.cache/pytorch-course/data``."""
    return Path(os.environ.get(DATA_ENV, DEFAULT_DATA_ROOT)).expanduser()


def offline_requested() -> bool:
    """True when ``COURSE_OFFLINE=1``: the course's tests and CI set it, and then nothing is downloaded."""
    return os.environ.get(OFFLINE_ENV) == "1"


def draw_shape(kind: str, rng: random.Random):
    """One grey 28×28 PIL image (mode ``"L"``) of a shape of the given ``kind`` (one of :data:`SHAPES`), at a
    place, size and brightness drawn from ``rng``; the background is black (0), the ink 140 to 255."""
    from PIL import Image, ImageDraw

    image = Image.new("L", (IMAGE_SIZE, IMAGE_SIZE), 0)
    pen = ImageDraw.Draw(image)
    x, y, r = rng.uniform(10, 18), rng.uniform(10, 18), rng.uniform(5, 9)
    ink = rng.randint(140, 255)
    if kind == "circle":
        pen.ellipse([x - r, y - r, x + r, y + r], fill=ink)
    elif kind == "square":
        pen.rectangle([x - r, y - r, x + r, y + r], fill=ink)
    elif kind == "triangle":
        pen.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=ink)
    elif kind == "cross":
        pen.line([x - r, y, x + r, y], fill=ink, width=3)
        pen.line([x, y - r, x, y + r], fill=ink, width=3)
    elif kind == "ring":
        pen.ellipse([x - r, y - r, x + r, y + r], outline=ink, width=2)
    elif kind == "stripes":
        for row in range(int(y - r), int(y + r), 4):
            pen.line([x - r, row, x + r, row], fill=ink, width=2)
    else:
        raise ValueError(f"unknown shape {kind!r}: choose one of {', '.join(SHAPES)}")
    return image


def draw_shapes(root: str | Path, per_class: int, seed: int = 0) -> Path:
    """Write ``per_class`` PNG files for every shape into ``root/<shape>/NNN.png``, the layout ``ImageFolder``
    reads (one folder per class). The same ``seed`` draws the same images. Returns ``root``."""
    root = Path(root)
    rng = random.Random(seed)
    for kind in SHAPES:
        (root / kind).mkdir(parents=True, exist_ok=True)
        for k in range(per_class):
            draw_shape(kind, rng).save(root / kind / f"{k:03d}.png")
    return root


class ImageSource:
    """The chosen image data set, as a recipe: ``source(transform=...)`` builds it with that transform.

    ``kind`` is ``"FashionMNIST"`` or ``"shapes"``; ``description`` says in words where the images come from;
    ``root`` is the folder they are read from. For the stand-in, the temporary folder lives as long as this
    object (normally: as long as the notebook's kernel).
    """

    def __init__(self, kind: str, description: str, root: Path, build: Callable,
                 scratch: tempfile.TemporaryDirectory | None = None):
        self.kind, self.description, self.root = kind, description, root
        self._build, self._scratch = build, scratch

    def __call__(self, transform: Callable | None = None):
        return self._build(transform=transform)

    def cleanup(self) -> None:
        """Remove the stand-in's temporary folder now (a copy on disk is left alone). A kernel that is killed (as
        nbval and nbgrader validate end theirs) never runs the object's finalizer, so a chapter calls this at its
        end."""
        if self._scratch is not None:
            self._scratch.cleanup()

    def __repr__(self) -> str:
        return f"ImageSource({self.description})"


def _fashion_mnist(root: Path) -> Callable:
    from torchvision import datasets

    return functools.partial(datasets.FashionMNIST, root, train=True)


def _download_fashion_mnist(root: Path, timeout: float) -> None:
    """Download FashionMNIST's training files into ``root``; raises whatever went wrong. A blocked network
    fails after ``timeout`` seconds instead of hanging; the progress bar (written to stderr) is not shown."""
    from torchvision import datasets

    default_timeout = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            datasets.FashionMNIST(root, train=True, download=True)
    finally:
        socket.setdefaulttimeout(default_timeout)


def _last_line(error: BaseException, limit: int = 160) -> str:
    """The last line of an error's message: for a failed download it says why (e.g. 'Name or service not
    known'), where the first lines only list the mirrors that were tried."""
    return (str(error).strip().splitlines() or [""])[-1][:limit]


def choose_image_source(root: str | Path | None = None, *, offline: bool | None = None, per_class: int = 100,
                        seed: int = 0, timeout: float = 20.0) -> ImageSource:
    """FashionMNIST from disk, else downloaded (unless ``offline``), else the drawn stand-in; see the module's
    docstring for the order. ``root`` defaults to :func:`data_root`, ``offline`` to :func:`offline_requested`;
    ``per_class`` and ``seed`` shape the stand-in (100 images of each of the 6 shapes by default).

    Prints one line when it downloads, and one more when the download fails (the error's type and last line),
    then falls back to the stand-in. Never raises for a missing data set or a failed download.
    """
    from torchvision import datasets

    root = data_root() if root is None else Path(root).expanduser()
    offline = offline_requested() if offline is None else offline
    try:
        datasets.FashionMNIST(root, train=True, download=False)   # only looks on disk
        return ImageSource("FashionMNIST", "FashionMNIST (a copy on disk)", root, _fashion_mnist(root))
    except RuntimeError:                                           # "Dataset not found"
        pass
    if not offline:
        print(f"downloading FashionMNIST into {root} ...")
        try:
            _download_fashion_mnist(root, timeout)
            return ImageSource("FashionMNIST", "FashionMNIST (downloaded)", root, _fashion_mnist(root))
        except Exception as error:                                 # no network, a proxy, a full disk, ...
            print(f"the download failed ({type(error).__name__}: {_last_line(error)}); using the offline stand-in")
    scratch = tempfile.TemporaryDirectory(prefix="course-04-")    # removed with this object
    shapes_root = draw_shapes(Path(scratch.name) / "shapes", per_class=per_class, seed=seed)
    return ImageSource("shapes", "generated shapes, read with ImageFolder (offline stand-in: FashionMNIST was not loaded)",
                       shapes_root, functools.partial(datasets.ImageFolder, shapes_root), scratch)
