# %% [markdown]
# # 04 · Datasets and DataLoader
#
# *Expected time: about 3 h 30 min — 2 h 15 min to read and run the cells, 1 h 15 min for the exercises
# (an estimate from the chapter's length; take the time it takes).*
#
# A training loop sees data only through one line — `for inputs, targets in loader:` — and that line
# hides a small machine: something decides the order of the items, something fetches each item and
# turns it into tensors, something glues items into a batch, and possibly several extra processes do
# all of it in parallel. When a part of that machine is wrong, nothing crashes: the model trains on
# duplicated items, on a data order you can never reproduce, or on images in the wrong range, and the
# only symptom is a worse curve.
#
# The chapter has two parts. **Part I, data** (sections 1–6), is about that machine. In it you will
# 1. write a map-style dataset (`__len__` and `__getitem__`), use `TensorDataset`, and meet iterable datasets;
# 2. load real images through torchvision — FashionMNIST, or an offline stand-in the notebook draws
#    itself — transform them with `transforms.v2`, look at a batch, normalize with statistics of the
#    training split only, and give training and validation their own transforms;
# 3. follow an index from the sampler to the batch: samplers, batch samplers, default collation,
#    `drop_last`, and the collation error that variable-length data causes;
# 4. load in worker processes: how they start (fork or spawn) and where their code must live, what each
#    worker gets, items duplicated by an iterable dataset, shuffling and random augmentation made
#    reproducible — and what else, beyond seeds, decides whether a run repeats bit for bit;
# 5. measure loader throughput against `num_workers` on this machine, and see what `prefetch_factor`,
#    `persistent_workers` and `pin_memory` do;
# 6. push one batch through the whole pipeline before a long run.
#
# **Part II, the learning rate** (section 7), is a second topic that needs the data of Part I: what an
# optimizer keeps (`param_groups`, `state_dict()`), and the learning-rate range test built on it.
#
# Three graded exercises close the chapter: `pad_collate` and `range_stream` (Part I) and `lr_range_test`
# (Part II). Between the sections, short "predict, then run" prompts ask you to guess a result before the
# code shows it: replace the `...` with your guess and run the cell (they are not graded).

# %% nbgrader=readonly id=opening
import collections
import contextlib
import copy
import functools
import io
import math
import multiprocessing
import os
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler,
                              SequentialSampler, Subset, TensorDataset, WeightedRandomSampler, default_collate,
                              get_worker_info, random_split)

from coursekit import determinism_settings, run_record, seed_everything, set_deterministic, start_chapter
from coursekit.claims import over, under
from coursekit.data_sources import choose_image_source
from coursekit.plots import plot_bars, plot_curves, plot_histograms, show_image_grid
from coursekit.practice import predict, uses_your_answer
from graders import check

device = start_chapter("04_data")

# %% [markdown]
# # Part I · Data
#
# ## 1. Datasets
#
# ### Map-style: `__len__` and `__getitem__`
#
# A **map-style** dataset is anything that can say how many items it has and hand over item `i`:
# `len(dataset)` and `dataset[i]`. That is the whole contract. The `DataLoader` never looks inside:
# it picks indices, asks for those items, and glues them together. Subclassing
# `torch.utils.data.Dataset` documents the intent (and adds `dataset_a + dataset_b`), but even a plain
# Python list qualifies.
#
# Below, 2-D points labelled 1 inside the unit circle and 0 outside. The random numbers are drawn once,
# on the CPU, from a seeded generator: datasets live on the CPU, and batches move to the device later.

# %%
class Circles(Dataset):
    """n points in the square [-2, 2]²; label 1 inside the unit circle, 0 outside."""

    def __init__(self, n, seed=0):
        generator = torch.Generator().manual_seed(seed)
        self.points = torch.rand(n, 2, generator=generator) * 4 - 2
        self.labels = (self.points.norm(dim=1) < 1).long()

    def __len__(self):
        return len(self.points)

    def __getitem__(self, i):
        return self.points[i], int(self.labels[i])  # one item: (a tensor, a Python int)


circles = Circles(10)
print("len(circles) =", len(circles))
print("circles[3]   =", circles[3])
for points, labels in DataLoader(circles, batch_size=4):
    print(f"batch: points {tuple(points.shape)} {points.dtype} | labels {labels.tolist()} ({labels.dtype})")

# %% [markdown]
# Three things to notice: each item was a `(tensor, int)` pair, and each batch is a pair too — the
# points stacked into one `(4, 2)` tensor, the ints turned into one int64 tensor. And 10 items in
# batches of 4 leave a last batch of 2 (section 3 comes back to that).
#
# When the data already sits in tensors, `TensorDataset` is the whole class above in one line: item
# `i` is the tuple of row `i` of every tensor. It checks that the tensors agree on their first dim —
# a cheap guard against features and labels that do not belong together.

# %%
pairs = TensorDataset(circles.points, circles.labels)
print("pairs[3] =", pairs[3])
try:
    TensorDataset(circles.points, circles.labels[:-1])
except AssertionError as error:
    print("AssertionError:", error)

# %% [markdown]
# **Predict, then run.** `Dataset` defines `+`: `circles + Circles(5)` is one dataset made of both
# (a `ConcatDataset`). How many items does it have? Replace the `...` with your guess and run the cell.

# %%
guess = ...   # your prediction: an int
predict("04.concat_len", guess, len(circles + Circles(5)),
        why="a ConcatDataset's length is the sum of its parts' lengths: 10 + 5")

# %% [markdown]
# ### Iterable datasets: a stream
#
# Some data has no "item `i`": lines read from a huge file, records from a database cursor, samples
# generated on the fly. An `IterableDataset` only defines `__iter__` and hands its items over one after
# another. The `DataLoader` then cannot choose the order — there is nothing to index — so it refuses
# `shuffle=True`, and `len()` is not defined unless you write `__len__` yourself.

# %%
LINES = [f"log line {k}" for k in range(7)]


class LineStream(IterableDataset):
    """The lines of a text, one after the other (think: a file too big to index)."""

    def __init__(self, lines):
        self.lines = lines

    def __iter__(self):
        yield from self.lines


stream = LineStream(LINES)
for batch in DataLoader(stream, batch_size=3):
    print(batch)
try:
    len(stream)
except TypeError as error:
    print("len(stream) -> TypeError:", error)
try:
    DataLoader(stream, shuffle=True)
except ValueError as error:
    print("shuffle=True -> ValueError:", str(error).split(",")[0])

# %% [markdown]
# Strings collate into a plain list (there is no string tensor). Choosing between the two kinds:
#
# | | map-style (`Dataset`) | iterable (`IterableDataset`) |
# |---|---|---|
# | defines | `__len__`, `__getitem__(i)` | `__iter__` |
# | random access, `shuffle=True`, samplers | yes | no: the stream's order, or shuffle it yourself |
# | with worker processes | the loader shares out the *indices* | every worker runs `__iter__` on its own copy — section 4 |
# | fits | files on disk, tensors in memory | streams, shards, data generated on the fly |

# %% [markdown]
# ## 2. Real images through torchvision
#
# ### Transforms
#
# torchvision's datasets return what is stored — a PIL image, a class index — and run a `transform`
# on the image on its way out. `torchvision.transforms.v2` builds that function from steps:
#
# * `v2.ToImage()` turns a PIL image (or a NumPy array) into a `(C, H, W)` **uint8** tensor;
# * `v2.ToDtype(torch.float32, scale=True)` makes it float **and** divides by 255, so pixels lie in
#   `[0, 1]` (without `scale=True` you get floats from 0 to 255);
# * `v2.Grayscale(1)` makes one channel, whatever the file held;
# * random augmentations (`v2.RandomAffine`, `v2.RandomHorizontalFlip`, ...) draw new random numbers on
#   every call, so each epoch sees slightly different images.

# %%
from torchvision.transforms import v2   # imported here: no exercise needs torchvision, and it costs 1 s to import

to_float = v2.Compose([v2.ToImage(), v2.Grayscale(1), v2.ToDtype(torch.float32, scale=True)])
augment = v2.Compose([v2.ToImage(), v2.Grayscale(1),
                      v2.RandomAffine(degrees=20, translate=(0.1, 0.1), scale=(0.8, 1.1)),
                      v2.ToDtype(torch.float32, scale=True)])

# %% [markdown]
# ### FashionMNIST, or an offline stand-in
#
# FashionMNIST is 70,000 grey 28×28 pictures of clothes in 10 classes. torchvision fetches it with one
# argument, `download=True`, into a folder of your choice (about 30 MB). This notebook must also run
# with no network — in the course's tests, on a train — so it decides where its images come from:
#
# 1. a FashionMNIST copy already on disk under `COURSE_DATA` (default `~/.cache/pytorch-course/data`)
#    is used as it is: `download=False` only reads the folder, it never touches the network;
# 2. otherwise it downloads, as torchvision users expect, and the copy stays on disk for next time —
#    unless the environment variable `COURSE_OFFLINE=1` says not to (the course's tests and CI set it:
#    they never download);
# 3. otherwise — or if the download fails (no network: it says so and why) — it draws its own data set:
#    small grey shapes (circles, squares, rings, ...), written as PNG files into a temporary folder and
#    read back with `ImageFolder`, torchvision's dataset for "one folder per class" image collections.
#
# `ImageFolder(root)` expects `root/<class name>/<any name>.png`; it sorts the folder names, and a
# class's index is its position in that sorted list. It opens every file as an RGB image, which is why
# the transforms above include `v2.Grayscale(1)`.
#
# The rest of the chapter works with either source. (With FashionMNIST the printed numbers below differ
# from the ones shown here, which were made with the stand-in.) The choice itself is plumbing, not the
# lesson, so it lives in the course's module `coursekit/data_sources.py` — open it to see the three cases
# in code and how the shapes are drawn. `choose_image_source()` returns a recipe, `image_dataset`:
# `image_dataset(transform=...)` builds the chosen dataset with that transform, and the chapter calls it
# several times, with different transforms.

# %%
image_dataset = choose_image_source()
source = image_dataset.description
images_plain = image_dataset(transform=to_float)
classes = images_plain.classes
print(f"data source: {source}")
print(f"{len(images_plain)} images, {len(classes)} classes: {', '.join(classes)}")
image, label = images_plain[0]
print(f"one item: image {tuple(image.shape)} {image.dtype} in [{image.min():.1f}, {image.max():.1f}], label {label} ({classes[label]})")

# %% [markdown]
# ### Look at a batch
#
# Before anything else, look at what the loader really delivers: one shuffled batch, drawn as a grid,
# each picture titled with its label. Wrong labels, black images, or everything the same class are
# visible here in a second.

