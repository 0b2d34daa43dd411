"""A run trained with --track-heads: the explorer's run info returns its head scores per evaluation,
and the loss-curve panel draws one line per score beside the loss."""

from __future__ import annotations

import pytest

from seqlab.runs.log import read_jsonl
from tests.explorer.browsing import CHROMIUM, browser, open_page, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import client_for, serving


@pytest.fixture(scope="module")
def tracked_run(lm_run, tmp_path_factory):
    """A small run on the demo's data, with --track-heads, 3 evaluations."""
    from seqlab.lm.settings import TrainConfig
    from seqlab.lm.task import train

    out = tmp_path_factory.mktemp("tracked") / "run"
    train(TrainConfig(data_dir=str(lm_run.parent / "data"), out_dir=str(out), context_length=32, d_model=32,
                      num_layers=2, num_heads=2, batch_size=8, max_steps=9, warmup_steps=1, eval_interval=3,
                      checkpoint_interval=9, log_interval=3, eval_batches=1, threads=1, progress=False,
                      track_heads=True))
    return out


@pytest.fixture(scope="module")
def tracked_server(tracked_run, lm_run):
    from seqlab.explorer.runs import RunRegistry

    with serving(RunRegistry([str(tracked_run), str(lm_run)])) as server:
        yield server


def test_run_info_returns_the_head_scores_of_each_evaluation(tracked_run, tracked_server, lm_run):
    client = client_for(tracked_server)
    tracked_id = str(tracked_run)
    heads = client.ok("lm/info", {"run": tracked_id})["heads"]
    evals = [r for r in read_jsonl(tracked_run / "log.jsonl") if "val_loss" in r]
    assert heads["steps"] == [r["step"] for r in evals] == [3, 6, 9]
    assert (heads["layers"], heads["heads"]) == (2, 2)
    for role in ("previous_token", "duplicate_token", "induction", "first_token"):
        oracle = [max(r[f"heads/{role}/L{l}H{h}"] for l in range(2) for h in range(2)) for r in evals]
        assert heads["best"][role] == pytest.approx(oracle)
        assert heads["scores"][role][-1][1][0] == pytest.approx(evals[-1][f"heads/{role}/L1H0"])
    assert client.ok("lm/info", {"run": str(lm_run)})["heads"] is None


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent")
def test_the_loss_panel_draws_the_head_score_curves(browser, tracked_server, tracked_run, tmp_path):
    pytest.importorskip("playwright.sync_api")
    page = next(open_page(browser, tracked_server.url, tmp_path))
    settled(page)
    page.wait_for_selector("#model-heads polyline", timeout=15_000)
    lines = page.locator("#model-heads polyline")
    assert lines.count() == 4
    # each line has a point per evaluation
    points = page.eval_on_selector_all("#model-heads polyline", "ls => ls.map(l => l.getAttribute('points').trim().split(' ').length)")
    assert points == [3, 3, 3, 3]
    legend = page.locator(".head-scores .legend .key").all_inner_texts()
    assert legend == ["previous token", "duplicate token", "induction", "first token (sink)"]
    page.click("#lang-zh")
    settled(page)
    assert page.locator(".head-scores .legend .key").all_inner_texts() == ["前一词元", "重复词元", "归纳", "首词元（汇聚）"]
    assert page.inner_text(".head-scores h4").startswith("每次评估")
    assert page.problems == []
