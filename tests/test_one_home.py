"""One home for each basic operation (issue 38, section 6): log-softmax, the token-id range check,
the position range check, the RoPE angle table and the default target of an interpretation are
each written once, and their callers use it. Read from the source (ast and text)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "seqlab"


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE.parent).as_posix(), path.read_text(encoding="utf-8")


def _defined(names: set[str]) -> list[str]:
    found = []
    for where, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
                found.append(f"{where}:{node.lineno} {node.name}")
    return found


def test_log_softmax_has_one_definition():
    found = _defined({"log_softmax", "_log_softmax", "log_probs"})
    assert found == [f for f in found if f.startswith("seqlab/model/activations.py")] and len(found) == 1, found
    # nor is it written inline (x - logsumexp(x)) outside the model's loss and activations
    inline = [where for where, text in _sources() if "logsumexp(" in text and where not in
              ("seqlab/model/activations.py", "seqlab/model/loss.py", "seqlab/seq2seq/evaluation.py")
              and not where.startswith("seqlab/labs/")]
    assert not inline, inline


def test_the_token_id_range_check_is_written_once():
    found = [where for where, text in _sources() if "outside the vocabulary" in text]
    # seqlab.model.embedding.check_token_ids; token *files* (numpy memmaps) are checked in chunks by the tokenizer
    assert sorted(found) == ["seqlab/model/embedding.py", "seqlab/tokenizer/token_array.py"], found


def test_check_positions_has_one_definition():
    assert [f.split(":")[0] for f in _defined({"check_positions"})] == ["seqlab/model/checks.py"]


def test_the_rope_angle_table_is_built_once():
    found = [where for where, text in _sources() if "** (-torch.arange(0," in text]
    assert found == ["seqlab/model/rope.py"], found


def test_the_default_target_is_decided_in_the_library_only():
    """The CLI and the explorer render the target the library chose; they never pick one."""
    for where in ("seqlab/interpret/cli.py", "seqlab/explorer/interpret_api.py"):
        text = (PACKAGE.parent / where).read_text(encoding="utf-8")
        assert "argmax" not in text and "_top_token" not in text and "topk" not in text, where