# %%
look = DataLoader(images_plain, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(0))
images, labels = next(iter(look))
print("images", tuple(images.shape), images.dtype, "| labels", labels.tolist())
show_image_grid(images, [classes[k] for k in labels], columns=8, title="one shuffled batch")

# %% [markdown]
# The grid draws every image on the same fixed scale, 0 (black) to 1 (white), the range the model is
# meant to get, and writes each image's own smallest and largest value under it. That is what makes the
# next trap visible at all.
#
# ### Trap: pixels converted to float without scaling
#
# `v2.ToDtype(torch.float32, scale=True)` divides by 255; forget `scale=True` and the values become
# floats between 0 and 255. Nothing raises: the model just gets inputs 255 times too large. Drawn on the
# model's scale, almost every inked pixel is past white — and the ranges under the images say why:

# %%
unscaled = image_dataset(transform=v2.Compose([v2.ToImage(), v2.Grayscale(1), v2.ToDtype(torch.float32)]))
raw = torch.stack([unscaled[k][0] for k in range(8)])
print("without scale=True:", raw.dtype, f"values from {raw.min().item():.0f} to {raw.max().item():.0f}")
show_image_grid(raw, columns=8, title="ToDtype(float32) without scale=True: anything above 1 is drawn white")

# %% [markdown]
# And what augmentation does: the same picture through `augment` eight times. Each call draws a new
# rotation, shift and scale.

# %%
images_augmented = image_dataset(transform=augment)
torch.manual_seed(0)
views = torch.stack([images_augmented[0][0] for _ in range(8)])
show_image_grid(views, columns=8, title=f"item 0 ({classes[images_augmented[0][1]]}) through augment, 8 times")

# %% [markdown]
# ### Normalize with statistics of the training split
#
# Networks train best on inputs centred near 0 with a spread near 1; pixels in `[0, 1]` are not. The
# usual last step of an image transform is `v2.Normalize(mean, std)`, which computes `(x - mean) / std`
# per channel with numbers **you** give it. Where they come from matters:
#
# * from the **training split only** — the right way. The validation images stand in for data the model
#   has never seen, so nothing about them, not even their average brightness, may shape the pipeline.
#   So: split first, then measure;
# * from **all the data**, validation included — a leak: validation numbers enter the transform;
# * **borrowed**, e.g. ImageNet's famous `mean=(0.485, 0.456, 0.406)`, `std=(0.229, 0.224, 0.225)` — the
#   statistics of colour photos, here copied onto grey images (its first channel's 0.485 and 0.229).
#
# `random_split` with a seeded generator draws the split; splitting `range(n)` gives the indices alone.
# (With FashionMNIST the cell measures 2400 of its 48,000 training images: plenty for two numbers.)

# %%
train_split, valid_split = random_split(range(len(images_plain)), [0.8, 0.2],
                                        generator=torch.Generator().manual_seed(0))
train_pixels = torch.stack([images_plain[i][0] for i in train_split.indices[:2400]])
valid_pixels = torch.stack([images_plain[i][0] for i in valid_split.indices[:600]])
print(f"split: {len(train_split)} training and {len(valid_split)} validation images")

train_mean, train_std = train_pixels.mean().item(), train_pixels.std().item()
all_pixels = torch.cat([train_pixels, valid_pixels])
statistics = {"training split": (train_mean, train_std),
              "all images (leak)": (all_pixels.mean().item(), all_pixels.std().item()),
              "ImageNet's, borrowed": (0.485, 0.229)}
normalized = {}


def signed(value):
    # The training pixels normalized with their own statistics have mean 0 up to float32 rounding (3e-8 here),
    # and the sign of that rounding differs between CPUs: rounded first, such a mean prints +0.000, never -0.000.
    return f"{round(float(value), 3) + 0.0:+.3f}"


for name, (mean, std) in statistics.items():
    normalized[name] = (train_pixels - mean) / std       # what v2.Normalize([mean], [std]) computes
    on_valid = (valid_pixels - mean) / std
    print(f"{name:21s} mean {mean:.4f}, std {std:.4f} -> normalized training pixels: mean {signed(normalized[name].mean())}, "
          f"std {normalized[name].std():.3f} | validation: mean {signed(on_valid.mean())}, std {on_valid.std():.3f}")
plot_histograms(normalized, bins=30, sharex=True, xlabel="normalized pixel value",
                title="the training pixels after Normalize, with three choices of statistics")

# %% [markdown]
# What the numbers say:
#
# * **Training statistics** give the training inputs mean 0 and std 1 exactly (that is what they were
#   computed for), and the validation inputs come out close to that (mean -0.018, std 0.964 here) — as
#   new data will.
# * **All the data** gives almost the same numbers here (mean 0.1300 instead of 0.1310), because the
#   split is random and both parts come from the same source: the leak is small in size, not in kind.
#   With a small, or a different, validation set it grows, and the habit carries over to everything
#   else fitted on data — a vocabulary, a PCA, the value that fills in missing entries: fit on the
#   training split, then apply the fitted thing, unchanged, to validation, test and production data.
# * **Borrowed ImageNet statistics** miss by far: these grey images come out with mean -1.55 and std
#   1.29 instead of 0 and 1. Pretrained ImageNet models expect exactly those numbers, because they were
#   trained with them; a model trained from scratch on other images needs its own.
#
# The histograms also show what normalizing does *not* do: it shifts and rescales, but the shape of the
# distribution — here a tall bar of black background pixels — stays the same.
#
# ### Training and validation transforms
#
# Augmentation is for **training** only. Validation measures the model on the images as they are, the
# same every time; an augmented validation set gives a noisy, different score on every evaluation. So the
# same split needs two transforms — both ending in the training split's `Normalize`:

# %%
normalize = v2.Normalize([train_mean], [train_std])
train_tf = v2.Compose([v2.ToImage(), v2.Grayscale(1),
                       v2.RandomAffine(degrees=20, translate=(0.1, 0.1), scale=(0.8, 1.1)),
                       v2.ToDtype(torch.float32, scale=True), normalize])
eval_tf = v2.Compose([v2.ToImage(), v2.Grayscale(1), v2.ToDtype(torch.float32, scale=True), normalize])

# %% [markdown]
# ### Trap: the subsets of `random_split` share one dataset
#
# The obvious way: split one dataset with `random_split`, then give the training subset its augmenting
# transform. But a `Subset` is only a list of indices and a reference to its **parent** dataset —
# `random_split`'s two subsets point to the same parent. Setting "the training subset's" transform sets the
# parent's, and the validation subset changes with it:

# %%
train_part, valid_part = random_split(image_dataset(transform=eval_tf), [0.8, 0.2],
                                      generator=torch.Generator().manual_seed(0))
print("the same split as above (same seed, same length):", train_part.indices == train_split.indices)
print("train_part.dataset is valid_part.dataset:", train_part.dataset is valid_part.dataset)
clean = valid_part[0][0]
train_part.dataset.transform = train_tf                  # meant for the training subset only
torch.manual_seed(0)
now = torch.stack([valid_part[0][0] for _ in range(3)])
changed = [f"{(read != clean).float().mean().item():.0%}" for read in now]
print(f"validation item 0 read 3 times after the change: pixels that differ from before: {', '.join(changed)}; "
      f"the 3 reads identical: {torch.equal(now[0], now[1]) and torch.equal(now[1], now[2])}")
black, white = (0 - train_mean) / train_std, (1 - train_mean) / train_std    # what 0 and 1 became
show_image_grid(torch.cat([clean[None], now]), ["before", "after 1", "after 2", "after 3"], columns=4,
                value_range=(black, white), title="validation item 0, before and after setting the training transform")

# %% [markdown]
# The validation item is now rotated, shifted and scaled, differently on every read: every validation score
# computed from here on would be measured on augmented images. The fix: **two dataset objects**, one per
# transform, and the split's indices applied to each with `Subset`:

# %%
train_images = Subset(image_dataset(transform=train_tf), train_split.indices)
valid_images = Subset(image_dataset(transform=eval_tf), valid_split.indices)
print("two parents:", train_images.dataset is not valid_images.dataset)
torch.manual_seed(0)
print("validation item 0, read twice: identical", torch.equal(valid_images[0][0], valid_images[0][0]),
      "| as before the trap:", torch.equal(valid_images[0][0], clean))
print("training item 0, read twice: identical", torch.equal(train_images[0][0], train_images[0][0]))
print("no image in both parts:", not set(train_images.indices) & set(valid_images.indices))

# %% [markdown]
# ## 3. From indices to batches
#
# For a map-style dataset the `DataLoader` is a pipeline of small parts, each of which you can replace:
#
# 1. a **sampler** yields indices, one at a time — `SequentialSampler` (0, 1, 2, ...) or, with
#    `shuffle=True`, `RandomSampler`;
# 2. a **batch sampler** groups them into lists of `batch_size` indices (`BatchSampler`);
# 3. the dataset is asked for each index of a list, `dataset[i]`;
# 4. a **collate function** turns the list of items into one batch (`default_collate` unless you pass
#    `collate_fn=`).
#
# **Predict, then run.** `pairs`, the `TensorDataset` of section 1, holds 10 items. How many batches
# does `DataLoader(pairs, batch_size=3)` give in one epoch, and how many with `drop_last=True`? Answer
# with a pair `(without, with)`.

# %%
guess = ...   # your prediction: (batches without drop_last, batches with drop_last)
predict("04.batches_drop_last", guess,
        (len(DataLoader(pairs, batch_size=3)), len(DataLoader(pairs, batch_size=3, drop_last=True))),
        why="10 items in batches of 3: three full batches and a short one of 1, which drop_last=True throws away")

# %% [markdown]
# The parts one by one, on a list of ten numbers (a list is a map-style dataset too):

# %%
ten = list(range(10))
print("SequentialSampler:          ", list(SequentialSampler(ten)))
print("RandomSampler:              ", list(RandomSampler(ten, generator=torch.Generator().manual_seed(0))))
print("BatchSampler(size 4):       ", list(BatchSampler(SequentialSampler(ten), batch_size=4, drop_last=False)))
print("BatchSampler, drop_last=True:", list(BatchSampler(SequentialSampler(ten), batch_size=4, drop_last=True)))
loader = DataLoader(ten, batch_size=4, shuffle=True)
print("DataLoader(shuffle=True) built a", type(loader.sampler).__name__, "inside a", type(loader.batch_sampler).__name__)
print("len(loader):", len(loader), "batches; with drop_last=True:", len(DataLoader(ten, batch_size=4, drop_last=True)))

