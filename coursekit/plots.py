"""Plotting helpers shared by the chapters (one place, so every chapter draws the same way)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only annotations name torch: make grade's class report imports this module, and torch is 1.7 s
    import torch


class _Pyplot:
    """matplotlib.pyplot, imported at its first use. Importing this module then costs nothing instead of 0.4 s,
    which every check of a grade of record pays (coursekit.record runs the chapter's opening cell, which imports
    these helpers, in each check's process without drawing anything)."""

    def __getattr__(self, name: str):
        import matplotlib.pyplot

        return getattr(matplotlib.pyplot, name)


plt = _Pyplot()


def Rectangle(*args, **kwargs):  # noqa: N802 - stands for matplotlib's class, imported at first use
    from matplotlib.patches import Rectangle as rectangle

    return rectangle(*args, **kwargs)


def _storage_index_grid(t: torch.Tensor) -> list[list[int]]:
    """For a 1-D or 2-D tensor, the storage index of every element (offset + sum of index * stride)."""
    t2 = t.reshape(1, -1) if t.dim() == 1 else t  # reshape of a 1-D view keeps its strides
    rows, cols = t2.shape
    s0, s1 = (0, t.stride(0)) if t.dim() == 1 else t.stride()
    return [[t.storage_offset() + i * s0 + j * s1 for j in range(cols)] for i in range(rows)]


def show_layouts(tensors: Sequence[tuple[torch.Tensor, str]], storage_label: str = "storage"):
    """Draw each tensor's elements as a grid above the flat storage they live in.

    A cell and the storage slot it reads share a colour and a number (the storage index), so a
    transpose, a step or an expand (several cells on one slot) can be seen at a glance. Slots the
    view never reads stay grey.
    """
    n = len(tensors)
    fig, axes = plt.subplots(2, n, figsize=(3.2 * n, 3.4), gridspec_kw={"height_ratios": [3, 1]}, squeeze=False)
    cmap = plt.get_cmap("tab20")
    for k, (t, title) in enumerate(tensors):
        if t.dim() not in (1, 2):
            raise ValueError("show_layouts draws 1-D and 2-D tensors")
        grid = _storage_index_grid(t)
        storage_size = t.untyped_storage().nbytes() // t.element_size()
        flat = t.as_strided((storage_size,), (1,), 0).tolist()
        top, bottom = axes[0][k], axes[1][k]
        for i, row in enumerate(grid):
            for j, index in enumerate(row):
                top.add_patch(Rectangle((j, -i - 1), 1, 1, facecolor=cmap(index % 20), edgecolor="black"))
                top.text(j + 0.5, -i - 0.5, f"{flat[index]:g}\n@{index}", ha="center", va="center", fontsize=8)
        top.set_xlim(0, max(len(grid[0]), 1))
        top.set_ylim(-len(grid), 0)
        top.set_aspect("equal")
        top.axis("off")
        top.set_title(f"{title}\nshape {tuple(t.shape)} stride {t.stride()}\noffset {t.storage_offset()}", fontsize=9)
        used = {index for row in grid for index in row}
        for index, value in enumerate(flat):
            colour = cmap(index % 20) if index in used else "0.9"
            bottom.add_patch(Rectangle((index, 0), 1, 1, facecolor=colour, edgecolor="black"))
            bottom.text(index + 0.5, 0.5, f"{value:g}", ha="center", va="center", fontsize=7)
        bottom.set_xlim(0, storage_size)
        bottom.set_ylim(0, 1)
        bottom.set_aspect("equal")
        bottom.set_yticks([])
        bottom.set_xticks([i + 0.5 for i in range(storage_size)], [str(i) for i in range(storage_size)], fontsize=6)
        bottom.set_xlabel(f"{storage_label} (index: value)", fontsize=8)
        for side in ("top", "right", "left"):
            bottom.spines[side].set_visible(False)
    fig.tight_layout()
    plt.show()


def plot_curves(curves: dict[str, Sequence[float]], *, xlabel: str = "step", ylabel: str = "loss",
                title: str | None = None, logx: bool = False, logy: bool = False, marks: dict[str, float] | None = None,
                legend_outside: bool = False, ylim: tuple[float | None, float | None] | None = None):
    """Several named curves on one axis (loss curves, timings); ``marks`` draws labelled vertical lines;
    ``legend_outside`` puts the legend to the right of the axes, where it cannot cover a curve; ``ylim`` keeps the
    y-axis to the informative part (a diverging loss would otherwise flatten everything before it).

    A curve given as a plain sequence is drawn against its index (a step, a layer): whole-number ticks only."""
    fig, ax = plt.subplots(figsize=(8.5, 3.6) if legend_outside else None)
    for name, values in curves.items():
        ax.plot(list(values), label=name) if not isinstance(values, tuple) else ax.plot(*values, label=name)
    for name, x in (marks or {}).items():
        ax.axvline(x, linestyle="--", color="black", linewidth=1)
        ax.annotate(name, (x, 0.95), xycoords=("data", "axes fraction"), ha="left", fontsize=8)
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    xs = [x for values in curves.values() if isinstance(values, tuple) for x in values[0]]
    if xs and not logx and all(float(x).is_integer() for x in xs):
        ax.set_xticks(sorted(set(xs)))  # counts (workers, epochs): no fractional ticks
    elif not xs:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # indices: "layer 2.5" does not exist
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if legend_outside:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    else:
        ax.legend()
    fig.tight_layout()
    plt.show()


def plot_bars(values: dict[str, float], *, ylabel: str, title: str | None = None, fmt: str = "{:.3g}",
              horizontal: bool = False, colors: Sequence[str] | None = None):
    """A labelled bar chart (measured numbers: one bar a setting, the value written on it).

    ``horizontal=True`` lays the bars out sideways, first setting on top, for labels too long to stand under a
    bar (lines of code, say); ``ylabel`` then labels the value axis, which is the x axis. ``colors`` gives one
    colour per bar (e.g. red for the bad settings)."""
    names, numbers = list(values), list(values.values())
    color = list(colors) if colors is not None else "tab:blue"
    if not horizontal:
        fig, ax = plt.subplots()
        bars = ax.bar(names, numbers, color=color)
        for bar, value in zip(bars, numbers):
            ax.annotate(fmt.format(value), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                        va="bottom", fontsize=8)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.08)  # room for the value written on the tallest bar
        ax.set(ylabel=ylabel, title=title)
    else:
        fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(names) + 1.2))
        rows = range(len(names))[::-1]  # the first setting on top
        ax.barh(list(rows), numbers, color=color)
        ax.set_yticks(list(rows), names)
        for row, value in zip(rows, numbers):
            ax.annotate(" " + fmt.format(value), (value, row), va="center", fontsize=8)
        ax.set_xlim(0, max(numbers, default=1.0) * 1.15)  # room for the value written after the longest bar
        ax.set(xlabel=ylabel, title=title)
    fig.tight_layout()
    plt.show()


