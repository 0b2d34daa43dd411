"""seqlab.interpret is written once over its families' adapters (seqlab/interpret/families.py): the
readout through the final norm with its divisor frozen, and the loop that grows a cached prefix under
a batch's rows, each stand in one place; the CLI has one handler per question; no model keeps a
second forward path for a call without taps."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SEQLAB = Path(__file__).resolve().parents[2] / "seqlab"


def _sources(folder: Path = SEQLAB) -> dict[str, str]:
    return {str(path.relative_to(SEQLAB)): path.read_text(encoding="utf-8") for path in sorted(folder.rglob("*.py"))}


def _where(pattern: str) -> list[str]:
    return [f"{name}:{text[:m.start()].count(chr(10)) + 1}" for name, text in _sources().items()
            for m in re.finditer(pattern, text)]


def test_the_frozen_norm_readout_and_the_prefix_loop_stand_once():
    """The readout norm.frozen(part, scale) @ direction (attribution, once for every family; it was in
    attribution.py and seq2seq.py), and the prefix a cache's first positions give every row present
    at a layer (knockout and patching; it was in patching.py and edge_knockout.py)."""
    readout = _where(r"\.frozen\(\w+, \w+\) @ ")
    prefix = _where(r"\.keys\[layer\]\[:, :, :\w+\]\.expand\(")
    assert len(readout) == 1 and readout[0].startswith("interpret/families.py:"), readout
    assert len(prefix) == 1 and prefix[0].startswith("interpret/families.py:"), prefix
    assert _where(r"def grow_prefix\(") == [prefix[0].split(":")[0] + ":" + _where(r"def grow_prefix\(")[0].split(":")[1]]


def test_the_cli_has_one_handler_per_question():
    tree = ast.parse((SEQLAB / "interpret" / "cli.py").read_text(encoding="utf-8"))
    handlers = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                    and any(getattr(t, "id", None) == "ANALYSES" for t in node.targets))
    assert [key.value for key in handlers.keys] == ["lens", "attribute", "patch", "knockout", "heads", "depends"]
    assert len({value.id for value in handlers.values}) == 6
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert not [name for name in functions if name.startswith(("_lm_", "_s2s_"))]


def test_no_model_has_a_second_forward_path_without_taps():
    found = [f"{name}:{line}" for name, text in _sources(SEQLAB / "model").items() | _sources(SEQLAB / "seq2seq").items()
             for line, row in enumerate(text.splitlines(), 1) if re.search(r"if taps is None\s*:", row)]
    assert found == []


def test_one_way_to_get_attention_patterns():
    defined = _where(r"def (attention_patterns|attention_maps)\(")
    assert len(defined) == 1 and defined[0].startswith("model/taps.py")
