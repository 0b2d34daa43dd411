"""`seqlab compare` over runs trained with --track-heads: heads.png, compare.json and the report's
table hold each run's best head's score per role, read against its log.jsonl."""

from __future__ import annotations

import json

from seqlab.lm.task import train
from seqlab.sweep.heads import heads_figure, run_head_series
from seqlab.sweep.report import compare_runs
from tests.sweep.conftest import tiny_base

ROLES = ("previous_token", "duplicate_token", "induction", "first_token")


def _best(run_dir):
    evals = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines() if "val_loss" in line]
    return [r["step"] for r in evals], {role: [max(v for k, v in r.items() if k.startswith(f"heads/{role}/"))
                                               for r in evals] for role in ROLES}


def test_compare_plots_and_tabulates_the_head_scores_of_tracked_runs(byte_data, tmp_path):
    for name, lr in (("a", 1e-2), ("b", 3e-2)):
        train(tiny_base(byte_data, out_dir=str(tmp_path / name), max_steps=20, lr=lr, track_heads=True))
    train(tiny_base(byte_data, out_dir=str(tmp_path / "plain"), max_steps=10))
    out = tmp_path / "cmp"
    compare_runs([tmp_path / "a", tmp_path / "b", tmp_path / "plain"], out)
    document = json.loads((out / "compare.json").read_text())
    assert set(document["head_scores"]) == {"a", "b"}
    for name in ("a", "b"):
        steps, best = _best(tmp_path / name)
        assert steps == [10, 20]
        assert document["head_scores"][name] == {role: best[role][-1] for role in ROLES}
    assert (out / "heads.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert "![the best head's score per role against steps](heads.png)" in report
    row = next(line for line in report.splitlines() if line.startswith("| `a` | 20 |"))
    assert row.split(" | ")[4] == f"{_best(tmp_path / 'a')[1]['induction'][-1]:.3f}"
    # the figure: one line per tracked run in each role's panel, at the logged steps and scores
    fig = heads_figure([(n, run_head_series(tmp_path / n)) for n in ("a", "b", "plain")], title="t")
    for axis, role in zip(fig.axes, ROLES):
        lines = axis.get_lines()
        assert len(lines) == 2
        for line, name in zip(lines, ("a", "b")):
            steps, best = _best(tmp_path / name)
            assert list(line.get_xdata()) == steps and list(line.get_ydata()) == best[role]


def test_compare_without_tracked_runs_writes_no_head_figure(byte_data, tmp_path):
    train(tiny_base(byte_data, out_dir=str(tmp_path / "plain"), max_steps=10))
    compare_runs([tmp_path / "plain"], tmp_path / "cmp")
    assert not (tmp_path / "cmp" / "heads.png").exists()
    assert "head_scores" not in json.loads((tmp_path / "cmp" / "compare.json").read_text())
