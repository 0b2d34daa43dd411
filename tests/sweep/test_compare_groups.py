"""`seqlab compare` ranks only comparable runs against each other (one kind of model, one vocabulary,
one validation set), counts a seq2seq run stopped at --target-exact-match as finished, and names as
"Best" the first row of its own table."""

from __future__ import annotations

import json
import re

import pytest

from seqlab.cli import main
from seqlab.sweep.records import read_run
from tests.conftest import _train_s2s
from tests.test_outdir import _tiny_run

pytest.importorskip("matplotlib")


def _table_order(report: str) -> list[str]:
    return [line.split("`")[1] for line in report.splitlines() if line.startswith("| `")]


def _best(report: str) -> list[str]:
    return re.findall(r"\*\*Best: `([^`]+)`\*\*", report)


@pytest.fixture(scope="module")
def dates(tmp_path_factory):
    """A seq2seq run that reached --target-exact-match 0.01 at its first evaluation (step 5 of 40)."""
    return _train_s2s(tmp_path_factory.mktemp("s2s") / "dates", "--task", "reverse", "--min-len", "2",
                      "--max-len", "4", "--train-size", "200", "--valid-size", "20", "--arch", "transformer",
                      "--eval-interval", "5", "--target-exact-match", "0.01")


def test_a_run_stopped_at_its_target_exact_match_is_finished(dates):
    log = [json.loads(line) for line in (dates / "log.jsonl").read_text().splitlines()]
    evals = [r for r in log if "val_exact_match" in r]
    assert evals and evals[-1]["val_exact_match"] >= 0.01 and evals[-1]["step"] < 40  # it stopped early
    record = read_run(dates)
    assert (record.status, record.reason, record.total_steps) == ("finished", "reached --target-exact-match", 40)


def test_a_language_model_and_a_seq2seq_run_are_ranked_apart(dates, tmp_path, capsys):
    lm = _tiny_run(tmp_path / "small", [9.0, 8.5])  # a higher loss than the seq2seq run's
    out = tmp_path / "cmp"
    assert main(["compare", str(lm), str(dates), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 groups whose losses cannot be compared" in printed and "best small" in printed
    document = json.loads((out / "compare.json").read_text())
    assert document["best"] is None and sorted(document["best_by_group"].values()) == ["dates", "small"]
    report = (out / "report.md").read_text()
    assert "## language model, 300-token vocabulary" in report and "## seq2seq, " in report
    assert _best(report) == ["small", "dates"]


def test_runs_of_different_vocabularies_or_data_are_not_ranked_together(tmp_path):
    from seqlab.sweep.report import best_by_group, best_run, groups

    a = read_run(_tiny_run(tmp_path / "a", [3.0, 2.0], vocab=300))
    b = read_run(_tiny_run(tmp_path / "b", [3.0, 1.0], vocab=10000))  # lower, but over other tokens
    c = read_run(_tiny_run(tmp_path / "c", [3.0, 1.5], vocab=300, data="other_data"))
    d = read_run(_tiny_run(tmp_path / "d", [3.0, 2.5], vocab=300))
    assert len(groups([a, b, c, d])) == 3 and best_run([a, b, c, d]) is None
    assert {r.name for r in best_by_group([a, b, c, d]).values()} == {"a", "b", "c"}
    assert best_run([a, d]).name == "a"


def test_best_is_the_first_row_of_its_table(tmp_path):
    """An unfinished run with a lower loss than every finished one is ranked after them."""
    from seqlab.sweep.report import report_markdown

    done = [read_run(_tiny_run(tmp_path / n, losses)) for n, losses in (("x", [3.0, 2.2]), ("y", [3.0, 2.0]))]
    cut = _tiny_run(tmp_path / "cut", [3.0, 1.0])
    config = json.loads((cut / "config.json").read_text())
    config["max_steps"] = config["total_steps"] = 10  # logged 2 of 10 steps
    (cut / "config.json").write_text(json.dumps(config))
    records = [read_run(cut), *done]
    assert records[0].status == "unfinished"
    report = report_markdown("t", [], records, [], [])
    assert _table_order(report) == ["y", "x", "cut"] and _best(report) == ["y"]