# %% [markdown]
# `drop_last=True` throws the short last batch away. Use it when a short batch hurts: BatchNorm on a
# batch of one, a loss averaged per batch that over-weights the few leftover items, or code that
# assumes a fixed batch size. For evaluation keep it off — every item should count.
#
# ### Samplers change what an epoch contains
#
# A sampler can do more than shuffle. `WeightedRandomSampler` draws indices with chosen probabilities
# (with replacement). With a rare class, weighting each item by 1 / (its class's count) makes batches
# balanced on average:

# %%
rare = torch.tensor([0] * 90 + [1] * 10)                     # 90 % of class 0, 10 % of class 1
weights = 1.0 / torch.bincount(rare)[rare]                   # each item: 1 / (size of its class)
uniform = list(RandomSampler(rare, generator=torch.Generator().manual_seed(0)))
weighted = list(WeightedRandomSampler(weights, num_samples=len(rare), generator=torch.Generator().manual_seed(0)))
print("labels seen in one epoch, RandomSampler:        ", torch.bincount(rare[uniform]).tolist())
print("labels seen in one epoch, WeightedRandomSampler:", torch.bincount(rare[weighted]).tolist())
print("distinct items drawn by the weighted sampler:", len(set(weighted)), "of", len(rare))

# %% [markdown]
# The price shows in the last line: drawing with replacement repeats some items and skips others in
# each epoch.
#
# ### Default collation
#
# `default_collate` works recursively on the *structure* of the first item: tensors are stacked along
# a new first dim, Python numbers become a tensor, NumPy arrays become tensors, tuples and dicts keep
# their shape with each field collated, strings stay a list.
#
# **Predict, then run.** An item of `images_plain` is a pair `(image, label)`: a `(1, 28, 28)` tensor and
# a Python `int`. What does `default_collate` make of a list of 5 such pairs — which shapes, and which
# dtype for the labels? (Not a list of 5 pairs...)

# %%
five = default_collate([images_plain[k] for k in range(5)])
guess = ...   # your prediction: the shapes of what default_collate returns, e.g. ((...), (...))
predict("04.collated_pair_shapes", guess, tuple(tuple(part.shape) for part in five),
        why="a list of pairs becomes a pair of batches: the images stacked along a new first dim, the labels one tensor")
guess = ...   # your prediction: the dtype of the collated labels, e.g. "float32"
predict("04.collated_label_dtype", guess, five[1].dtype,
        why="Python ints become an int64 tensor (torch.tensor of ints), the dtype classification losses want")

# %% [markdown]
# The same rules on a richer item, a dict with five kinds of field:

# %%
items = [
    {"pixels": torch.zeros(2, 3), "label": 1, "weight": 0.5, "mask": np.ones(3), "name": "a"},
    {"pixels": torch.ones(2, 3), "label": 0, "weight": 2.0, "mask": np.zeros(3), "name": "b"},
]
batch = default_collate(items)
for key, value in batch.items():
    shown = f"tensor {tuple(value.shape)} {value.dtype}" if isinstance(value, torch.Tensor) else repr(value)
    print(f"{key:7s} -> {shown}")

# %% [markdown]
# Note the `mask` and the `weight`: NumPy's default float64 survives collation, and so does Python's
# (a plain `float` becomes a float64 tensor, where `torch.tensor(0.5)` alone would be float32), so both
# fields reach the model as float64 — one of the dtype traps of chapter 01, now arriving through the
# loader. The `label`, a Python `int`, becomes int64, which is what a classification loss wants.
#
# ### Trap: items whose shapes differ do not collate
#
# Stacking needs every tensor to have the same shape. Sentences, audio clips and molecules do not: a
# dataset of token sequences of different lengths breaks the loader at the first batch.

# %%
token_generator = torch.Generator().manual_seed(0)
seq_lengths = torch.randint(1, 41, (256,), generator=token_generator).tolist()
sequences = [torch.randint(1, 100, (n,), generator=token_generator) for n in seq_lengths]
print("first lengths:", seq_lengths[:6])
try:
    next(iter(DataLoader(sequences, batch_size=4)))
except RuntimeError as error:
    print("RuntimeError:", str(error).splitlines()[0])

# %% [markdown]
# The cure is a `collate_fn` that makes the shapes equal before stacking: **pad** every sequence with a
# filler value up to the longest one in the batch. `torch.nn.utils.rnn.pad_sequence` does the padding;
# here is the idea on bare sequences:

# %%
def pad_only(batch):
    """Right-pad a list of 1-D tensors with 0 into one (B, longest) tensor."""
    return pad_sequence(batch, batch_first=True, padding_value=0)


padded = next(iter(DataLoader(sequences, batch_size=4, collate_fn=pad_only)))
print("padded batch", tuple(padded.shape))
print(padded[:, :12])

# %% [markdown]
# Padding alone loses information: in the padded batch you cannot tell a real token 0 from padding, and
# the model has to know where each sequence ends (for masks, or `pack_padded_sequence`). A real
# collate function therefore also returns each sequence's true length, and keeps the labels — that
# is Exercise 1, `pad_collate`.
#
# ### A batch sampler that saves padding
#
# Every padded slot is computation spent on nothing. A **batch sampler** decides which indices share a
# batch, so it can put sequences of similar length together: sort the indices by length, cut them into
# batches, and shuffle the *order of the batches* so that the epoch is still random. A batch sampler is
# any iterable of lists of indices; pass it as `batch_sampler=` (it replaces `batch_size`, `shuffle`,
# `sampler` and `drop_last`).

# %%
class BucketBatchSampler:
    """Batches of indices with similar lengths, the batches in a random order each epoch."""

    def __init__(self, lengths, batch_size, generator):
        self.lengths, self.batch_size, self.generator = lengths, batch_size, generator

    def __iter__(self):
        by_length = sorted(range(len(self.lengths)), key=self.lengths.__getitem__)
        batches = [by_length[k:k + self.batch_size] for k in range(0, len(by_length), self.batch_size)]
        for b in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[b]

    def __len__(self):
        return math.ceil(len(self.lengths) / self.batch_size)


def padding_share(loader):
    """The fraction of all padded slots in an epoch that hold padding instead of tokens."""
    slots = tokens = 0
    for batch in loader:
        slots += batch.numel()
        tokens += (batch != 0).sum().item()
    return 1 - tokens / slots


random_batches = DataLoader(sequences, batch_size=16, shuffle=True, collate_fn=pad_only,
                            generator=torch.Generator().manual_seed(0))
bucketed = DataLoader(sequences, batch_sampler=BucketBatchSampler(seq_lengths, 16, torch.Generator().manual_seed(0)),
                      collate_fn=pad_only)
shares = {"random batches": 100 * padding_share(random_batches), "length buckets": 100 * padding_share(bucketed)}
for name, share in shares.items():
    print(f"{name:15s}: {share:4.1f} % of the padded batch is padding")
plot_bars(shares, ylabel="% of slots that are padding", title="the same 256 sequences, batches of 16", fmt="{:.1f} %")

# %% [markdown]
# (Counting `batch != 0` works here only because these tokens start at 1 — exactly the assumption a
# real collate function must not make.)
#
# ## 4. Worker processes
#
# With `num_workers=0` the main process does everything: while it loads a batch, the model waits.
# With `num_workers=k` the `DataLoader` starts `k` **worker processes** at the start of each epoch
# (`iter(loader)`; section 5 shows how to keep them for the next epoch), and each worker gets **its own
# copy of the dataset**. The main process sends each
# worker lists of indices in turn — batch 0 to worker 0, batch 1 to worker 1, and so on — the workers
# load and collate, and the main process hands the batches over **in the original order**.
#
# ### How a worker starts: fork or spawn
#
# How a worker gets its copy of the dataset depends on the **start method**, which differs between
# systems — and one of them breaks code written in a notebook:
#
# * **fork**, the default on Linux: the worker begins as a copy of the whole main process, with every
#   variable and class of the notebook in it. Nothing has to be sent.
# * **spawn**, the default on **macOS and Windows**: the worker is a fresh Python interpreter. The loader
#   *pickles* the dataset and sends it over, and pickle records an object's class only by its *name* —
#   module and class name — so the worker has to **import** that class to rebuild the object. A class
#   defined in a notebook cell belongs to the module `__main__`, the notebook's kernel, which a fresh
#   interpreter cannot import: the worker dies before loading a single item.
#
# Here is that failure, on any system: the loader option `multiprocessing_context="spawn"` chooses the
# start method for this loader's workers. The dying worker writes its traceback to the error output it
# inherited from the kernel (file descriptor 2); the main process only notices that its worker is gone,
# and raises. To show both messages, the cell points file descriptor 2 at a temporary file while it tries,
# and prints the file's last line. (Every loader in this section uses at most 2 workers. On a machine with
# fewer cores PyTorch would warn about that, and a warning writes to stderr, so that notice is silenced
# here.)

# %%
warnings.filterwarnings("ignore", message="This DataLoader will create")


