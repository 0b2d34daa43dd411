"""docs/learn.md (the README's "start here" section, ready to paste) marks its block and every
command in it parses with seqlab's own parser, by the README checker's rules."""

from __future__ import annotations

from pathlib import Path

from tests.model.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


def test_the_learn_section_parses_and_names_the_first_three_commands():
    rc = load_benchmark("readme_commands")
    text = (ROOT / "docs" / "learn.md").read_text(encoding="utf-8")
    assert rc.check(text, rc.shipped_paths(ROOT)) == []
    block = [b for b in rc.read_blocks(text) if b.lang == "bash"][0]      # the student's; then the teacher's
    commands = [str(c) for c in rc.commands(block)]
    assert commands == ["seqlab learn", "seqlab learn start rnn_step", "seqlab learn check rnn_step"]


def test_the_lecture_table_maps_every_objective_and_exercise_to_steps_of_the_path():
    import re

    from seqlab.learn.path import STEP_BY_ID
    text = (ROOT / "docs" / "learn.md").read_text(encoding="utf-8")
    start = text.index("### The lecture, mapped to the path")
    table = text[start:text.index("\n### ", start + 1)]
    rows = [line for line in table.splitlines()[1:] if line.startswith("| ")][2:]
    rows = rows[:next((k for k, r in enumerate(rows) if not r.startswith("| ")), len(rows))]
    named = {row.split("|")[1].strip().split(":")[0]: re.findall(r"`([a-z0-9_]+)`", row.split("|")[2]) for row in rows}
    assert [k for k in named if k.startswith("Objective")] == [f"Objective {k}" for k in range(1, 10)]
    assert [k for k in named if k.startswith("Exercise")] == [f"Exercise {k} ({kind})" for k, kind in enumerate(
        ["Explain", "Trace", "Implement", "Derive", "Trace", "Trace", "Explain", "Derive", "Extend"], 1)]
    for row, steps in named.items():
        assert steps and all(s in STEP_BY_ID for s in steps), (row, steps)
