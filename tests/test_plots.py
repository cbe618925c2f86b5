"""coursekit.plots: the shared figures draw what is there (fixed scales, values shown), legibly."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as pyplot  # noqa: E402
import torch  # noqa: E402

from coursekit import plots  # noqa: E402


def test_an_image_grid_draws_every_image_on_one_scale_and_shows_each_ones_range():
    """imshow stretches each image to its own range by default: a 0-255 image or a nearly black one then
    looked correct. Every image is now drawn on [0, 1] and captioned with its own smallest and largest value."""
    ramp = torch.linspace(0, 1, 16).reshape(4, 4)
    batch = torch.stack([ramp, ramp * 255, ramp * 0.02]).unsqueeze(1)  # (N, 1, H, W)
    pyplot.close("all")
    plots.show_image_grid(batch, ["right", "not divided by 255", "nearly black"], columns=3)
    axes = pyplot.gcf().axes
    assert [(ax.images[0].norm.vmin, ax.images[0].norm.vmax) for ax in axes] == [(0.0, 1.0)] * 3
    assert [ax.get_xlabel() for ax in axes] == ["0 to 1", "0 to 255", "0 to 0.02"]
    assert [ax.get_title() for ax in axes] == ["right", "not divided by 255", "nearly black"]
    pyplot.close("all")


def test_a_colour_image_past_the_scale_is_clipped_not_rescaled():
    colour = torch.full((1, 3, 2, 2), 200.0)
    pyplot.close("all")
    plots.show_image_grid(colour, columns=2)
    first, unused = pyplot.gcf().axes
    assert float(first.images[0].get_array().max()) == 1.0 and first.get_xlabel() == "200 to 200"
    assert not unused.images and not unused.axison
    pyplot.close("all")


def test_curves_against_their_index_get_whole_number_ticks_and_ylim_clips():
    """A curve given as a list is drawn against its index (a layer, a step): no tick at "layer 2.5". ``ylim``
    keeps a loss that explodes at the end from flattening the informative part."""
    pyplot.close("all")
    plots.plot_curves({"norm": [1.0, 0.5, 0.25]}, xlabel="layer", ylim=(0.0, 2.0))
    ax = pyplot.gcf().axes[0]
    ticks = [t for t in ax.get_xticks() if 0 <= t <= 2]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert tuple(ax.get_ylim()) == (0.0, 2.0)
    pyplot.close("all")


def test_horizontal_bars_put_the_first_setting_on_top_with_its_value_and_colour():
    """For labels too long to stand under a bar (lines of code): sideways, in the order given, each value
    written after its bar, one colour per bar."""
    pyplot.close("all")
    plots.plot_bars({"losses.append(loss)": 2900.0, "losses.append(loss.item())": 72.5}, ylabel="KiB held",
                    fmt="{:.1f}", horizontal=True, colors=["tab:red", "tab:green"])
    ax = pyplot.gcf().axes[0]
    by_label = {tick.get_text(): y for tick, y in zip(ax.get_yticklabels(), ax.get_yticks())}
    assert by_label["losses.append(loss)"] > by_label["losses.append(loss.item())"]  # first on top
    assert sorted(t.get_text().strip() for t in ax.texts) == ["2900.0", "72.5"]
    widths = sorted((round(p.get_width(), 1), p.get_facecolor()) for p in ax.patches)
    assert [w for w, _ in widths] == [72.5, 2900.0] and widths[0][1] != widths[1][1]
    assert ax.get_xlabel() == "KiB held" and ax.get_xlim()[1] > 2900.0 * 1.1
    pyplot.close("all")