class Squares(Dataset):
    """Item i is i * i: a dataset class defined here, in the notebook."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return i * i


def first_batch_with_spawn(dataset):
    """Load one batch with 1 worker started by spawn; print the batch, or what the worker and the loader said."""
    with tempfile.TemporaryFile(mode="w+") as worker_stderr:
        kernel_stderr = os.dup(2)
        os.dup2(worker_stderr.fileno(), 2)        # the worker inherits descriptor 2: now this file
        try:
            batch = next(iter(DataLoader(dataset, batch_size=3, num_workers=1, multiprocessing_context="spawn")))
            loader_said = None
        except RuntimeError as error:
            loader_said = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        finally:
            os.dup2(kernel_stderr, 2)             # the kernel's own error output back
            os.close(kernel_stderr)
        worker_stderr.seek(0)
        worker_said = worker_stderr.read().strip().splitlines()
    if worker_said and loader_said:  # a worker that loaded fine may still print a C++ line as it is torn down
        print("   the worker's last words:", worker_said[-1])
    print("   the loader:", loader_said or f"first batch {batch}")


print("num_workers=0:", next(iter(DataLoader(Squares(), batch_size=3))))
print("num_workers=1, the worker started by spawn:")
first_batch_with_spawn(Squares())

# %% [markdown]
# The notebook's `Squares` was never found: the worker looked for it in its own `__main__`, a fresh and
# empty one. Without the detour through a file, the notebook shows the worker's whole traceback as error
# output and then the loader's `RuntimeError`, which names no cause — only a worker that "exited
# unexpectedly". Whenever a loader says that, look for the worker's own message above it (or in the
# terminal that runs Jupyter).
#
# ### The portable way: classes for workers live in a module
#
# The cure works on every system: **define what the workers need — dataset classes, a `worker_init_fn`,
# a `collate_fn` — in a `.py` file and import it from there.** A spawned worker imports that module as
# the notebook did, and with fork nothing changes. (No `lambda` either: pickle cannot send one at all.
# The other way out, `num_workers=0`, gives up the workers.) In a project the file lies next to your
# code. In a notebook, IPython's `%%writefile PATH` cell magic writes the rest of its cell into a file
# instead of running it; a cell after it imports the file. Three rules make that work:
#
# * the file must be in a folder on `sys.path`, the list of folders Python imports from. A spawned
#   worker starts with the kernel's `sys.path`, so it finds the module too. This notebook uses a
#   temporary folder, deleted when the kernel stops;
# * the module stands on its own: it imports what it uses, because the notebook's variables do not
#   exist in a spawned worker;
# * Python imports a module once per process: after you change a `%%writefile` cell and run it again,
#   restart the kernel (or `importlib.reload` the module) before you import from it.
#
# (A script run with spawn has one more rule: each worker imports the script itself, as a module, so the
# code that starts the loading must sit under `if __name__ == "__main__":`.)
#
# The cell below also prints which start method this kernel uses by default. (To run a notebook on Linux
# as on macOS, start JupyterLab with the environment variable `COURSE_START_METHOD=spawn`: this course's
# `start_chapter` then makes spawn the default.)

# %% tags=nbval-ignore-output
worker_code = tempfile.TemporaryDirectory(prefix="course-04-modules-")   # deleted when the kernel stops
WORKER_CODE = worker_code.name
sys.path.insert(0, WORKER_CODE)
print("modules for the workers go to", WORKER_CODE)
print("this kernel starts worker processes by", multiprocessing.get_start_method())

# %% [markdown]
# Inside a worker, `torch.utils.data.get_worker_info()` says who you are: `id`, `num_workers`, `seed`
# (this worker's random seed) and `dataset` (this worker's copy). In the main process it returns
# `None`. A first module, with a dataset that records which process loaded each item (and counts, in
# an attribute, how many items it was asked for — the next subsection needs that):

# %%
%%writefile "{WORKER_CODE}/who_loads.py"
from torch.utils.data import Dataset, get_worker_info


class WhoLoads(Dataset):
    """Item i is (i, which process loaded it: the worker id, or -1 for the main process); counts its loads."""

    def __init__(self):
        self.loads = 0

    def __len__(self):
        return 12

    def __getitem__(self, i):
        self.loads += 1
        info = get_worker_info()
        return i, (-1 if info is None else info.id)

# %% [markdown]
# IPython replaced `{WORKER_CODE}` in the first line by the variable's value. Now import the class and
# load with it: in the main process, then with 2 workers started by spawn (forced as above), which is
# where the class defined in the notebook failed:

# %%
from who_loads import WhoLoads

print("in the main process get_worker_info() returns", get_worker_info())
who_loads = WhoLoads()
counted = {}                                   # what the object in the main process counted, per run
for workers, start in ((0, None), (2, "spawn")):
    print(f"num_workers={workers}" + (f", the workers started by {start}:" if start else ":"))
    who_loads.loads = 0
    for indices, loaded_by in DataLoader(who_loads, batch_size=3, num_workers=workers, multiprocessing_context=start):
        print(f"   batch {indices.tolist()} loaded by {'the main process' if loaded_by[0] < 0 else f'worker {loaded_by[0].item()}'}")
    counted[workers] = who_loads.loads

# %% [markdown]
# ### Workers get copies: what they change stays with them
#
# Because each worker works on a copy, anything a dataset records while loading — a counter, a cache of
# decoded files — stays inside the worker and disappears when the epoch's workers stop. `WhoLoads` counted
# its loads in `self.loads`, set to 0 before each of the two runs above. What did the object in the main
# process count?

# %%
for workers, loads in counted.items():
    print(f"num_workers={workers}: 12 items loaded, the WhoLoads object in the main process counted {loads}")

# %% [markdown]
# With workers, every count happened in a copy. (From here on, every class a worker needs is written into
# a module of its own, the portable way.)

# %% [markdown]
# ### Trap: an iterable dataset duplicates its items across workers
#
# With a map-style dataset the main process shares out the indices, so each item is loaded once.
# With an iterable dataset there are no indices to share: the loader simply calls `__iter__` on every
# worker's copy. A stream that ignores which worker runs it therefore comes out **once per worker**.

# %%
%%writefile "{WORKER_CODE}/tagged_lines.py"
from torch.utils.data import IterableDataset, get_worker_info


class TaggedLineStream(IterableDataset):
    """The lines of a text, one after the other like LineStream, each tagged with the worker that yielded it."""

    def __init__(self, lines):
        self.lines = lines

    def __iter__(self):
        info = get_worker_info()
        for line in self.lines:
            yield line, (-1 if info is None else info.id)

# %% [markdown]
# **Predict, then run.** The stream holds the 7 lines of `LINES`. Through
# `DataLoader(TaggedLineStream(LINES), batch_size=4, num_workers=2)`, how many times does each line
# arrive in one epoch?

# %%
guess = ...   # your prediction: an int
from tagged_lines import TaggedLineStream

received = {workers: [(line, who.item()) for lines, whos in DataLoader(TaggedLineStream(LINES), batch_size=4, num_workers=workers)
                      for line, who in zip(lines, whos)]
            for workers in (0, 2)}
predict("04.unsharded_copies", guess, max(collections.Counter(line for line, _ in received[2]).values()),
        why="each of the 2 workers runs __iter__ on its own copy of the stream, so every line comes once per worker")

# %% [markdown]
# In detail: who sent what.

# %%
for workers, lines_and_senders in received.items():
    counts = collections.Counter(line for line, _ in lines_and_senders)
    print(f"num_workers={workers}: {len(LINES)} lines in the stream, {len(lines_and_senders)} received, "
          f"times each line came: {sorted(set(counts.values()))}, from workers {sorted({w for _, w in lines_and_senders})}")

# %% [markdown]
# Nothing fails, the epoch is simply twice as long, with every item twice — and with 8 workers eight
# times. (The `len(LINES)` we know; a real stream does not tell you.) The cure is to **shard**: inside
# `__iter__`, ask `get_worker_info()` which worker is running and how many there are, and yield only
# that worker's share, so that the shares together cover the stream exactly once. It must happen in
# `__iter__`, the only method that runs *in the worker*; `__init__` ran once, in the main process, before
# any worker existed. (torch's documentation shows a second way: a `worker_init_fn` that reaches the
# worker's copy through `get_worker_info().dataset` and narrows it.) Exercise 2, `RangeStream`, asks
# you to write a stream that shards itself.
#
# ### Trap: shuffling that does not reproduce
#
# A shuffled loader draws its order from a random generator: by default from torch's **global** one,
# the one `torch.manual_seed` seeds. Random augmentation depends on it too: with `num_workers=0` it runs
# in the main process and draws from it directly; workers get seeds the loader draws from it when it
# starts them (a `base_seed`; worker `k` gets `base_seed + k`). But the global generator is shared with
# everything else — initialising a layer, dropout, any `torch.rand` — so one extra line of model code
# before the loader changes the data order and every augmentation, although the seed is the same.
#
# Below, item `i` is `i` plus a small random jitter drawn where the item is loaded, as an augmentation
# would be: the whole part of each number shows the order, the decimals show the "augmentation". "Run 2"
# is the same code with one layer created first. Two epochs per run, loaded in the main process:

# %%
%%writefile "{WORKER_CODE}/jittered.py"
import torch
from torch.utils.data import Dataset


class Jittered(Dataset):
    """Item i is i + a random number in [0, 0.5), drawn from torch's generator where the item is loaded."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return round(i + 0.5 * torch.rand(()).item(), 2)

# %%
from jittered import Jittered


def two_epochs(make_loader, extra_layer):
    torch.manual_seed(0)
    if extra_layer:
        nn.Linear(4, 4)                   # draws random numbers from the global generator
    loader = make_loader()
    return [[x for batch in loader for x in batch.tolist()] for _ in range(2)]


def unseeded():
    return DataLoader(Jittered(), batch_size=4, shuffle=True)


runs = [two_epochs(unseeded, extra_layer) for extra_layer in (False, True)]
for run, (epoch_1, epoch_2) in zip(("run 1", "run 2"), runs):
    print(f"{run}, epoch 1: {epoch_1}\n{run}, epoch 2: {epoch_2}")
print("same data in both runs:", runs[0] == runs[1])

# %% [markdown]
# The fix is to give the loader **its own generator**, seeded once. The order then comes from it alone,
# whatever else draws random numbers — and so do the workers' seeds, and with them everything the workers
# draw. What runs in the main process still draws from the global generator: below, the same two runs
# with a seeded loader, first without workers, then with one. (The worker is kept alive from the first
# epoch to the second by `persistent_workers=True`: starting a worker costs time — seconds with spawn —
# and section 5 comes back to it.)

# %%
def seeded(num_workers):
    return DataLoader(Jittered(), batch_size=4, shuffle=True, num_workers=num_workers,
                      persistent_workers=num_workers > 0, generator=torch.Generator().manual_seed(0))


def order(run):
    return [[int(x) for x in epoch] for epoch in run]


for workers in (0, 1):
    runs = [two_epochs(functools.partial(seeded, workers), extra_layer) for extra_layer in (False, True)]
    print(f"num_workers={workers}, a seeded loader:")
    for run, (epoch_1, epoch_2) in zip(("run 1", "run 2"), runs):
        print(f"   {run}, epoch 1: {epoch_1}\n   {run}, epoch 2: {epoch_2}")
    print(f"   same order in both runs: {order(runs[0]) == order(runs[1])} | same data in both runs: {runs[0] == runs[1]}")

# %% [markdown]
# With the seeded loader the order repeats either way. Without workers the jitter still changed with the
# extra layer: in the main process, augmentation draws from the global generator, so there, seed it
# (`torch.manual_seed`) right before the epoch loop, after the model is built. With a worker, the whole
# run repeats. Each epoch still differs from the last — the generators move on — and the whole sequence
# of epochs repeats exactly.
#
# ### Trap: a random generator inside the dataset is copied into every worker
#
# What a worker seeds: when it starts, PyTorch seeds `torch`, Python's `random` and NumPy's *global*
# generator with seeds derived from `base_seed + id`, so code that uses those draws different numbers in
# each worker. What it cannot reach: a generator object that **your dataset owns** — for instance
# `np.random.default_rng(seed)` created in `__init__`, a common way to make augmentation repeatable.
# Every worker gets a copy of that object in the same state, so every worker draws the **same**
# numbers.

# %%
%%writefile "{WORKER_CODE}/own_noise.py"
import numpy as np
from torch.utils.data import Dataset


