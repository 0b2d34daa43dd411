"""Issue 22 item 2: the attention and dependency PNGs carry a colour bar on one scale for every panel,
and loss_curve.png draws the loss on a log axis with validation exact match on a second axis. The
figures are caught as they are saved and checked against the data they were drawn from."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def saved_figures(monkeypatch):
    from matplotlib.figure import Figure

    figures = []
    original = Figure.savefig

    def keep(self, *args, **kwargs):
        figures.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


def _colour_bars(fig):
    return [axis for axis in fig.axes if getattr(axis, "_colorbar", None) is not None]


def test_attention_png_has_one_colour_bar_for_its_layers(tmp_path, saved_figures):
    from seqlab.seq2seq.paths import draw_attention

    g = torch.Generator().manual_seed(0)
    maps = [torch.softmax(torch.randn(1, 2, 4, 5, generator=g) * scale, -1) for scale in (1.0, 4.0)]
    draw_attention(tmp_path / "a.png", maps, list("abcde"), list("wxyz"), "title")
    (fig,) = saved_figures
    (bar,) = _colour_bars(fig)
    assert "attention weight" in bar.get_ylabel()
    peak = max(float(m[0].mean(0).max()) for m in maps)  # the oracle: the larger layer's largest mean
    images = [axis.images[0] for axis in fig.axes if axis.images]
    assert len(images) == 2 and all(im.norm.vmin == 0 and im.norm.vmax == pytest.approx(peak) for im in images)
    torch.testing.assert_close(torch.tensor(images[1].get_array().data), maps[1][0].mean(0))
    assert (tmp_path / "a.png").stat().st_size > 0


def test_dependency_png_has_one_colour_bar(tmp_path, saved_figures):
    from seqlab.seq2seq.paths import draw_dependency

    deps = {"rnn": torch.rand(3, 4, generator=torch.Generator().manual_seed(1)),
            "transformer": torch.eye(3, 4) + 0.01}
    draw_dependency(tmp_path / "d.png", deps, list("abcd"), list("xyz"), "title")
    (fig,) = saved_figures
    (bar,) = _colour_bars(fig)
    assert "share" in bar.get_ylabel()
    peak = max(float((d / d.sum(-1, keepdim=True)).max()) for d in deps.values())
    assert all(axis.images[0].norm.vmax == pytest.approx(peak) for axis in fig.axes if axis.images)


def test_loss_curve_log_axis_and_exact_match_on_a_second_axis(tmp_path, saved_figures):
    from seqlab.training.plots import plot_loss_curve

    records = [{"step": s, "wallclock": 2.0 * s, "train_loss": 3.0 / s} for s in range(1, 40)]
    evals = [{"step": 20, "wallclock": 40.0, "val_loss": 0.2, "val_exact_match": 0.35},
             {"step": 39, "wallclock": 78.0, "val_loss": 0.04, "val_exact_match": 0.9}]
    plot_loss_curve(records + evals, tmp_path / "loss_curve.png")
    plot_loss_curve(records, tmp_path / "lm_curve.png")  # no exact match: no second axis
    with_metric, without = saved_figures
    loss_axes = [axis for axis in with_metric.axes if axis.get_ylabel().startswith("cross-entropy")]
    assert loss_axes and all(axis.get_yscale() == "log" for axis in with_metric.axes[:2])
    right = [axis for axis in with_metric.axes if axis.get_ylabel() == "validation exact match"]
    assert len(right) == 2  # against steps and against wallclock
    steps, values = right[0].get_lines()[0].get_data()
    assert list(steps) == [20, 39] and list(values) == [0.35, 0.9]
    minutes, _ = right[1].get_lines()[0].get_data()
    assert list(minutes) == pytest.approx([40 / 60, 78 / 60])
    legend = with_metric.legends[0]  # under the panels: with a second axis no corner is free of lines
    assert [text.get_text() for text in legend.get_texts()] == ["train", "validation", "validation exact match"]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(with_metric).get_renderer()
    with_metric.draw(renderer)  # lays the figure out as savefig did
    box = legend.get_window_extent(renderer)
    assert all(not box.overlaps(axis.get_window_extent(renderer)) for axis in with_metric.axes)
    assert without.axes[0].get_legend() is not None  # one axis: the legend stays in its corner
    assert len(without.axes) == 2 and without.axes[0].get_yscale() == "log"
    # a loss of 0 or below cannot go on a log axis: linear then
    plot_loss_curve([{"step": 1, "wallclock": 1.0, "train_loss": 0.0}], tmp_path / "zero.png")
    assert saved_figures[-1].axes[0].get_yscale() == "linear"


def test_colour_bar_labels_fit_in_the_figure(tmp_path, saved_figures):
    """The dependency bar's label, longer than the figure is high, lost its first letters."""
    from seqlab.seq2seq.paths import draw_attention, draw_dependency

    title = "reverse: which source positions move each output\n'ficfeb' -> 'befcif'"  # as seqlab paths draws it
    draw_dependency(tmp_path / "d.png", {arch: torch.rand(7, 6) for arch in ("rnn", "rnn-attention", "transformer")},
                    list("ficfeb"), list("befcif") + ["</s>"], title)
    draw_attention(tmp_path / "a.png", [torch.rand(1, 2, 7, 6)], list("ficfeb"), list("befcif") + ["</s>"], title)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for fig in saved_figures:
        canvas = FigureCanvasAgg(fig)
        canvas.draw()  # the constrained layout, as savefig ran it
        renderer = canvas.get_renderer()
        page = fig.bbox
        (bar,) = _colour_bars(fig)
        box = bar.yaxis.label.get_window_extent(renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, (box, page)
