# %% [markdown]
# # 01 · Tensors: storage, strides and contiguity
#
# *Expected time: about 1 h 45 min — 45 min to read and run the cells, 1 h for the exercises
# (an estimate from the chapter's length; take the time it takes).*
#
# A tensor looks like a grid of numbers, but PyTorch keeps the numbers somewhere else: in one flat,
# one-dimensional block of memory called the **storage**. The tensor itself is only a small record
# that says how to *read* that block — where to start, how far to jump for each index, what type
# the numbers are. Most of the surprises in everyday PyTorch (a `view` that refuses to work, a
# write that changes a tensor you did not touch, a `reshape` that quietly doubles your memory) come
# straight from this split.
#
# **In this chapter** you will
# 1. take a tensor apart into storage, shape, strides and storage offset;
# 2. see which operations make *views* that share storage, and prove it by writing through them
#    (NumPy arrays included);
# 3. learn PyTorch's exact rule for `is_contiguous()`, and the difference between `view` and `reshape`;
# 4. see broadcasting as a stride-0 view, and the shape bug it hides;
# 5. meet the dtype traps that tabular and NumPy data set;
# 6. write three graded exercises: `contiguous_strides`, `is_contiguous` and `sliding_window`.
#
# Cells headed **Predict, then run** ask you to guess before you look: replace the `...` after `guess =`
# with your prediction and run the cell. It tells you whether you were right and why; a wrong guess
# never stops the notebook.
#
# Every chapter opens the same way: fixed seeds, the device, the versions in use.

# %% nbgrader=readonly id=opening
import numpy as np
import torch

from coursekit import start_chapter
from coursekit.plots import plot_bars, show_layouts
from coursekit.practice import predict, uses_your_answer
from graders import check

device = start_chapter("01_tensors")

# %% [markdown]
# ## 1. A tensor is a view over flat storage
#
# Five facts describe how a tensor reads its storage:
#
# | attribute | meaning |
# |---|---|
# | `dtype` | the type of one element, and so its size in bytes (`element_size()`) |
# | `shape` | how many indices each dim has |
# | `stride()` | how many *elements* of storage to skip to move one step along each dim |
# | `storage_offset()` | where in the storage element 0 of the tensor lives |
# | `untyped_storage()` | the memory block itself (its `data_ptr()` is the block's address) |
#
# The element at index `(i, j)` of a 2-D tensor lives at storage position
# `storage_offset + i * stride[0] + j * stride[1]`. That one formula is the whole story.