class OwnNoise(Dataset):
    """Item i is a noise value from the dataset's own NumPy generator."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return round(float(self.rng.normal()), 3)

# %%
from own_noise import OwnNoise


def noise_by_worker(**loader_options):
    batches = list(DataLoader(OwnNoise(), batch_size=4, num_workers=2, **loader_options))
    for worker, batch in enumerate(batches):
        print(f"   batch {worker} (worker {worker}): {batch.tolist()}")
    return batches


print("num_workers=0, for comparison:", next(iter(DataLoader(OwnNoise(), batch_size=8))).tolist())
print("num_workers=2:")
batches = noise_by_worker()
print("the two workers drew identical noise:", torch.equal(batches[0], batches[1]))

# %% [markdown]
# The place to fix it is a `worker_init_fn`: the loader calls it once in each worker, after the worker
# has been seeded and before it loads anything. There, `get_worker_info()` gives the worker's copy of
# the dataset and a seed that differs between workers and follows the loader's generator — so
# re-seeding from it gives different numbers per worker that still repeat run after run. (This seed is
# the one the worker's torch generator got, `base_seed + id`: the seeded `Jittered` runs above showed it
# repeating from run to run.) The function runs in the workers, so it too goes into a module.

# %%
%%writefile "{WORKER_CODE}/reseeding.py"
import numpy as np
from torch.utils.data import get_worker_info


def reseed_own_generator(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)   # this worker's copy, this worker's seed

# %%
from reseeding import reseed_own_generator

print("with worker_init_fn and a seeded generator:")
reseeded = noise_by_worker(worker_init_fn=reseed_own_generator, generator=torch.Generator().manual_seed(0))
print("the two workers drew identical noise:", torch.equal(reseeded[0], reseeded[1]))

# %% [markdown]
# The seeding rules in one place:
#
# * seed the loader: `DataLoader(..., generator=torch.Generator().manual_seed(seed))` fixes the order
#   and the workers' seeds;
# * `torch`, `random` and NumPy's global generator are seeded in each worker for you;
# * anything else with random state — a generator your dataset owns, another library's global seed —
#   re-seed in a `worker_init_fn` from `get_worker_info().seed` (or `torch.initial_seed()`, which holds
#   the same number inside a worker).
#
# ### Seeds are not the whole story: determinism
#
# With every generator seeded, the same data arrives in the same order. Does the run then repeat bit for
# bit? Not necessarily: the *arithmetic* can also vary. Which switches decide that is worth recording with
# every result; the course's `run_record()` returns what `start_chapter` set up and the switches as they
# are now. (It also holds the start method and torch's thread count; those are left out of the printout
# below because they differ between machines, and this notebook must print the same everywhere.)

# %%
record = run_record()
print(f"chapter {record['chapter']} | seed {record['seed']} | device: {record['device']}")
print("versions:", ", ".join(f"{name} {version}" for name, version in record["versions"].items()))
for switch, value in record["determinism"].items():
    if switch != "intra-op threads":
        print(f"   {switch:28s} {value}")

# %% [markdown]
# What the switches do:
#
# * **`torch.use_deterministic_algorithms(True)`** — every operation must give the same result on the
#   same input. Where an operation has a slower deterministic version, torch uses it; where it has none,
#   the call **raises** a `RuntimeError` instead of quietly varying. The usual suspects are on CUDA: ops
#   that add into one place from many threads with atomics — `index_add_`, `scatter_add_`, `bincount` with
#   weights, the backward of some pooling and interpolation layers. Atomics add in whatever order the
#   threads arrive, so the sum's last bits change from run to run.
# * **`torch.backends.cudnn.deterministic = True`** — cuDNN (convolutions on NVIDIA GPUs) may only pick
#   deterministic algorithms.
# * **`torch.backends.cudnn.benchmark = False`** — with `True`, cuDNN times several algorithms on the first
#   batch of each shape and keeps the fastest; which one wins can change from run to run, and with it the
#   last bits. Fast, but not repeatable.
# * **`CUBLAS_WORKSPACE_CONFIG=:4096:8`** (or `:16:8`) — an environment variable that cuBLAS (matrix
#   products on NVIDIA GPUs) needs for repeatable results; it must be set before CUDA starts. Without it,
#   deterministic mode makes some CUDA matrix products raise.
#
# `set_deterministic(True)` from `coursekit` turns them all on. The price is speed, and an error for the
# few ops without a deterministic version. The outputs shown here were made on a CPU, so the GPU side is
# described rather than run; the reason behind all of it shows on any machine.
#
# ### Trap: the same numbers added in another order
#
# Floating-point addition is not associative: `(a + b) + c` can differ from `a + (b + c)`, because every
# addition rounds to the nearest float32. So a sum depends on the order of its terms — and atomics, or a
# reduction split across threads, choose that order at run time. Below, a small case first. Then 100,000
# float32 numbers added in orders we choose: one after the other, as they come and shuffled, and in two
# halves, each summed on its own and the two results added, as two threads would. NumPy's `cumsum` adds
# strictly from left to right, and IEEE 754 fixes how each float32 addition rounds, so these sums come out
# the same on every machine. Last, torch's own `values.sum()`, which picks its order itself:

# %%
big, one = torch.tensor(1e8), torch.tensor(1.0)
print(f"in float32, (1e8 - 1e8) + 1 = {((big - big) + one).item()}, but 1e8 + (-1e8 + 1) = {(big + (-big + one)).item()}")

# torch.rand, not torch.randn: rand draws the same bits on every CPU, while randn's last bits depend on the
# CPU's vector instructions. Times 2 minus 1 is exact in float32.
generator = torch.Generator().manual_seed(0)
values = torch.rand(100_000, generator=generator) * 2 - 1       # float32, in [-1, 1)
order = torch.randperm(len(values), generator=generator)
exact = math.fsum(values.tolist())                               # the exact sum, rounded once (to float64)
nearest = torch.tensor(exact, dtype=torch.float32)               # the float32 number closest to it


def left_to_right(t):
    """The float32 sum of t, adding one number after the other: the same result on every machine."""
    return torch.tensor(np.cumsum(t.numpy(), dtype=np.float32)[-1])


def steps_apart(a, b):
    """How many float32 steps (units in the last place) lie between two float32 numbers of the same sign."""
    return abs(a.view(torch.int32).item() - b.view(torch.int32).item())


half = len(values) // 2
sums = {"left to right, in order": left_to_right(values),
        "left to right, shuffled": left_to_right(values[order]),
        "two halves, then added": left_to_right(values[:half]) + left_to_right(values[half:])}
print(f"{'the exact sum of the 100,000 numbers':38s} {exact:.7f} | the float32 number nearest to it: {nearest.item():.7f}")
for name, total in sums.items():
    print(f"float32 sum, {name:25s} {total.item():.7f} | {steps_apart(total, nearest):3d} float32 steps from the nearest")

# torch's sum adds in a tree of partial sums shaped by the thread count and the CPU's vector width, so its last
# bits are the machine's (1 to 7 steps from the nearest here, up to 21 over 1200 shuffles): stated as a bound.
threads_before = torch.get_num_threads()
try:
    torch_steps = []
    for threads in (1, 2, 3, 4):
        torch.set_num_threads(threads)
        torch_steps.append(steps_apart(values.sum(), nearest))
finally:
    torch.set_num_threads(threads_before)
print(f"{'torch.sum, with 1, 2, 3 and 4 threads':38s} each {under(max(torch_steps), 50, ' float32 steps')} from the nearest")

# %% [markdown]
# `1e8 + (-1e8 + 1)` loses the 1 entirely: float32 cannot hold `-99999999`, so `-1e8 + 1` rounds back
# to `-1e8`. The three sums of the same 100,000 numbers land 365, 239 and 125 float32 steps from the float32
# number nearest the exact sum — off from the 5th or 6th significant digit on, each in its own way: every one
# of the 99,999 additions rounds the running total, and which roundings pile up depends on the order. None of
# them is "the" right one — each is exactly what float32 gives in its order — they are just not the same.
# torch's own sum comes much closer (each under 50 steps), because it adds in a tree of partial sums instead
# of into one running total. But the shape of that tree depends on the number of threads and, from one CPU
# to another, on the width of its vector instructions, so its last bits belong to the machine: the cell
# prints how close it comes, not its digits. Alone that is harmless, but training feeds every result into
# the next step, and after thousands of steps two runs that once differed in a last bit can differ visibly.
#
# On the CPU torch's operations are, as a rule, repeatable for a fixed thread count, so on this machine
# `use_deterministic_algorithms(True)` changes no sum. It does change one thing you can see on the CPU:
# memory that an operation leaves uninitialised (`torch.empty`, a tensor grown by `resize_`) is filled with
# NaN, where it would otherwise hold whatever bytes were there before — so code that reads it by mistake
# fails the same way every time. The cell puts the switches back as they were:

# %%
switches_before = determinism_settings()
plain_sum = values.sum()                                     # the 100,000 numbers, deterministic mode off
try:
    set_deterministic(True)
    print("deterministic mode:", torch.are_deterministic_algorithms_enabled())
    # Exactly equal on any CPU: the same kernel on the same numbers with the same threads adds in the same order.
    print("   values.sum() the same as with the mode off:", torch.equal(values.sum(), plain_sum))
    print("   torch.empty(4):                  ", torch.empty(4))
    print("   torch.ones(2).resize_(4):        ", torch.ones(2).resize_(4))
    print("   index_add_, an index used twice: ", torch.zeros(3).index_add_(0, torch.tensor([0, 0, 2]), torch.ones(3)))
finally:
    set_deterministic(switches_before["use_deterministic_algorithms"])
    torch.backends.cudnn.benchmark = switches_before["cudnn.benchmark"]
    if switches_before["CUBLAS_WORKSPACE_CONFIG"] == "(unset)":
        os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)      # set_deterministic(True) set it
print("switches as before:", determinism_settings() == switches_before)

# %% [markdown]
# Without deterministic mode `torch.empty(4)` would print leftover bytes, different from run to run, so
# this notebook does not print it. The `index_add_` with an index used twice gives the same answer either
# way on the CPU; on CUDA it adds with atomics, and deterministic mode swaps in a slower, ordered version.
#
# For repeatable runs on a GPU: seed everything, seed the loader, call `set_deterministic(True)` (or set
# the three switches by hand) before CUDA starts, keep the library versions and the hardware the same —
# and record all of it with the results.
#
# ## 5. Throughput and the loader's other settings
#
# Do workers make loading faster? It depends on what an item costs and on the cores that are free, so
# measure it, on three versions of the same images:
#
# * **in memory**: a small data set fits in memory, so it can be decoded once, up front, into one tensor
#   (a `TensorDataset`) — an item is then just a slice;
# * **PNG + transform**: the `ImageFolder` above, which opens and decodes a file and runs the
#   transform for every item;
# * the same behind a simulated **slow disk**: 1 ms of waiting per item, as a network file system
#   might add.
#
# (With FashionMNIST, "in memory" holds its first 3000 images, and the second case is cheaper: its items
# come from one array in memory, not from files.)

# %%
subset = range(min(len(images_plain), 3000))
all_images = torch.stack([images_plain[i][0] for i in subset])
all_labels = torch.tensor([images_plain[i][1] for i in subset])
in_memory = TensorDataset(all_images, all_labels)
print(f"decoded once: {len(in_memory)} images in one tensor of shape {tuple(all_images.shape)}, "
      f"{all_images.nbytes / 2**20:.1f} MiB")

# %% [markdown]
# For `num_workers` 0 and 2 (no workers, and one per core of a two-core machine; try more on yours), the
# first batch (which includes starting the workers) is timed apart; then,
# once the batches the workers loaded ahead meanwhile are taken, the samples per second over 12
# batches. Workers run torch with one thread each (the loader sets that); the main process is set to
# one thread too, so that the comparison is fair — and because for tensors this small, one thread is
# faster anyway. The numbers are this machine's, today; on yours they will differ. (The y axis is
# logarithmic: the three cases differ by orders of magnitude.) The slow disk, a dataset that wraps
# another, goes into a module first, like every class the workers use:

# %%
%%writefile "{WORKER_CODE}/slow_disk.py"
import time

from torch.utils.data import Dataset


class SlowDisk(Dataset):
    """Another dataset's items, each delayed by a fixed wait (a stand-in for slow storage)."""

    def __init__(self, dataset, seconds):
        self.dataset, self.seconds = dataset, seconds

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return self.dataset[i]

