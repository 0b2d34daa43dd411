"""docs/learn.md (the README's "start here" section, ready to paste) marks its block and every
command in it parses with seqlab's own parser, by the README checker's rules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands():
    spec = importlib.util.spec_from_file_location("readme_commands_for_learn", ROOT / "benchmarks" / "readme_commands.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_learn_section_parses_and_names_the_first_three_commands():
    rc = _readme_commands()
    text = (ROOT / "docs" / "learn.md").read_text(encoding="utf-8")
    assert rc.check(text, rc.shipped_paths(ROOT)) == []
    block = [b for b in rc.read_blocks(text) if b.lang == "bash"][0]      # the student's; then the teacher's
    commands = [str(c) for c in rc.commands(block)]
    assert commands == ["seqlab learn", "seqlab learn start rnn_step", "seqlab learn check rnn_step"]