# %%
t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
print(t)
print("shape", tuple(t.shape), "| stride", t.stride(), "| offset", t.storage_offset(), "| dtype", t.dtype)
print("storage holds", t.untyped_storage().nbytes(), "bytes =", t.untyped_storage().nbytes() // t.element_size(), "elements")

i, j = 2, 1
position = t.storage_offset() + i * t.stride(0) + j * t.stride(1)
flat = t.flatten()  # t is contiguous, so flatten() is a view in storage order
print(f"t[{i}, {j}] = {t[i, j].item()} and storage[{position}] = {flat[position].item()}")

# %% [markdown]
# **Predict, then run.** Slicing makes a new record over the same storage. What are the strides and
# the storage offset of `t[1:, ::2]` (rows 1 and 2, every other column)? Use the formula: where does
# its element `(0, 0)` live, and how far apart are its neighbours?

# %%
guess = ...   # your prediction: ((stride0, stride1), storage_offset)
corner = t[1:, ::2]
predict("01.slice_step_layout", guess, (corner.stride(), corner.storage_offset()),
        why="the step 2 doubles the column stride (1 -> 2); starting at row 1 skips one row of 4")

# %% [markdown]
# ## 2. Views share storage
#
# Many operations do not copy anything: they return a new record (new shape, strides, offset)
# pointing at the **same** storage. Such a result is a *view*. The picture below draws each tensor's
# elements on top and its storage underneath; a cell and the storage slot it reads share a colour,
# and `@k` means "storage index k". Grey slots exist but are not read by that view.

# %%
base = torch.arange(6.0).reshape(2, 3)
show_layouts([
    (base, "base"),
    (base.t(), "base.t()"),
    (torch.arange(8.0)[1::3], "arange(8)[1::3]"),
    (torch.arange(3.0).expand(2, 3), "arange(3).expand(2, 3)"),
])

# %% [markdown]
# What the picture says:
# * **transpose** swaps the strides, `(3, 1)` → `(1, 3)`: same storage, read column by column;
# * a **step** in a slice multiplies the stride (`[1::3]` → stride 3) and a start moves the offset;
# * **expand** uses stride **0**: moving along that dim does not move in storage, so many cells read
#   one slot. No memory is used for the copies.
#
# Here is a longer list of view-making operations, each checked by comparing storage addresses:

# %%
x = torch.arange(24.0).reshape(2, 3, 4)
views = {
    "x[1]": x[1],
    "x[:, 1:, ::2]": x[:, 1:, ::2],
    "x.transpose(0, 2)": x.transpose(0, 2),
    "x.permute(2, 0, 1)": x.permute(2, 0, 1),
    "x.narrow(2, 1, 2)": x.narrow(2, 1, 2),
    "x[0, 0].unfold(0, 2, 1)": x[0, 0].unfold(0, 2, 1),
    "x.as_strided((2, 2), (1, 4), 5)": x.as_strided((2, 2), (1, 4), 5),
    "x[:1].expand(3, 3, 4)": x[:1].expand(3, 3, 4),
    "x.clone()": x.clone(),
}
for name, v in views.items():
    shares = v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    print(f"{name:32s} shape {str(tuple(v.shape)):12s} stride {str(v.stride()):12s} offset {v.storage_offset():2d}  shares storage: {shares}")

# %% [markdown]
# Compare storages, not tensors: a tensor's own `data_ptr()` is the address of *its first element*,
# so a slice that starts further in has a different `data_ptr()` from its base although the memory is
# the same. The gap is the storage offset times the element size:

# %%
tail = x[0, 0, 1:]
print("x.data_ptr() == tail.data_ptr():", x.data_ptr() == tail.data_ptr())
print("their storages' data_ptr() equal:", x.untyped_storage().data_ptr() == tail.untyped_storage().data_ptr())
print("gap in bytes:", tail.data_ptr() - x.data_ptr(), "= offset", tail.storage_offset(), "x", x.element_size(), "bytes")

# %% [markdown]
# **Predict, then run.** Which of these four share storage with `base` (the `(2, 3)` tensor drawn
# above)? The last two pick the same elements, columns 0 and 2, in two different ways.

# %%
candidates = [base[0], base.t(), base[:, ::2], base[:, [0, 2]]]
guess = ...   # your prediction: four True/False in the order above, e.g. (True, False, False, True)
shares = tuple(v.untyped_storage().data_ptr() == base.untyped_storage().data_ptr() for v in candidates)
predict("01.which_share_storage", guess, shares,
        why="indexing with a list of positions (advanced indexing) always copies; a stepped slice is a view")

# %% [markdown]
# ### Trap: writing through a view changes the original
#
# Because a view *is* the same memory, an in-place write through it changes the base — and every
# other view of that base. This is the point of views (cheap slicing) and a classic bug when you
# meant to keep the original.

# %%
scores = torch.tensor([3.0, 1.0, 4.0, 1.0, 5.0])
top_two = scores[:2]          # a view, not a copy
top_two.zero_()               # "reset my copy" ...
print("scores after zeroing the slice:", scores)   # ... and the original changed too

scores = torch.tensor([3.0, 1.0, 4.0, 1.0, 5.0])
top_two = scores[:2].clone()  # the fix: clone() gives new storage
top_two.zero_()
print("with clone():                  ", scores)

# %% [markdown]
# ### Trap: NumPy arrays and tensors share memory, both ways
#
# `torch.from_numpy(array)` returns a tensor over the array's own buffer, and `tensor.numpy()` returns an
# array over the tensor's storage. Neither copies, so a write on one side shows on the other.
# (`torch.tensor(array)` does copy.) The surprise comes when you convert to NumPy to get "a copy to
# edit" — for plotting, clipping, post-processing — and the tensor changes under you.

# %%
array = np.zeros(3)
shared, copied = torch.from_numpy(array), torch.tensor(array)
array[0] = 7.0
print("from_numpy:", shared, "| torch.tensor:", copied)

weights = torch.ones(3)
edited = weights.numpy()          # "a NumPy copy to edit" ...
edited[0] = -1.0
print("weights after editing weights.numpy():       ", weights)   # ... was not a copy

weights = torch.ones(3)
edited = weights.numpy().copy()   # the fix: .copy() gives the array its own memory
edited[0] = -1.0
print("weights after editing weights.numpy().copy():", weights)

# %% [markdown]
# `.numpy()` refuses a tensor that requires grad: NumPy cannot record operations for autograd, so
# PyTorch makes you leave the graph on purpose with `detach()`. The detached array is *still the same
# memory* — a write into it changes the tensor, and autograd never hears of it. Use
# `w.detach().numpy().copy()` (or `w.detach().clone().numpy()`) when you want an independent array.

# %%
w = torch.zeros(3, requires_grad=True)
try:
    w.numpy()
except RuntimeError as error:
    print("w.numpy(): RuntimeError:", str(error).splitlines()[0])
w_array = w.detach().numpy()      # works: same memory, outside the graph
w_array[0] = 5.0
print("w after writing 5 into w.detach().numpy():", w)
print("on a CPU tensor .cpu() returns the tensor itself:", weights.cpu() is weights)

# %% [markdown]
# A NumPy array always lives in CPU memory, so a tensor on a GPU has no NumPy view at all: `.numpy()` on a
# CUDA tensor raises a `TypeError` that ends "Use Tensor.cpu() to copy the tensor to host memory first".
# `t.cpu().numpy()` (with `detach()` first if `t` requires grad) then gives an array over that CPU *copy*,
# so writing into it does not change the GPU tensor. Mind the difference the last line above shows: on a
# CPU tensor `.cpu()` returns the tensor itself, so the same `t.cpu().numpy()` *shares* memory there.
# (This chapter does not run the GPU case: the machine may have no GPU. Chapter 05 is about devices.)

# %% [markdown]
# ## 3. Contiguity, `view` and `reshape`
#
# A tensor is **contiguous** (C-ordered) when reading it index by index, last dim fastest, walks its
# storage one element at a time with no gaps. PyTorch's exact rule, the one `is_contiguous()` applies:
#
# * a tensor with **no elements** is contiguous;
# * otherwise, walk the dims from the **last** to the first, **skipping dims of size 1**; the first
#   stride met must be 1, and each following one must equal the product of the sizes already walked.
#
# Size-1 dims are skipped because you never step along them, so their stride is never used. That is
# why PyTorch may report odd strides for size-1 dims and still call the tensor contiguous.

# %%
layouts = {
    "base (3, 4)": torch.empty(3, 4),
    "transposed": torch.empty(3, 4).t(),
    "every other column": torch.empty(3, 4)[:, ::2],
    "first two rows": torch.empty(3, 4)[:2],
    "size-1 dim, odd stride": torch.empty(3, 4).as_strided((3, 1, 4), (4, 99, 1)),
    "expanded": torch.empty(1, 4).expand(3, 4),
    "empty, odd strides": torch.empty(0).as_strided((0, 5), (7, 3)),
}
for name, v in layouts.items():
    print(f"{name:24s} shape {str(tuple(v.shape)):10s} stride {str(v.stride()):10s} contiguous: {v.is_contiguous()}")

# %% [markdown]
# **Predict, then run.** Is the first column of a `(3, 4)` tensor, `[:, :1]`, contiguous? And the
# transpose of a `(4, 1)` column, which has shape `(1, 4)`? Walk the rule above, skipping size-1 dims.

# %%
first_column = torch.empty(3, 4)[:, :1]   # shape (3, 1)
column_t = torch.empty(4, 1).t()          # shape (1, 4)
guess = ...   # your prediction: (first_column contiguous?, column_t contiguous?), e.g. (True, True)
predict("01.contiguous_size_one", guess, (first_column.is_contiguous(), column_t.is_contiguous()),
        why=f"strides {first_column.stride()}: after skipping the size-1 dim, 4 is not 1; "
            f"strides {column_t.stride()}: only the size-4 dim counts, and its stride is 1")

# %% [markdown]
# ### Trap: `view` refuses a layout it cannot describe
#
# `view` never copies: it only writes a new record (shape, strides) over the same storage. When the
# elements are not laid out in the order the new shape needs, no such record exists, and `view` raises.
# Being non-contiguous is not the test: `view` can split or merge dims whose elements are evenly spaced,
# whatever the rest of the layout.

# %%
m = torch.arange(6.0).reshape(2, 3).t()   # transposed: not contiguous
try:
    m.view(6)
except RuntimeError as error:
    print("m.view(6): RuntimeError:", str(error).split(".")[0])
wide = torch.arange(24.0).reshape(2, 3, 4).transpose(0, 1)   # shape (3, 2, 4), not contiguous either
split = wide.view(3, 2, 2, 2)   # splits the last dim only: its 4 elements are still side by side
print("wide contiguous:", wide.is_contiguous(), "| wide.view(3, 2, 2, 2) works, strides", split.stride(),
      "| same storage:", split.untyped_storage().data_ptr() == wide.untyped_storage().data_ptr())

# %% [markdown]
# `reshape` "works" — by returning a view when it can and copying when it has to, without telling you
# which. So a write into its result reaches the original in one case and not in the other.
# `contiguous()` makes the copy explicit (and is free on a tensor that is already contiguous: it
# returns the tensor itself).

# %%
flat = m.reshape(6)
print("reshape of the transposed m copied:", flat.untyped_storage().data_ptr() != m.untyped_storage().data_ptr())
flat[0] = 100.0
print("m[0, 0] after writing 100 into flat[0]:", m[0, 0].item())
rows = torch.arange(6.0).reshape(2, 3)
as_view = rows.reshape(3, 2)          # contiguous input: reshape returns a view
as_view[0, 0] = 100.0
print("rows[0, 0] after writing 100 into rows.reshape(3, 2):", rows[0, 0].item())
c = torch.arange(6.0)
print("contiguous() on a contiguous tensor returns itself:", c.contiguous() is c)

# %% [markdown]
# ### Memory formats: `channels_last`
#
# Contiguity is about one particular order. Image batches `(N, C, H, W)` can also be stored
# **channels last** — the channel values of one pixel side by side — which many convolution kernels
# prefer. The shape stays `(N, C, H, W)`; only the strides change.

# %%
images = torch.empty(2, 3, 4, 5)
cl = images.to(memory_format=torch.channels_last)
print("NCHW strides         ", images.stride(), "contiguous:", images.is_contiguous())
print("channels_last strides", cl.stride(), "contiguous:", cl.is_contiguous(),
      "| channels_last contiguous:", cl.is_contiguous(memory_format=torch.channels_last))

# %% [markdown]
# ## 4. Broadcasting is a stride-0 view
#
# When shapes differ, PyTorch lines them up from the right, treats a missing dim on the left as size 1,
# and stretches every size-1 dim to match — without copying, by giving the stretched dim stride 0,
# exactly like `expand`:

# %%
col = torch.tensor([[1.0], [2.0], [3.0]])      # (3, 1)
row = torch.tensor([[10.0, 20.0, 30.0, 40.0]])  # (1, 4)
col_b, row_b = torch.broadcast_tensors(col, row)
print("col as broadcast:", tuple(col_b.shape), "strides", col_b.stride())
print("row as broadcast:", tuple(row_b.shape), "strides", row_b.stride())
print(col + row)

# %% [markdown]
# **Predict, then run.** What is the shape of `col + torch.zeros(2, 1, 4)`, with `col` the `(3, 1)`
# tensor above?

# %%
guess = ...   # your prediction: a shape, e.g. (3, 4)
predict("01.broadcast_shape", guess, tuple((col + torch.zeros(2, 1, 4)).shape),
        why="col counts as (1, 3, 1); against (2, 1, 4) every size-1 dim stretches, giving (2, 3, 4)")

# %% [markdown]
# ### Trap: a shape bug that broadcasting hides
#
# A model returns predictions of shape `(N, 1)`; the targets have shape `(N,)`. Subtracting them does
# not fail: the targets count as `(1, N)`, so `(N, 1) - (N,)` broadcasts to `(N, N)`, every prediction
# minus every target. The "loss" is a number, training runs, and it is simply wrong.

# %%
predictions = torch.tensor([[1.0], [2.0], [3.0]])   # (3, 1), as a Linear(…, 1) layer returns them
targets = torch.tensor([1.0, 2.0, 3.0])             # (3,)
wrong = ((predictions - targets) ** 2).mean()
print("difference shape:", tuple((predictions - targets).shape), "| loss:", wrong.item(), "(a perfect fit should give 0)")
right = ((predictions.squeeze(1) - targets) ** 2).mean()
print("after squeeze(1): loss", right.item())

# %% [markdown]
# The habit that prevents it: check shapes where they meet — `assert predictions.shape == targets.shape` —
# or compare with `torch.testing.assert_close`, which refuses to broadcast.

# %%
try:
    torch.testing.assert_close(predictions, targets)
except AssertionError as error:
    print("assert_close:", str(error).splitlines()[0])

# %% [markdown]
# ### Measured: what a stride-0 view saves
#
# `expand` adds no memory; `repeat` materialises the copies. The numbers below are the bytes each
# result's storage holds.

# %%
one_row = torch.randn(1, 1000)
sizes = {
    "the row": one_row.untyped_storage().nbytes(),
    "expand(1000, 1000)": one_row.expand(1000, 1000).untyped_storage().nbytes(),
    "repeat(1000, 1)": one_row.repeat(1000, 1).untyped_storage().nbytes(),
}
for name, nbytes in sizes.items():
    print(f"{name:20s} {nbytes / 1024:10.1f} KiB")
plot_bars({k: v / 1024 for k, v in sizes.items()}, ylabel="KiB of storage", title="expand shares, repeat copies")

# %% [markdown]
# ## 5. dtype traps
#
# PyTorch's default floating type is `float32`. Two common sources hand you something else:
#
# * **integer data** — labels, counts, categorical columns — becomes `int64`, and many operations
#   refuse it or truncate silently;
# * **NumPy** uses `float64` by default, and `torch.from_numpy` keeps it, so a `float32` model meets
#   `float64` input.

# %%
table = [[5, 3], [2, 8]]                      # e.g. counts read from a CSV
counts = torch.tensor(table)
print("dtype from integer data:", counts.dtype)
try:
    counts.mean()
except RuntimeError as error:
    print("counts.mean() raised:", str(error).splitlines()[0])
print("fix: counts.float().mean() =", counts.float().mean().item())

features = torch.from_numpy(np.random.rand(4, 3))     # float64 from NumPy
layer = torch.nn.Linear(3, 2)                          # float32 parameters
print("from_numpy dtype:", features.dtype, "| layer dtype:", layer.weight.dtype)
try:
    layer(features)
except RuntimeError as error:
    print("layer(features):", str(error).splitlines()[0])
print("fix: layer(features.float()) has shape", tuple(layer(features.float()).shape))

# %% [markdown]
# One more quiet one: integer division. `/` always gives a float, `//` floors, and integer
# tensors truncate when you write floats *into* them.

# %%
n = torch.tensor([7, 8])
print("7 / 2 ->", (n / 2).tolist(), "| 7 // 2 ->", (n // 2).tolist())
n[0] = 2.9          # written into an int64 tensor: truncated, no warning
print("after writing 2.9 into an int64 tensor:", n.tolist())

# %% [markdown]
# **Predict, then run.** Two dtypes: `torch.tensor` (not `from_numpy`) of a NumPy float array, and the
# int64 `counts` from above plus the Python float `0.5`.

# %%
guess = ...   # your prediction: two dtype names, e.g. ("float32", "int64")
from_array = torch.tensor(np.array([0.5, 1.5]))
predict("01.dtype_sources", guess, (from_array.dtype, (counts + 0.5).dtype),
        why="torch.tensor keeps the array's float64; int64 plus a Python float gets the default float32")

# %% [markdown]
# ## Summary
#
# * A tensor = storage + dtype + shape + strides + storage offset; element `(i, j)` lives at
#   `offset + i·stride[0] + j·stride[1]`.
# * Slicing, `t`/`transpose`/`permute`, `narrow`, `expand`, `unfold`, `as_strided` make views that share
#   storage; writes go through; `clone()`, `torch.tensor(...)` and indexing with a list copy.
# * `torch.from_numpy` and `.numpy()` share memory with NumPy (`.copy()` when you want independence);
#   `.numpy()` needs `detach()` on a tensor that requires grad, and `.cpu()` first on a GPU.
# * Contiguous = strides are the C-order products (size-1 dims skipped; empty tensors always count).
#   `view` needs a layout it can describe (not necessarily contiguous); `reshape` returns a view when it
#   can and copies silently when it must, so writes into it may or may not reach the original.
# * Broadcasting = stride-0 expansion; check shapes where tensors meet.
# * Convert integer and NumPy `float64` *features* deliberately (`.float()`); class labels stay
#   `int64`, which is what `cross_entropy` and indexing expect.

# %% [markdown]
# # Exercises
#
# Each exercise has a cell for your answer and check cells below it. Run your answer cell, then the
# check cells: each check prints `PASS` or `FAIL` with what went wrong. More checks run when your
# notebook is graded. You can also check a file from a terminal:
# `python -m graders check sliding_window my_answer.py`. That runs every check of
# the exercise, the hidden ones included.
#
# When your notebook is graded, only the opening cell (the imports at the top) and your answer cells run,
# without the demonstrations in between: put everything your answer needs, helpers included, in its
# answer cell.

# %% [markdown] nbgrader=readonly id=contiguous_strides_task
# ## Exercise 1 · `contiguous_strides` (6 points)
#
# Write `contiguous_strides(shape)` returning the strides, in elements, of a **new C-ordered tensor** of
# that shape — a tuple of ints equal to `torch.empty(shape).stride()` for every shape, including the
# 0-d shape `()`, dims of size 1 and dims of size 0. Use plain Python arithmetic: do not create a tensor
# of that shape (your function must work for shapes far too large to allocate).
#
# *Hint:* the last dim has stride 1; each dim's stride is the product of the sizes after it. Look back at
# the strides printed in section 2 — and find out what `torch.empty(2, 0, 3).stride()` is.

# %% nbgrader=solution id=contiguous_strides_answer
def contiguous_strides(shape):
    """Strides of a new C-ordered tensor of `shape`, as a tuple of ints."""
    ### BEGIN SOLUTION
    from solutions.ch01_tensors import contiguous_strides as reference

    return reference(shape)
    ### END SOLUTION

# %% nbgrader=test id=contiguous_strides_basics points=2
check("contiguous_strides", globals(), "returns_tuple_of_ints", "ordinary_shapes")

# %% nbgrader=test id=contiguous_strides_special_dims points=1
check("contiguous_strides", globals(), "scalar_and_size_one_dims")

# %% nbgrader=test id=contiguous_strides_hidden points=3
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("contiguous_strides", globals(), "size_zero_dims", "any_sequence_and_random_shapes", "pure_python")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=is_contiguous_task
# ## Exercise 2 · `is_contiguous` (6 points)
#
# Write `is_contiguous(shape, strides)` returning `True` or `False` by PyTorch's rule: a tensor with no
# elements is contiguous; otherwise, walking from the last dim to the first and skipping dims of size 1,
# each stride must equal the product of the sizes after it. It must agree with
# `torch.empty(n).as_strided(shape, strides).is_contiguous()` for any storage size `n` large enough for
# that view. Raise `ValueError` when `shape` and `strides` have different lengths.

# %% nbgrader=solution id=is_contiguous_answer
def is_contiguous(shape, strides):
    """True when a view with this shape and these strides is C-contiguous (PyTorch's rule)."""
    ### BEGIN SOLUTION
    from solutions.ch01_tensors import is_contiguous as reference

    return reference(shape, strides)
    ### END SOLUTION

# %% nbgrader=test id=is_contiguous_basics points=2
check("is_contiguous", globals(), "contiguous_layouts", "non_contiguous_layouts")

# %% nbgrader=test id=is_contiguous_size_one_and_errors points=2
check("is_contiguous", globals(), "size_one_dims_ignored", "length_mismatch_raises")

# %% nbgrader=test id=is_contiguous_hidden points=2
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("is_contiguous", globals(), "empty_and_scalar", "random_layouts")
### END HIDDEN TESTS

# %% [markdown] nbgrader=readonly id=sliding_window_task
# ## Exercise 3 · `sliding_window` (8 points)
#
# Write `sliding_window(x, size, step=1)`. For a 1-D tensor `x` of **any stride and storage offset**,
# return a view of shape `((len(x) - size) // step + 1, size)` whose row `i` is
# `x[i*step : i*step + size]`. Build it with `x.as_strided(...)` so that it shares `x`'s storage (no
# copy): writing into the result writes into `x`. It must equal `x.unfold(0, size, step)` — without
# calling `unfold`. Raise `ValueError` when `x` is not 1-D, `size < 1`, `step < 1` or `size > len(x)`.
#
# *Hint:* one step along `x` is `x.stride(0)` storage elements, and `x` starts at `x.storage_offset()`.
# Try your function on `torch.arange(20.0)[3::2]`, not only on a fresh `arange`.

# %% nbgrader=solution id=sliding_window_answer
def sliding_window(x, size, step=1):
    """A (num_windows, size) view of 1-D x whose row i is x[i*step : i*step + size]."""
    ### BEGIN SOLUTION
    from solutions.ch01_tensors import sliding_window as reference

    return reference(x, size, step)
    ### END SOLUTION

# %% nbgrader=test id=sliding_window_basics points=2
check("sliding_window", globals(), "contiguous_input", "is_a_view")

# %% nbgrader=test id=sliding_window_strides_and_errors points=2
check("sliding_window", globals(), "strided_input", "validation")

# %% nbgrader=test id=sliding_window_hidden points=4
# Hidden tests: more checks run here when your notebook is graded.
### BEGIN HIDDEN TESTS
check("sliding_window", globals(), "storage_offset", "edge_sizes", "does_not_call_unfold", "random_layouts_and_dtypes")
### END HIDDEN TESTS

# %% [markdown]
# Once your windows pass, look at them drawn over `x`'s storage: overlapping windows read the same
# slots, and nothing was copied.

# %%
with uses_your_answer("sliding_window"):
    x = torch.arange(10.0)[1::2]
    show_layouts([(x, "x = arange(10)[1::2]"), (sliding_window(x, 3, 1), "sliding_window(x, 3, 1)")])