# %% tags=nbval-ignore-output
from slow_disk import SlowDisk

# One torch thread in the main process, as each worker has (DataLoader sets 1 there): the comparison is of
# processes, not of torch's thread pool. Put back after the measurement, for the rest of the chapter.
threads_before = torch.get_num_threads()


def measure(dataset, num_workers, batches=12, batch_size=32):
    """(samples per second once the loader runs steadily, seconds until the first batch)."""
    sampler = RandomSampler(dataset, replacement=True, num_samples=100 * batch_size,   # never runs out
                            generator=torch.Generator().manual_seed(0))
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=num_workers)
    start = time.perf_counter()
    iterator = iter(loader)
    next(iterator)
    first = time.perf_counter() - start
    for _ in range(2 * num_workers):               # batches the workers loaded ahead meanwhile: not timed
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    rate = batches * batch_size / (time.perf_counter() - start)
    del iterator                                   # stops the workers
    return rate, first


worker_counts = [0, 2]                             # none, and one per core of a two-core machine
throughput = {}
torch.set_num_threads(1)
try:
    for name, dataset in (("in memory", in_memory), ("PNG + transform", images_plain),
                          ("slow disk (PNG + 1 ms wait)", SlowDisk(images_plain, 0.001))):
        results = [measure(dataset, k) for k in worker_counts]
        throughput[name] = (worker_counts, [rate for rate, _ in results])
        for k, (rate, first) in zip(worker_counts, results):
            print(f"{name:27s} num_workers={k}: {rate:7.0f} samples/s | first batch after {1000 * first:5.0f} ms")
finally:
    torch.set_num_threads(threads_before)
plot_curves(throughput, xlabel="num_workers", ylabel="samples/s", logy=True, title="loader throughput on this machine")

# %% [markdown]
# How to read it (your plot may differ from the one here; the reasons do not):
#
# * **In memory** an item costs almost nothing, and a worker can only add cost: it must send every batch
#   back to the main process (through shared memory, with some bookkeeping). Data that fits in memory
#   belongs there, with `num_workers=0`.
# * **PNG + transform**: every item costs real work, which workers do side by side with each other
#   and with the main process. What they gain depends on the free cores: on an idle two-core machine up
#   to about twice as much. On a busy machine anything can happen: the extra processes compete with
#   everything else that runs there, and since the system shares the cores out *per process*, more
#   processes can even win a larger share — a gain that vanishes when the machine is yours alone.
# * **Slow disk**: waiting needs no core, so while one worker waits another loads, and throughput grows
#   with the workers even on a busy machine, until the storage itself is saturated.
# * In training, workers also load the next batches *while the main process runs the model* — a gain
#   that this measurement, without a model, does not even show.
# * The **first batch** pays for starting the workers, at every epoch — with spawn (macOS, Windows) a
#   fresh Python that imports torch, often a second or more. `persistent_workers=True` keeps them alive
#   between epochs and pays once, as in section 4's seeding demonstration, where one worker start served
#   two epochs. Persistent workers stop when their loader is deleted; until then they hold their memory,
#   so use them for a loader that serves many epochs, not for a throwaway one.
#
# ### `prefetch_factor`: how far the workers run ahead
#
# Each worker keeps `prefetch_factor` batches (default 2) in flight, so `num_workers × prefetch_factor`
# batches are requested as soon as `iter(loader)` starts the epoch, and one more each time you take one.
# Below, 2 workers with `prefetch_factor=3`: take one batch, wait until the workers are idle, and count
# what they loaded. The counting uses counters in shared memory, one per worker (a plain attribute would
# stay in the worker, as seen in section 4): a `multiprocessing.Array`, which a worker receives when it
# starts, with fork and spawn alike.

# %%
%%writefile "{WORKER_CODE}/counted_loads.py"
from torch.utils.data import Dataset, get_worker_info


class CountedLoads(Dataset):
    """Counts every item loaded in a shared array: entry k for worker k (entry 0 in the main process)."""

    def __init__(self, n, counts):
        self.n, self.counts = n, counts

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        with self.counts.get_lock():
            self.counts[0 if info is None else info.id] += 1
        return i

# %%
from counted_loads import CountedLoads


def batches_loaded_after_one(prefetch_factor, num_workers=2, batch_size=4):
    counts = multiprocessing.Array("i", num_workers)        # zeros, in shared memory
    iterator = iter(DataLoader(CountedLoads(400, counts), batch_size=batch_size, num_workers=num_workers,
                               prefetch_factor=prefetch_factor))
    next(iterator)
    # Wait until every worker has loaded something (a spawned worker takes a while to start) and none is busy.
    seen, deadline = None, time.monotonic() + 60
    while (0 in counts[:] or counts[:] != seen) and time.monotonic() < deadline:
        seen = counts[:]
        time.sleep(0.2)
    del iterator
    return sum(counts[:]) // batch_size


print(f"2 workers, prefetch_factor=3: you took 1 batch, the workers had loaded {batches_loaded_after_one(3)} "
      "(2 × 3 requested at the start, 1 more when you took one)")
try:
    DataLoader(range(8), num_workers=0, prefetch_factor=2)
except ValueError as error:
    print("num_workers=0 with prefetch_factor -> ValueError:", str(error).split(".")[0])

# %% [markdown]
# A deeper prefetch smooths out slow items but holds more batches in memory; the default is usually
# right.
#
# ### `pin_memory`
#
# Copying a batch from CPU memory to a GPU is faster from **page-locked** ("pinned") memory, and only
# from pinned memory can the copy run in the background (`batch.to(device, non_blocking=True)`).
# `pin_memory=True` makes the loader put every batch into pinned memory before handing it over. It
# helps only when batches go to a GPU; without one it does nothing but warn, so write it as
# `DataLoader(..., pin_memory=torch.cuda.is_available())`.
#
# ## 6. One batch end to end before a long run
#
# A data bug found after an hour of training costs an hour. Before a long run, take **one** batch and
# push it through everything the run will do: inspect it, forward, loss, backward, one step — and
# check that the model can learn it. It takes seconds.
#
# ### Trap: images that are still bytes
#
# Forget `v2.ToDtype(..., scale=True)` and the pipeline still runs: the images arrive as uint8 from 0 to
# 255. Inspect the batch, then feed it to a model:

# %%
def inspect_batch(images, labels):
    print(f"images {tuple(images.shape)} {images.dtype}, values {images.min().item():.3g} .. {images.max().item():.3g} | "
          f"labels {labels.dtype}, {labels.min().item()} .. {labels.max().item()}")


def small_classifier():
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, len(classes)))


bytes_only = image_dataset(transform=v2.Compose([v2.ToImage(), v2.Grayscale(1)]))   # ToDtype forgotten
images, labels = next(iter(DataLoader(bytes_only, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))))
inspect_batch(images, labels)
seed_everything(0)
model = small_classifier().to(device)
try:
    model(images.to(device))
except RuntimeError as error:
    print("RuntimeError:", str(error).splitlines()[0])

# %% [markdown]
# Here the model refused the dtype. Had the pipeline ended in `.float()` without the scaling, nothing
# would have complained: the inputs would be 255 times too large, the first layer's outputs huge, and
# training slow or unstable. The inspection line shows either bug at once. With the right pipeline:
# inspect, then one full training step, then **overfit the batch** — a model that cannot drive the
# loss on 32 items to nearly zero has a bug in the data, the model or the loss.

