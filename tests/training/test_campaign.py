"""The campaign loop on its own (no training): skip what is recorded, record what its checkpoint
says has ended, resume what has a checkpoint, stop the whole loop on a stop, and write the summary
every time, also when an error ends it."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from seqlab.runs.state import TrainState
from seqlab.runs.status import Status
from seqlab.training import campaign as campaign_module
from seqlab.runs.status import read_status
from seqlab.training.campaign import Campaign


@dataclass
class P:
    name: str
    run_dir: Path


@dataclass
class Result:
    status: str
    steps: int = 4
    total_steps: int = 4
    stop_signal: int | None = None


def _loop(tmp_path, monkeypatch, results, *, states=None, recorded=()):
    """Run a campaign of points a, b, c; ``results[name]`` is what training it returns."""
    states = states or {}
    monkeypatch.setattr(campaign_module, "saved_state", lambda run_dir: states.get(Path(run_dir).name))
    points = [P(n, tmp_path / "out" / n) for n in "abc"]
    log: list[tuple] = []
    lines: list[str] = []
    campaign = Campaign(tmp_path / "out", "seqlab test", what="the test", say=lines.append)
    status = campaign.run(
        points, recorded=lambda p: "done" if p.name in recorded else None,
        reached_end=lambda p, state: state.step >= 4,
        train_one=lambda p, state, callbacks, say: (log.append(("train", p.name, state is not None)),
                                                    results[p.name])[1],
        record=lambda p, result, state: log.append(("record", p.name, result is None)),
        summarize=lambda s: log.append(("summary", s)),
        skipped=lambda p, done: log.append(("skip", p.name)),
        interrupted=lambda p, result: log.append(("interrupted", p.name)))
    return campaign, status, log, lines


def test_recorded_points_are_skipped_ended_ones_recorded_and_checkpointed_ones_resumed(tmp_path, monkeypatch):
    done = Result("completed")
    campaign, status, log, lines = _loop(tmp_path, monkeypatch, {"c": done}, recorded={"a"},
                                         states={"b": TrainState(step=4), "c": TrainState(step=2)})
    assert status is Status.COMPLETED and campaign.exit_status == 0
    assert log == [("summary", Status.RUNNING), ("skip", "a"),
                   ("record", "b", True), ("skip", "b"), ("summary", Status.RUNNING),  # killed before its record
                   ("train", "c", True), ("record", "c", False), ("summary", Status.RUNNING),
                   ("summary", Status.COMPLETED)]
    assert not (tmp_path / "out" / ".lock").exists() and lines == []


def test_an_interrupted_run_stops_the_whole_campaign_with_one_instruction(tmp_path, monkeypatch):
    cut = Result("interrupted", steps=2, stop_signal=signal.SIGTERM)
    campaign, status, log, lines = _loop(tmp_path, monkeypatch, {"a": Result("completed"), "b": cut})
    assert status is Status.INTERRUPTED and campaign.exit_status == 143
    assert log == [("summary", Status.RUNNING), ("train", "a", False), ("record", "a", False),
                   ("summary", Status.RUNNING), ("train", "b", False), ("interrupted", "b"),
                   ("summary", Status.INTERRUPTED)]  # c never starts, b is not recorded as ended
    assert lines == ["stopped by SIGTERM; rerun the same command to continue"]


def test_an_error_still_writes_the_summary_and_releases_the_lock(tmp_path, monkeypatch):
    class Boom(Exception):
        pass

    def boom(*args):
        raise Boom("no data")

    monkeypatch.setattr(campaign_module, "saved_state", lambda run_dir: None)
    summaries: list[Status] = []
    campaign = Campaign(tmp_path / "out", "seqlab test", what="the test", say=lambda line: None)
    with pytest.raises(Boom):
        campaign.run([P("a", tmp_path / "out" / "a")], recorded=lambda p: None, reached_end=lambda p, s: False,
                     train_one=boom, record=lambda *a: None, summarize=summaries.append)
    assert summaries == [Status.RUNNING, Status.INTERRUPTED] and not (tmp_path / "out" / ".lock").exists()


def test_a_refusing_check_stops_before_the_folder_is_made(tmp_path):
    def refuse():
        raise FileExistsError("not this command's folder")

    with pytest.raises(FileExistsError):
        Campaign(tmp_path / "out", "seqlab test", what="x", check=refuse).run(
            [], recorded=None, reached_end=None, train_one=None, record=None, summarize=None)
    assert not (tmp_path / "out").exists()


def test_the_engines_resume_line_is_left_to_the_campaign(tmp_path):
    lines: list[str] = []
    say = Campaign(tmp_path, "seqlab test", what="x", say=lines.append).engine_say("[1/2] a: ")
    say("step 10: val loss 2.0")
    say("interrupted (SIGTERM): saved runs/a/checkpoints/latest.pt at step 12; continue with --resume")
    assert lines == ["[1/2] a: step 10: val loss 2.0"]


@pytest.mark.parametrize("word, status", [("complete", Status.COMPLETED), ("finished", Status.COMPLETED),
                                          ("time limit", Status.TIME_BUDGET), ("stopped", Status.INTERRUPTED),
                                          ("time budget", Status.TIME_BUDGET), ("interrupted", Status.INTERRUPTED),
                                          ("bogus", Status.PENDING), (None, Status.PENDING)])
def test_older_summary_words_read_as_statuses(word, status):
    assert read_status(word) is status
