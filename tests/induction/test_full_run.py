"""The full `seqlab induction` run (minutes): the two-layer models form an induction head and the
in-context loss falls with it; the one-layer model forms none."""

from __future__ import annotations

import pytest

from seqlab.induction import run_induction

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


def test_the_full_run_shows_the_induction_bump(tmp_path):
    results = run_induction(tmp_path / "out", progress=False, say=lambda line: None)
    assert results["status"] == "completed"
    models = results["models"]
    one, two, mlp = (models[name]["final"] for name in ("attn1", "attn2", "mlp2"))
    assert one["induction"] < 0.2 and two["induction"] > 0.4 and mlp["induction"] > 0.4
    assert two["in_context_loss"] < one["in_context_loss"] - 1.0
    for name in ("attn2", "mlp2"):
        bump = models[name]["bump"]
        assert bump["induction_after"] > bump["induction_before"]  # the score rises where the loss falls most
    # content-addressed copying does not care how far back the copy is; above chance at every distance
    assert min(models["attn2"]["by_distance"].values()) > 0.5
    assert (tmp_path / "out" / "induction.png").is_file() and (tmp_path / "out" / "report.md").is_file()