# %%
train_batch = DataLoader(images_plain, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
images, labels = next(iter(train_batch))
inspect_batch(images, labels)
images, labels = images.to(device), labels.to(device)

seed_everything(0)
model = small_classifier().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
model.train()
overfit = []
for step in range(60):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    overfit.append(loss.item())
print("gradients finite at the last step:", all(p.grad.isfinite().all().item() for p in model.parameters()))
print(f"loss on the one batch: step 0 {overfit[0]:.2f}, step 20 {overfit[20]:.2f}, step 59 {overfit[-1]:.3f}")

# %% [markdown]
# ---
# # Part II · Choosing the learning rate
#
# Part I made sure the batches are right. What a training run makes of them depends, more than on
# anything else, on the learning rate — and the one tool this part teaches, the **learning-rate range
# test**, finds a good one in a single short run. The test changes the learning rate while it trains and
# must undo everything it did afterwards, so the section starts with what an optimizer holds and how to
# save and restore it. It reuses Part I's classifier and its batch of 32 images.
#
# ## 7. The learning-rate range test
#
# ### What an optimizer holds: `param_groups`
#
# An optimizer keeps its parameters in **param groups**: a list of dicts, each with its `params` and
# the settings that apply to them (`lr`, `momentum`, ...). Usually there is one group; several let parts
# of a model learn at different rates. A setting given in a group overrides the optimizer's default:

# %%
seed_everything(0)
model = small_classifier().to(device)
optimizer = torch.optim.SGD([{"params": model[1].parameters()},              # the hidden layer: the defaults
                             {"params": model[3].parameters(), "lr": 0.01}],  # the output layer: its own lr
                            lr=0.1, momentum=0.9)
for k, group in enumerate(optimizer.param_groups):
    print(f"group {k}: params {[tuple(p.shape) for p in group['params']]} | lr {group['lr']}, momentum {group['momentum']}")
print("every group's keys:", sorted(optimizer.param_groups[0]))

# %% [markdown]
# **Predict, then run.** This optimizer has not taken a step yet. `optimizer.state_dict()["state"]` is
# where it keeps what it learns along the way (for SGD with momentum: one momentum buffer per parameter
# tensor). How many entries does it hold right now?

# %%
guess = ...   # your prediction: an int
predict("04.optimizer_state_before_step", guess, len(optimizer.state_dict()["state"]),
        why="SGD creates a parameter's momentum buffer at its first step; before any step the state is empty")

# %% [markdown]
# `optimizer.step()` reads `group["lr"]` afresh at every step, so setting it between two steps changes
# the learning rate from the next step on. That is all a learning-rate schedule does (torch's schedulers
# included), and what the range test does at every iteration — on **every** group. One step at rate 0,
# then one at 0.1:

# %%
def train_step():
    optimizer.zero_grad()
    F.cross_entropy(model(images), labels).backward()
    optimizer.step()


hidden_weight = model[1].weight
for lr in (0.0, 0.1):
    for group in optimizer.param_groups:
        group["lr"] = lr
    weight_before = hidden_weight.detach().clone()
    train_step()
    print(f"a step with lr {lr} in every group: the hidden layer's weights moved by at most "
          f"{(hidden_weight - weight_before).abs().max().item():.4f}")

# %% [markdown]
# ### What `optimizer.state_dict()` holds
#
# Two entries: `state`, what the optimizer has accumulated per parameter (momentum buffers here; Adam
# keeps two running averages and a step count), and `param_groups`, the settings (both groups at 0.1
# now: the loop above set every group's rate). Parameters appear as **numbers**, their positions across
# the groups, not as tensors:

# %%
saved_optimizer = optimizer.state_dict()
print("keys:", list(saved_optimizer))
print("state:", {index: {name: tuple(value.shape) for name, value in entry.items()}
                 for index, entry in saved_optimizer["state"].items()})
print("param_groups:", [{"params": group["params"], "lr": group["lr"], "momentum": group["momentum"]}
                        for group in saved_optimizer["param_groups"]])

# %% [markdown]
# Because parameters are numbers, `optimizer.load_state_dict(...)` works on an optimizer built over the
# same parameters in the same order — typically a fresh one in a new process, when training resumes.
#
# ### Saving and restoring a run
#
# A checkpoint holds both state dicts. `torch.save` writes real copies of the tensors (below into memory,
# an `io.BytesIO`; a file works the same). The test of a restore: take three steps, restore, take the
# same three steps again, and compare. Restoring the model alone is not enough — the momentum buffers
# then still hold the state after the first three steps:

# %%
checkpoint = io.BytesIO()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, checkpoint)


def three_steps():
    for _ in range(3):
        train_step()
    return hidden_weight.detach().clone()


# torch.equal, no tolerance: the same steps from the same state, in one process with the same threads, repeat
# bit for bit on any CPU; a restore that missed anything shows up as any difference at all.
first_time = three_steps()
checkpoint.seek(0)
saved = torch.load(checkpoint)
model.load_state_dict(saved["model"])
optimizer.load_state_dict(saved["optimizer"])
print("model and optimizer restored, the same 3 steps again -> the same weights:", torch.equal(three_steps(), first_time))
model.load_state_dict(saved["model"])                 # the model only: the momentum stays as the 3 steps left it
print("the model alone restored, the same 3 steps again -> the same weights:  ", torch.equal(three_steps(), first_time))

# %% [markdown]
# ### The test
#
# A good learning rate is hard to guess. Leslie Smith's **range test** measures a good range in one
# short run instead of many trial runs:
#
# * train batch after batch while the learning rate grows **geometrically** from tiny (say `1e-7`) to
#   huge (say `10`) — step `i` of `n` uses `start · (end / start) ** (i / (n - 1))`, evenly spaced on a
#   log axis;
# * record the loss at every step. Batch losses are noisy, so record a smoothed one, an exponential
#   moving average: `s_i = a · loss_i + (1 - a) · s_(i-1)`;
# * at first the rate is too small to change anything and the loss is flat; then it falls, faster and
#   faster; then the rate is too large, the loss turns and explodes. **Stop** once the smoothed loss
#   exceeds a few times the lowest value seen — there is nothing more to learn;
# * plot loss against learning rate on a log axis. A good rate lies where the loss **falls fastest**,
#   clearly before the minimum (at the minimum the rate is already at the edge of diverging).
#
# The test trains the model — up to divergence. Its last steps ruin the weights, so a range test must
# put back everything it changed: parameters and buffers (BatchNorm's statistics), each module's
# train/eval mode, and the optimizer's state (Adam's moment estimates, momentum buffers, the learning
# rates). Otherwise the real training starts from the wreck.
#
# ### Trap: `state_dict()` is not a snapshot
#
# `model.state_dict()` looks like a saved copy, but it holds *references* to the live tensors. The
# optimizer updates those tensors in place, so the "snapshot" changes along with the model:

# %%
seed_everything(0)
probe = small_classifier().to(device)
probe_optimizer = torch.optim.SGD(probe.parameters(), lr=5.0)


def batch_loss():
    with torch.no_grad():
        return F.cross_entropy(probe(images), labels).item()


before = batch_loss()
live_view = probe.state_dict()                       # references to the live tensors
real_copy = copy.deepcopy(probe.state_dict())        # new tensors
for _ in range(5):                                   # the end of a range test: a huge learning rate
    probe_optimizer.zero_grad()
    F.cross_entropy(probe(images), labels).backward()
    probe_optimizer.step()
ruined = batch_loss()
probe.load_state_dict(live_view)
after_reference = batch_loss()
probe.load_state_dict(real_copy)
print(f"loss before: {before:.2f} | after 5 steps at lr 5: {ruined:.1f}")
print(f"after load_state_dict(state_dict() taken before):   {after_reference:.1f}")
print(f"after load_state_dict(deepcopy(state_dict()) taken before): {batch_loss():.2f}")

# %% [markdown]
# The same holds for `optimizer.state_dict()`. Exercise 3 asks you to write the whole test, restoring
# included, and a function that picks the learning rate from its curve; after the exercises you will
# run it on the images of this chapter.
#
# ## Summary
#
# Part I, data:
#
# * A map-style dataset is `__len__` + `__getitem__`; `TensorDataset` wraps tensors; an
#   `IterableDataset` is a stream (`__iter__`) with no shuffle and no indices to share.
# * torchvision datasets + `transforms.v2` (`ToImage`, `ToDtype(float32, scale=True)`, augmentations);
#   `ImageFolder` reads one folder per class.
# * `Normalize` with the training split's mean and std — never all the data's, nor borrowed ones.
#   Augment only for training: two dataset objects, one per transform, each wrapped in a `Subset` with
#   the split's indices (`random_split`'s subsets share one parent and its transform).
# * The loader is sampler → batch sampler → `dataset[i]` → `collate_fn`. `default_collate` stacks
#   same-shaped tensors; variable lengths need a padding `collate_fn`; a batch sampler can bucket by
#   length; `drop_last` drops the short batch.
# * Workers get copies of the dataset; `get_worker_info()` says which worker runs; an unsharded
#   iterable dataset yields everything once per worker.
# * Workers started by spawn (macOS, Windows) import what they use: dataset classes, `worker_init_fn`
#   and `collate_fn` belong in a `.py` module (`%%writefile` in a notebook), never in a notebook cell.
# * Reproducible data: `generator=torch.Generator().manual_seed(...)`; re-seed your own generators
#   in a `worker_init_fn`.
# * Bit-for-bit runs need more than seeds: the order of floating-point additions changes the last bits,
#   so GPU runs also need `torch.use_deterministic_algorithms(True)`, cuDNN's `deterministic=True` and
#   `benchmark=False`, and `CUBLAS_WORKSPACE_CONFIG` (`set_deterministic(True)`); record them with
#   `run_record()`.
# * Measure throughput before adding workers; `persistent_workers` saves start-up,
#   `prefetch_factor` sets the run-ahead, `pin_memory` helps only on the way to a GPU.
# * Push one batch through everything, and overfit it, before a long run.
#
# Part II, the learning rate:
#
# * `optimizer.param_groups` is a list of dicts (`params`, `lr`, `momentum`, ...); setting `group["lr"]`
#   takes effect at the next step. `optimizer.state_dict()` holds `state` (momentum buffers and the like,
#   created at the first step) and `param_groups` (settings, parameters as numbers). A checkpoint saves
#   the model's and the optimizer's state dicts.
# * The LR range test: geometric sweep, smoothed loss, stop at divergence, pick the steepest fall,
#   restore everything with deep copies.
#
# ---
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the
# check cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your
# notebook is graded. You can also check a file from a terminal:
# `python -m graders check pad_collate my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=pad_collate_task
# ## Exercise 1 · `pad_collate` (8 points)
#
# Write `pad_collate(batch)`, a collate function for a dataset whose items are `(sequence, label)`
# pairs: `sequence` a 1-D int64 tensor of its own length — possibly 0 — and `label` an int. Return the
# tuple `(padded, lengths, labels)`:
#
# * `padded`: int64, shape `(B, max_len)` where `B = len(batch)` and `max_len` is the longest sequence's
#   length; row `k` is sequence `k` followed by zeros;
# * `lengths`: int64, shape `(B,)`, the true length of each sequence;
# * `labels`: int64, shape `(B,)`;
#
# all in the order of `batch`. It must work as `DataLoader(dataset, batch_size=..., collate_fn=pad_collate)`,
# for a batch of one, and when every sequence is empty (then `padded` has shape `(B, 0)`). Do not
# change the tensors you are given.
#
# *Hint:* a token may itself be 0, so count the lengths from the sequences, not from the padded result.

# %% nbgrader=solution id=pad_collate_answer
def pad_collate(batch):
    """Collate (sequence, label) pairs into (padded (B, max_len), lengths (B,), labels (B,)), all int64."""
    ### BEGIN SOLUTION
    from solutions.ch04_data import pad_collate as reference

    return reference(batch)
    ### END SOLUTION

# %% nbgrader=test id=pad_collate_basics points=3
check("pad_collate", globals(), "returns_int64_tensors", "right_padding_with_zero", "works_in_dataloader")

# %% nbgrader=test id=pad_collate_hidden_order points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("pad_collate", globals(), "lengths_and_labels", "keeps_batch_order")
### END HIDDEN TESTS