def plot_histograms(samples: dict[str, "torch.Tensor"], *, bins: int = 40, title: str | None = None,
                    xlabel: str = "value", sharex: bool = False):
    """One small histogram per named tensor, side by side (e.g. activations captured with hooks).

    ``sharex=True`` puts every panel on one x-axis, so a spread that shrinks or grows is seen as such.
    """
    n = len(samples)
    fig, axes = plt.subplots(1, n, figsize=(2.6 * n, 2.6), squeeze=False, sharey=False, sharex=sharex)
    for ax, (name, values) in zip(axes[0], samples.items()):
        flat = values.detach().float().flatten().cpu()
        ax.hist(flat.numpy(), bins=bins, color="tab:blue")
        ax.set_title(f"{name}\nmean {flat.mean():.2f}  std {flat.std():.2f}", fontsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plt.show()


def show_image_grid(images: "torch.Tensor", labels: Sequence[str] | None = None, *, columns: int = 8,
                    title: str | None = None, value_range: tuple[float, float] = (0.0, 1.0)):
    """A grid of images from a batch shaped (N, C, H, W) or (N, H, W), with optional labels.

    Every image is drawn on the same fixed scale, ``value_range`` (black to white; the [0, 1] a model usually
    expects), and captioned with its own smallest and largest value. Stretching each image to its own range,
    as ``imshow`` does by default, made a 0-255 image or a nearly black one look exactly like a correct one.
    """
    images = images.detach().cpu()
    if images.dim() == 4 and images.shape[1] == 1:
        images = images[:, 0]
    low, high = value_range
    n = images.shape[0]
    rows = (n + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(1.3 * columns, 1.7 * rows), squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.axis("off")
            continue
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        image = images[k].float()
        if image.dim() == 3:  # (C, H, W) colour image: imshow takes RGB in [0, 1], so scale to that first
            ax.imshow(((image - low) / (high - low)).clamp(0, 1).permute(1, 2, 0).numpy())
        else:
            ax.imshow(image.numpy(), cmap="gray", vmin=low, vmax=high)
        ax.set_xlabel(f"{image.min().item():.3g} to {image.max().item():.3g}", fontsize=6)
        if labels is not None:
            ax.set_title(str(labels[k]), fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plt.show()


def plot_phases(phases: Sequence[str], series: dict[str, Sequence[float]], *, ylabel: str, title: str | None = None,
                levels: dict[str, float] | None = None):
    """Values measured at named moments (the phases of a training step), one line per series.

    The phase names label the x axis, slanted so that long names never overlap; ``levels`` draws labelled
    dashed horizontal lines (e.g. a prediction to compare the measurements with).
    """
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    xs = list(range(len(phases)))
    markers = "osd^v<>"
    for k, (name, values) in enumerate(series.items()):
        ax.plot(xs, list(values), marker=markers[k % len(markers)], markersize=4, label=name)
    for k, (name, y) in enumerate((levels or {}).items()):
        colour = plt.get_cmap("tab10")(k + len(series))
        ax.axhline(y, linestyle="--", linewidth=1, color=colour, label=name)
    ax.set_xticks(xs, list(phases), rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    plt.show()


def plot_stacked_bars(groups: Sequence[str], parts: dict[str, Sequence[float]], *, ylabel: str, xlabel: str = "",
                      title: str | None = None, fmt: str = "{:.0f}"):
    """One bar per group, stacked from named parts (e.g. what makes up the memory of a training step);
    each bar's total is written on top of it."""
    fig, ax = plt.subplots()
    xs = list(range(len(groups)))
    bottoms = [0.0] * len(groups)
    for name, values in parts.items():
        values = [float(v) for v in values]
        ax.bar(xs, values, bottom=bottoms, label=name)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    for x, total in zip(xs, bottoms):
        ax.annotate(fmt.format(total), (x, total), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs, [str(g) for g in groups])
    ax.set_ylim(top=1.12 * max(bottoms, default=1.0))
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    plt.show()


def plot_heatmap(matrix: "torch.Tensor", *, xlabel: str, ylabel: str, title: str | None = None,
                 colorbar: str = "value"):
    """A 2-D tensor as an image (rows down the y axis), with a colour bar."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    image = ax.imshow(matrix.detach().float().cpu().numpy(), aspect="auto", cmap="RdBu_r", interpolation="nearest")
    fig.colorbar(image, ax=ax, label=colorbar)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    fig.tight_layout()
    plt.show()


def plot_number_formats(formats: dict[str, dict[str, float]], *, marks: dict[str, float] | None = None,
                        title: str | None = None):
    """The range of floating-point formats on one log axis, one row per format.

    ``formats`` maps a name to ``{"smallest subnormal", "smallest normal", "max", "eps"}`` (as ``torch.finfo``
    gives them): a pale bar spans the subnormal numbers, a solid one the normal numbers, a black tick marks
    ``eps``; ``marks`` draws labelled dashed vertical lines (e.g. the size of some gradients).
    """
    import math

    fig, ax = plt.subplots(figsize=(8.5, 1.0 + 0.95 * len(formats)))
    colours = plt.get_cmap("tab10")
    names = list(formats)
    for row, name in enumerate(names):
        f = formats[name]
        y = len(names) - 1 - row
        low, normal, high, eps = f["smallest subnormal"], f["smallest normal"], f["max"], f["eps"]
        colour = colours(row)
        ax.barh(y, normal - low, left=low, height=0.42, color=colour, alpha=0.3)
        ax.barh(y, high - normal, left=normal, height=0.42, color=colour)
        ax.plot([eps, eps], [y - 0.3, y + 0.21], color="black", linewidth=2)
        ax.annotate(f"{low:.1e}", (low, y), xytext=(-4, 0), textcoords="offset points", ha="right", va="center",
                    fontsize=7)
        ax.annotate(f"{high:.3g}", (high, y), xytext=(4, 0), textcoords="offset points", ha="left", va="center",
                    fontsize=7)
        ax.annotate(f"smallest normal {normal:.1e}", (normal, y + 0.21), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=7)
        ax.annotate(f"eps {eps:.1e}", (eps, y - 0.3), xytext=(0, -2), textcoords="offset points", ha="center",
                    va="top", fontsize=7)
    for label, x in (marks or {}).items():
        ax.axvline(x, linestyle="--", color="0.3", linewidth=1)
        ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3), textcoords="offset points",
                    ha="left", va="top", fontsize=7, color="0.2")
    ax.set_xscale("log")
    lows = [f["smallest subnormal"] for f in formats.values()]
    highs = [f["max"] for f in formats.values()]
    ax.set_xlim(10.0 ** (math.floor(math.log10(min(lows))) - 12), 10.0 ** (math.ceil(math.log10(max(highs))) + 10))
    ax.set_ylim(-0.75, len(names) - 0.25 + (0.35 if marks else 0))
    ax.set_yticks(range(len(names)), list(reversed(names)))
    ax.set_xlabel("magnitude (log scale); pale: subnormal numbers, solid: normal numbers, black tick: eps")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    plt.show()


def plot_scale_over_steps(scales: Sequence[float], skipped: Sequence[bool], *, losses: Sequence[float] | None = None,
                          notes: dict[int, str] | None = None, title: str | None = None):
    """A ``GradScaler``'s scale at every step (log2 axis), skipped steps marked; optionally the loss below.

    ``scales[i]`` is the scale step ``i`` used and ``skipped[i]`` whether that step was skipped; ``notes`` writes a
    label next to chosen steps (e.g. where an overflow was injected).
    """
    import math

    import matplotlib.ticker as ticker

    rows = 2 if losses is not None else 1
    fig, axes = plt.subplots(rows, 1, figsize=(8.5, 3.2 * rows), sharex=True, squeeze=False)
    ax = axes[0][0]
    steps = list(range(len(scales)))
    ax.step(steps, list(scales), where="post", color="tab:blue", label="scale used at the step")
    bad = [i for i in steps if skipped[i]]
    ax.plot(bad, [scales[i] for i in bad], "x", color="tab:red", markersize=8, markeredgewidth=2,
            label="skipped: inf/NaN found, scale halved")
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_locator(ticker.LogLocator(base=2))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"$2^{{{round(math.log2(v))}}}$"))
    top = max(scales)
    ax.set_ylim(min(scales) / 2, top * 8)
    for i, text in (notes or {}).items():
        ax.annotate(text, (i, scales[i]), xytext=(0, 28), textcoords="offset points", ha="center", fontsize=8,
                    arrowprops={"arrowstyle": "->", "color": "0.3"})
    ax.set_ylabel("loss scale")
    ax.legend(fontsize=8, loc="upper right")
    if title:
        ax.set_title(title, fontsize=10)
    if losses is not None:
        low = axes[1][0]
        low.plot(steps, list(losses), color="tab:green")
        low.set_ylabel("loss")
        low.set_yscale("log")
    axes[-1][0].set_xlabel("step")
    fig.tight_layout()
    plt.show()


def plot_log_curves(panels: dict[str, dict[str, Sequence[float]]], *, threshold: float | None = None,
                    threshold_label: str = "threshold", xlabel: str = "step", ylabel: str = "value",
                    title: str | None = None):
    """Curves on a log y axis, one panel per entry of ``panels`` (each a dict of named curves), side by side with
    a shared y axis; ``threshold`` draws a labelled horizontal line in every panel (e.g. a clipping threshold)."""
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n + 1.6, 3.8), sharey=True, squeeze=False)
    for ax, (name, curves) in zip(axes[0], panels.items()):
        for k, (label, values) in enumerate(curves.items()):
            ax.plot(list(values), label=label, color=plt.get_cmap("tab10")(k), linewidth=1)
        if threshold is not None:
            ax.axhline(threshold, linestyle="--", color="black", linewidth=1, label=threshold_label)
        ax.set_yscale("log")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel(xlabel)
    axes[0][0].set_ylabel(ylabel)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plt.show()


def plot_resumed_runs(reference: Sequence[float], resumed: dict[str, Sequence[float]], *, resume_at: int,
                      marks: dict[str, float] | None = None, xlabel: str = "step", ylabel: str = "loss",
                      title: str | None = None, columns: int = 4, panel_size: tuple[float, float] = (2.9, 2.5)):
    """An uninterrupted run's curve against runs resumed at step ``resume_at``, one small panel per resumed run.

    Each entry of ``resumed`` is a whole run's values, the steps before ``resume_at`` included; it is drawn from
    ``resume_at`` on, over the uninterrupted ``reference``. Each panel's title says whether the run equals the
    reference exactly (``==`` on every value) or names the first step where it differs; ``marks`` draws labelled
    dotted vertical lines (e.g. a scheduler milestone) in every panel. The legend takes a free slot of the grid
    when there is one, else it stands to the right of the panels.
    """
    import math

    n = len(resumed)
    columns = max(1, min(columns, n))
    rows = math.ceil(n / columns)
    spare = rows * columns > n
    width, height = panel_size
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns + (0 if spare else 2.6), height * rows + 0.5),
                             sharex=True, sharey=True, squeeze=False)
    flat = list(axes.flat)
    reference = [float(v) for v in reference]
    handles = []
    for ax, (name, values) in zip(flat, resumed.items()):
        values = [float(v) for v in values]
        ref_line, = ax.plot(range(len(reference)), reference, color="0.2", linewidth=2.6, alpha=0.35,
                            label="uninterrupted run")
        new_line, = ax.plot(range(resume_at, len(values)), values[resume_at:], color="tab:orange", linewidth=1.1,
                            label="resumed run (from the checkpoint on)")
        resume_line = ax.axvline(resume_at, linestyle="--", color="tab:blue", linewidth=1, label="resumed here")
        mark_lines = [ax.axvline(x, linestyle=":", color="tab:red", linewidth=1.2, label=label)
                      for label, x in (marks or {}).items()]
        differs = next((i for i, (a, b) in enumerate(zip(values, reference)) if a != b), None)
        if differs is None and len(values) == len(reference):
            status, colour = "identical, bit for bit", "tab:green"
        elif differs is None:
            status, colour = f"{len(values)} values, the reference has {len(reference)}", "tab:red"
        else:
            status, colour = f"first differs at step {differs}", "tab:red"
        ax.set_title(f"{name}\n{status}", fontsize=8.5, color=colour)
        ax.tick_params(labelsize=7)
        handles = [ref_line, new_line, resume_line, *mark_lines]
    for ax in flat[n:]:
        ax.axis("off")
    for row in axes:
        row[0].set_ylabel(ylabel, fontsize=8)
    for k, ax in enumerate(flat[:n]):  # x labels under every panel that has no panel below it
        if k + columns >= n:
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel(xlabel, fontsize=8)
    if handles and spare:
        flat[n].legend(handles=handles, loc="center", fontsize=8, frameon=False)
    elif handles:
        flat[columns - 1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.03, 1), borderaxespad=0,
                                 fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plt.show()


def plot_rank_indices(panels: dict[str, Sequence[Sequence[Sequence[int]]]], *, title: str | None = None):
    """Which dataset index each rank gets, in order, epoch by epoch: one panel per entry of ``panels``.

    ``panels[name][epoch][rank]`` is the list of indices that rank reads in that epoch (what a
    ``DistributedSampler`` yields). Each row is one rank in one epoch, each cell one index, coloured by the
    index itself, so that an order that repeats looks the same in every epoch and a reshuffled one does
    not. An index read twice within one epoch (padding) is hatched and outlined in red.
    """
    names = list(panels)
    epochs = max(len(p) for p in panels.values())
    world = max(len(e) for p in panels.values() for e in p)
    width = max(len(r) for p in panels.values() for e in p for r in e)
    light = plt.get_cmap("tab20")  # its odd entries are the light shades: black text stays readable
    rows = epochs * world + (epochs - 1) * 0.5  # half a row between epochs
    fig, axes = plt.subplots(1, len(names), figsize=(max(3.6, 0.5 * width + 1.7) * len(names), 0.4 * rows + 1.5),
                             squeeze=False)
    repeats = False
    for ax, name in zip(axes[0], names):
        labels, ticks = [], []
        for epoch, per_rank in enumerate(panels[name]):
            counts: dict[int, int] = {}
            for indices in per_rank:
                for index in indices:
                    counts[index] = counts.get(index, 0) + 1
            for rank, indices in enumerate(per_rank):
                y = -(epoch * (world + 0.5) + rank) - 1
                for column, index in enumerate(indices):
                    repeated = counts[index] > 1
                    repeats |= repeated
                    ax.add_patch(Rectangle((column, y), 1, 1, facecolor=light((2 * index + 1) % 20),
                                           edgecolor="tab:red" if repeated else "white",
                                           linewidth=2.0 if repeated else 1.0, hatch="//" if repeated else None))
                    ax.text(column + 0.5, y + 0.5, str(index), ha="center", va="center", fontsize=8)
                ticks.append(y + 0.5)
                labels.append(f"epoch {epoch} · rank {rank}")
        ax.set_xlim(0, width)
        ax.set_ylim(-(epochs * (world + 0.5) - 0.5), 0)
        ax.set_yticks(ticks, labels, fontsize=8)
        ax.set_xticks([c + 0.5 for c in range(width)], [str(c) for c in range(width)], fontsize=7)
        ax.set_xlabel("position in the rank's order", fontsize=8)
        ax.set_title(name, fontsize=9)
        ax.tick_params(length=0)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
    if title or repeats:
        note = "red, hatched: an index read twice in that epoch (padding)" if repeats else ""
        fig.suptitle("\n".join(part for part in (title, note) if part), fontsize=9.5)
    fig.tight_layout()
    plt.show()


def plot_scaling(results: dict[str, dict[int, float]], *, unit: str = "samples/s", title: str | None = None):
    """Throughput against the number of ranks (left) and the scaling efficiency (right), one colour per setting.

    ``results[setting][ranks]`` is the throughput measured with that many ranks. A setting's ideal is its
    throughput per rank at its smallest number of ranks, times the number of ranks (dashed, left); the
    efficiency of a measurement is its throughput divided by that ideal, written on its bar (right).
    """
    settings = list(results)
    counts = sorted({n for per in results.values() for n in per})
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.8), gridspec_kw={"width_ratios": [1.1, 1]})
    colours = plt.get_cmap("tab10")
    width = 0.8 / len(settings)
    for k, setting in enumerate(settings):
        ns = sorted(results[setting])
        per_rank = results[setting][ns[0]] / ns[0]
        left.plot(ns, [per_rank * n for n in ns], linestyle="--", linewidth=1, color=colours(k), alpha=0.6)
        left.plot(ns, [results[setting][n] for n in ns], marker="o", color=colours(k), label=setting)
        for n in ns:
            left.annotate(f"{results[setting][n]:,.0f}", (n, results[setting][n]), xytext=(7, 0),
                          textcoords="offset points", va="center", fontsize=7, color=colours(k),
                          bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"})
        xs = [counts.index(n) + (k - (len(settings) - 1) / 2) * width for n in ns]
        efficiency = [100 * results[setting][n] / (per_rank * n) for n in ns]
        bars = right.bar(xs, efficiency, width=width, color=colours(k), label=setting)
        for bar, value in zip(bars, efficiency):
            right.annotate(f"{value:.0f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                           va="bottom", fontsize=8)
    left.plot([], [], linestyle="--", color="0.4", linewidth=1, label="ideal: linear in ranks")
    left.set_xticks(counts)
    left.set_xlim(min(counts) - 0.3, max(counts) + 0.7)
    left.set_ylim(bottom=0)
    left.set(xlabel="ranks (processes)", ylabel=unit)
    left.legend(fontsize=8, loc="upper left")
    right.axhline(100, linestyle="--", color="0.5", linewidth=1)
    right.set_xticks(range(len(counts)), [f"{n} rank{'s' if n > 1 else ''}" for n in counts])
    right.set_ylim(0, max(115, right.get_ylim()[1] * 1.08))
    right.set_ylabel("efficiency (%)")
    right.set_title("measured ÷ ideal (each setting against its own one rank)", fontsize=8.5)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    plt.show()


def plot_class_report(percent_scores: Sequence[float], failing: dict[str, tuple[int, int]], *, title: str):
    """What a class got wrong, for a lecture slide: the score histogram beside each check's failing share
    (``failing``: label -> (students failing, students graded)). A matplotlib Figure, drawn without pyplot so
    that a grading run on a machine without a display can save it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    labels = sorted(failing, key=lambda k: (failing[k][0] / max(failing[k][1], 1), k))
    fig = Figure(figsize=(11, max(3.8, 0.28 * len(labels) + 1.6)), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)  # draws and saves without a display
    scores_ax, checks_ax = fig.subplots(1, 2, width_ratios=[1, 1.5])
    scores_ax.hist(list(percent_scores), bins=[i * 10 for i in range(11)], color="tab:blue", edgecolor="white")
    scores_ax.set(xlabel="score (% of the chapter's points)", ylabel="students", xlim=(0, 100),
                  title=f"{len(percent_scores)} students")
    scores_ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # students are counted in whole numbers
    shares = [100 * failing[k][0] / max(failing[k][1], 1) for k in labels]
    bars = checks_ax.barh(range(len(labels)), shares, color="tab:red")
    checks_ax.set_yticks(range(len(labels)), labels, fontsize=8)
    for bar, label in zip(bars, labels):
        checks_ax.annotate(f"{failing[label][0]}/{failing[label][1]}", (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                           xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
    checks_ax.set(xlabel="students failing the check (%)", xlim=(0, 112), title="checks, most failed at the top")
    fig.suptitle(title)
    return fig
