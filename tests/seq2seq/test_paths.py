"""``seqlab paths``: a --fast run on one task writes every output, its numbers re-check against the saved
runs, and the report's sentences follow the numbers."""

from __future__ import annotations

import json

import pytest
import torch

from seqlab.cli import main
from seqlab.seq2seq.paths import FAST, alignment_share, evaluation_pairs, write_report
from seqlab.seq2seq.paths.report import findings as _findings

pytestmark = pytest.mark.usefixtures("one_thread")


def test_fast_run_on_reverse(tmp_path, capsys):
    out = tmp_path / "paths"
    assert main(["paths", "--out", str(out), "--fast", "--tasks", "reverse", "--no-progress"]) == 0
    for name in ("results.json", "paths.png", "report.md", "dependency_reverse.png",
                 "attention_reverse_rnn-attention.png", "attention_reverse_transformer.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert not (out / "attention_reverse_rnn.png").exists()  # the plain RNN has no attention
    results = json.loads((out / "results.json").read_text())
    archs = results["tasks"]["reverse"]["archs"]
    assert list(archs) == ["rnn", "rnn-attention", "transformer"]
    counts = [archs[a]["parameters"] for a in archs]
    assert max(counts) <= 1.1 * archs["transformer"]["parameters"] and min(counts) >= 0.9 * archs["transformer"]["parameters"]
    # exact match by length, recomputed from the saved transformer run by a plain loop
    from seqlab.seq2seq import load_run
    from seqlab.seq2seq.decoding import translate_ids

    run = load_run(out / "runs" / "reverse_transformer", device="cpu")
    pairs = [p for p in evaluation_pairs(FAST, "reverse", 0, set()) if len(p[0]) == 3]
    outputs = translate_ids(run.model, [run.src_vocab.encode(s) for s, _ in pairs], max_len=10)
    right = sum(run.tgt_vocab.decode(o) == t for o, (_, t) in zip(outputs, pairs))
    assert archs["transformer"]["by_length"]["3"] == {"exact_match": right / len(pairs), "count": len(pairs)}
    assert set(archs["rnn"]["by_length"]) == {str(n) for n in range(1, FAST.test_max_len + 1)}
    report = (out / "report.md").read_text()
    for arch, record in archs.items():
        assert f"| {arch} | {record['parameters']:,} |" in report
        assert f"{record['in_range_exact_match']:.1%}" in report
    assert "report:" in capsys.readouterr().out


def test_alignment_share_worked_example():
    dep = torch.tensor([[1.0, 1.0, 2.0],   # output 0 of reverse must read source 2: share 2/4
                        [0.0, 3.0, 1.0],   # output 1 reads source 1: 3/4
                        [1.0, 0.0, 0.0],   # output 2 reads source 0: 1/1
                        [5.0, 5.0, 5.0]])  # EOS row: not counted
    assert alignment_share(dep, "reverse") == pytest.approx((0.5 + 0.75 + 1.0) / 3)
    assert alignment_share(dep, "copy") == pytest.approx((0.25 + 0.75 + 0.0) / 3)
    assert alignment_share(dep, "dates") is None


def _info(rnn: tuple[float, float], attn: tuple[float, float], beyond: float, status: str = "completed") -> dict:
    """Results for one symbol task trained on lengths 1..6: (short, long) accuracy per arch."""
    def record(short, long):
        by_length = {str(n): {"exact_match": short if n <= 2 else long if n >= 5 else (short + long) / 2, "count": 10}
                     for n in range(1, 7)}
        by_length.update({str(n): {"exact_match": beyond, "count": 10} for n in range(7, 10)})
        return {"by_length": by_length, "in_range_exact_match": (short + long) / 2, "beyond_exact_match": beyond,
                "alignment_share": 0.5, "parameters": 1000, "d_model": 8, "steps": 1, "train_seconds": 1.0,
                "status": status}
    return {"train_lengths": [1, 6], "test_max_len": 9,
            "archs": {"rnn": record(*rnn), "rnn-attention": record(*attn), "transformer": record(*attn)}}


def test_findings_follow_the_numbers():
    bottleneck = " ".join(_findings("reverse", _info(rnn=(1.0, 0.3), attn=(1.0, 0.95), beyond=0.0)))
    assert "consistent with the whole source having to pass through one fixed-size state" in bottleneck
    assert "Attention adds" in bottleneck and "no architecture generalises" in bottleneck
    everyone = " ".join(_findings("reverse", _info(rnn=(1.0, 0.3), attn=(1.0, 0.35), beyond=0.5)))
    assert "does not single out the bottleneck" in everyone and "fixed-size state." not in everyone
    assert "holds up best" in everyone
    info = _info(rnn=(1.0, 0.3), attn=(1.0, 0.95), beyond=0.0)
    info["archs"]["rnn-attention"] = _info(rnn=(1.0, 0.3), attn=(1.0, 0.3), beyond=0.0)["archs"]["rnn"]
    mixed = " ".join(_findings("copy", info))
    assert "transformer holds up on the longest sources" in mixed and "rnn-attention also falls" in mixed
    flat = " ".join(_findings("copy", _info(rnn=(0.9, 0.85), attn=(0.9, 0.9), beyond=0.2)))
    assert "did not visibly limit it" in flat and "no clear gain" in flat


def test_report_is_written_from_results(tmp_path):
    results = {"settings": {"layers": 1, "train_lengths": [1, 6], "test_max_len": 9, "test_per_length": 10,
                            "symbol_steps": 5, "dates_steps": 9},
               "fast": False, "total_seconds": 123.4,
               "machine": {"processor": "cpu", "threads": 1, "torch": torch.__version__},
               "tasks": {"reverse": _info(rnn=(1.0, 0.3), attn=(1.0, 0.95), beyond=0.0)}}
    text = write_report(tmp_path / "report.md", results)
    assert "time cap" not in text
    results["tasks"]["copy"] = _info(rnn=(1.0, 0.3), attn=(1.0, 0.95), beyond=0.0, status="time limit")
    text = write_report(tmp_path / "report.md", results)
    assert "Stopped by the time cap" in text and "copy/rnn (1 steps)" in text
    assert (tmp_path / "report.md").read_text() == text
    assert "total wall time 123 s" in text and "| rnn | 1,000 | 8 | 1 | 1 s | 65.0% | 0.0% | 0.50 |" in text