# %% nbgrader=test id=pad_collate_hidden_edges points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("pad_collate", globals(), "empty_sequences", "batch_of_one", "does_not_modify_inputs")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=range_stream_task
# ## Exercise 2 · `range_stream` (8 points)
#
# Write a class `RangeStream(start, end)`, a `torch.utils.data.IterableDataset` that yields the ints
# `start, start + 1, ..., end - 1` — **each exactly once over a whole pass** of any `DataLoader` over it,
# whatever its `num_workers` (0 to 8) and batch size. That includes more workers than items (some
# workers then yield nothing) and `start == end` (nothing at all). Every new pass — a new `iter(...)`
# of the stream or of the loader — yields the whole range again.
#
# ```python
# class RangeStream(IterableDataset):
#     def __init__(self, start, end):
#         super().__init__()
#         ...
#
#     def __iter__(self):
#         ...
# ```
#
# *Hint:* section 4 showed what goes wrong without sharding, and which method runs in the worker.
# Check your class with the duplicate count from section 4: `collections.Counter` over everything a
# loader with 2 workers yields.

# %% nbgrader=solution id=range_stream_answer
from torch.utils.data import IterableDataset, get_worker_info

### BEGIN SOLUTION
from solutions.ch04_data import RangeStream
### END SOLUTION

# %% nbgrader=test id=range_stream_basics points=3
check("range_stream", globals(), "is_an_iterable_dataset", "yields_the_range", "single_process_loader")

# %% nbgrader=test id=range_stream_workers points=2
check("range_stream", globals(), "one_worker", "several_workers")

# %% nbgrader=test id=range_stream_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("range_stream", globals(), "empty_range", "fresh_pass_each_time", "more_workers_than_items")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=lr_range_test_task
# ## Exercise 3 · `lr_range_test` (11 points)
#
# Write `lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
# smooth=0.05, diverge_threshold=5.0)` returning two lists of floats, `(lrs, losses)`:
#
# * iteration `i` (counting from 0) sets the learning rate `start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))`
#   on **every** param group of `optimizer`, then trains on one batch with the model in training mode:
#   zero the gradients, forward, `loss_fn(outputs, targets)`, backward, step. `loader` yields
#   `(inputs, targets)` pairs; when it runs out before `num_iter` iterations, start it again;
# * it appends that learning rate to `lrs`, and to `losses` the smoothed loss `s_0 = loss_0`,
#   `s_i = smooth * loss_i + (1 - smooth) * s_(i-1)`, where `loss_i` is the batch's loss (before the step),
#   as a float;
# * it stops right after recording iteration `i` if `s_i > diverge_threshold * min(s_0, ..., s_i)`,
#   and otherwise after `num_iter` iterations;
# * afterwards the model's parameters and buffers, every submodule's training mode, and the optimizer's
#   state and learning rates are **exactly** as before the call;
# * it raises `ValueError` when `start_lr <= 0`, `end_lr <= start_lr` or `num_iter < 2`.
#
# Also write `suggest_lr(lrs, losses, *, skip_start=10, skip_end=5)`: drop the first `skip_start` and the
# last `skip_end` points, and return the learning rate where `numpy.gradient` of the remaining losses is
# most negative (the steepest fall), as a float. Raise `ValueError` when fewer than 2 points remain.
#
# *Hint:* section 7's trap; and `model.train()` sets every submodule, so remember each one's own mode.

# %% nbgrader=solution id=lr_range_test_answer
import copy
import math

import numpy as np


def lr_range_test(model, optimizer, loss_fn, loader, *, start_lr=1e-7, end_lr=10.0, num_iter=100,
                  smooth=0.05, diverge_threshold=5.0):
    """Smith's range test: (learning rates, smoothed losses); model and optimizer restored afterwards."""
    ### BEGIN SOLUTION
    from solutions.ch04_data import lr_range_test as reference

    return reference(model, optimizer, loss_fn, loader, start_lr=start_lr, end_lr=end_lr, num_iter=num_iter,
                     smooth=smooth, diverge_threshold=diverge_threshold)
    ### END SOLUTION


def suggest_lr(lrs, losses, *, skip_start=10, skip_end=5):
    """The learning rate at the steepest fall of the trimmed loss curve."""
    ### BEGIN SOLUTION
    from solutions.ch04_data import suggest_lr as reference

    return reference(lrs, losses, skip_start=skip_start, skip_end=skip_end)
    ### END SOLUTION

# %% nbgrader=test id=lr_range_test_basics points=4
check("lr_range_test", globals(), "validates_arguments", "geometric_sweep", "smoothed_losses", "restores_parameters_and_buffers")

# %% nbgrader=test id=lr_range_test_suggest points=1
check("lr_range_test", globals(), "suggest_lr_steepest_descent")

# %% nbgrader=test id=lr_range_test_hidden points=5
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("lr_range_test", globals(), "trains_in_train_mode", "restarts_short_loader", "stops_on_divergence", "restores_training_mode", "restores_optimizer")
### END HIDDEN TESTS

# %% nbgrader=test id=lr_range_test_hidden_suggest points=1
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("lr_range_test", globals(), "suggest_lr_too_few_points")
### END HIDDEN TESTS

# %% [markdown]
# ## Your code at work
#
# Once `RangeStream` passes, run section 4's duplicate count on it: two workers, and every int once.
# (Workers started by spawn — on macOS and Windows — can only use a `RangeStream` they can import, as
# section 4 showed: one defined in this notebook then runs here without workers, until you move it into a
# `%%writefile` module and import it from there.)

# %%
with uses_your_answer("RangeStream"):
    workers_can_use_it = RangeStream.__module__ != "__main__" or multiprocessing.get_start_method() == "fork"
    for workers in ((0, 2) if workers_can_use_it else (0,)):
        received = [x for batch in DataLoader(RangeStream(0, 10), batch_size=4, num_workers=workers) for x in batch.tolist()]
        counts = collections.Counter(received)
        print(f"num_workers={workers}: {len(received)} ints received, times each came: {sorted(set(counts.values()))}, "
              f"all of 0..9: {sorted(counts) == list(range(10))}")
    if not workers_can_use_it:
        print(f"num_workers=2: skipped, this kernel's workers start by {multiprocessing.get_start_method()} and "
              "your RangeStream is defined in the notebook")

# %% [markdown]
# And once `lr_range_test` and `suggest_lr` pass, run the range test on this chapter's images: the
# decoded `in_memory` set of section 5, split into a training and a validation part with
# `random_split`. The model is section 6's small classifier, trained with SGD and momentum.

# %%
train_part, valid_part = random_split(in_memory, [0.8, 0.2],
                                      generator=torch.Generator().manual_seed(0))
train_loader = DataLoader(train_part, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
print(f"{len(train_part)} training and {len(valid_part)} validation images")

seed_everything(0)
model = small_classifier()                    # on the CPU, like the data: for a model this small it is fastest
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
untouched = copy.deepcopy(model.state_dict())
with uses_your_answer("lr_range_test", "suggest_lr"):
    lrs, losses = lr_range_test(model, optimizer, nn.CrossEntropyLoss(), train_loader, start_lr=1e-4, end_lr=10.0, num_iter=100)
    suggested = suggest_lr(lrs, losses)
    print(f"{len(lrs)} iterations (stopped at lr {lrs[-1]:.2g}); lowest loss {min(losses):.2f} at lr "
          f"{lrs[int(np.argmin(losses))]:.2g}; suggested lr {suggested:.2g}")
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(tensor, untouched[name], rtol=0, atol=0)   # bit for bit
    print("the model's weights are exactly as before the test; optimizer lr", optimizer.param_groups[0]["lr"],
          "| momentum buffers:", len(optimizer.state_dict()["state"]))
    # The y axis from just below the lowest loss to twice the first: the diverging tail would squash the rest.
    plot_curves({"smoothed loss": (lrs, losses)}, xlabel="learning rate", ylabel="smoothed loss", logx=True,
                ylim=(0.9 * min(losses), 2 * losses[0]), marks={f"suggested {suggested:.2g}": suggested},
                title="learning-rate range test")

# %% [markdown]
# Does the suggestion hold up? Three short runs from the same starting weights and the same data order
# — 4 epochs at the suggested rate, at a rate 100 times smaller and at one 10 times larger — compared
# by their loss curves and by accuracy on the validation images. (A run that breaks down is chaotic: the
# last bits in which CPUs differ decide its details, so its line states the bounds it keeps on every machine.)

# %%
def train_briefly(lr, epochs=4):
    seed_everything(0)
    run_model = small_classifier()
    run_model.load_state_dict(untouched)
    run_optimizer = torch.optim.SGD(run_model.parameters(), lr=lr, momentum=0.9)
    loader = DataLoader(train_part, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(1))
    history = []
    run_model.train()
    for _ in range(epochs):
        for inputs, targets in loader:
            run_optimizer.zero_grad()
            loss = F.cross_entropy(run_model(inputs), targets)
            loss.backward()
            run_optimizer.step()
            history.append(loss.item())
    run_model.eval()
    with torch.no_grad():
        inputs, targets = default_collate(list(valid_part))
        accuracy = (run_model(inputs).argmax(dim=1) == targets).float().mean().item()
    return history, accuracy


with uses_your_answer("lr_range_test", "suggest_lr"):
    curves = {}
    for name, lr in (("suggested", suggested), ("100x smaller", suggested / 100), ("10x larger", suggested * 10)):
        history, accuracy = train_briefly(lr)
        curves[f"{name}, lr {lr:.2g}"] = history
        last_epoch = np.mean(history[-len(train_loader):])
        if name == "10x larger":
            # At 10 times the rate the steps overshoot, nearly every ReLU dies (2 of 64 still fired) and the model
            # predicts one class for almost everything. How many items it gets right, and the loss's digits, are
            # decided by last-bit differences: 1.78 and 23% on one CPU, 1.77 and 24% on another. So it prints the
            # bounds it keeps: a loss near ln 6 = 1.79, that of a uniform guess, and an accuracy near the 22.5%
            # of the largest class.
            shown = f"last-epoch loss {over(last_epoch, 1.5)} | validation accuracy {under(100 * accuracy, 40, '%')}"
        else:
            shown = f"last-epoch loss {last_epoch:.2f} | validation accuracy {accuracy:.0%}"
        print(f"{name:12s} lr {lr:<8.2g} {shown}")
    plot_curves(curves, xlabel="step", ylabel="training loss", logy=True, title="4 epochs at three learning rates")

# %%
worker_code.cleanup()                        # the workers' modules, and the stand-in's images if it made them:
image_dataset.cleanup()                      # a killed kernel (nbval's, nbgrader validate's) would leave both
print("workers' modules left:", Path(WORKER_CODE).exists(),
      "| stand-in images left:", image_dataset.kind == "shapes" and image_dataset.root.exists())
