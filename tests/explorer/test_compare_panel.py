"""The "compare runs" panel: POST /api/runs/compare gives every --run's loss curves as seqlab.sweep
reads them (checked against each log.jsonl), and the page draws one line per run in Chromium, in
English and 中文, without console errors."""

from __future__ import annotations

import json
import re
from contextlib import ExitStack

import pytest

from seqlab.explorer.runs import RunRegistry
from seqlab.explorer.server import STATIC_DIR
from seqlab.sweep.records import STATUSES
from tests.explorer.browsing import CHROMIUM, browser, open_page, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import client_for, serving
from tests.explorer.test_i18n import _strings


def _curve(run_dir, key):
    records = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    return [[r["step"], r[key]] for r in records if key in r]


@pytest.fixture(scope="module")
def second_run(lm_run, tmp_path_factory):
    """A shorter run (20 steps, 1 layer) on the data of lm_run's demo."""
    from seqlab.lm import TrainConfig, train

    out = tmp_path_factory.mktemp("second") / "short"
    train(TrainConfig(data_dir=str(lm_run.parent / "data"), out_dir=str(out), context_length=32, d_model=32,
                      num_layers=1, num_heads=2, batch_size=8, max_steps=20, warmup_steps=2, lr=1e-2,
                      eval_interval=5, eval_batches=2, log_interval=2, threads=1, progress=False))
    return out


@pytest.fixture(scope="module")
def compare_server(lm_run, second_run, tmp_path_factory):
    missing = tmp_path_factory.mktemp("gone") / "no_such_run"
    with serving(RunRegistry([str(lm_run), str(second_run), str(missing)])) as server:
        server.run_ids = [str(lm_run), str(second_run), str(missing)]
        yield server


def test_the_endpoint_gives_each_runs_logged_curves(compare_server, lm_run, second_run):
    data = client_for(compare_server).ok("runs/compare")
    assert [r["id"] for r in data["runs"]] == [str(lm_run), str(second_run)]
    for run, path in zip(data["runs"], (lm_run, second_run)):
        assert run["train"] == _curve(path, "train_loss") and run["val"] == _curve(path, "val_loss")
        assert run["final_val_loss"] == run["val"][-1][1] and run["status"] == "finished"
    assert [r["steps"] for r in data["runs"]] == [40, 20]
    (skipped,) = data["skipped"]
    assert skipped["id"] == compare_server.run_ids[2] and "log.jsonl holds no losses" in skipped["error"]


def test_without_a_run_to_compare_the_list_is_empty(tmp_path):
    with ExitStack() as stack:
        server = stack.enter_context(serving(RunRegistry([str(tmp_path / "none")])))
        data = client_for(server).ok("runs/compare")
    assert data["runs"] == [] and [s["id"] for s in data["skipped"]] == [str(tmp_path / "none")]


def test_every_label_of_the_panel_exists_in_both_languages():
    strings = _strings()
    source = (STATIC_DIR / "compare.js").read_text(encoding="utf-8")
    used = set(re.findall(r'\bt\("([\w.]+\w)"', source)) | {f"compare.status.{s}" for s in STATUSES}
    used |= {key for key in re.findall(r'"(compare\.[\w.]*\w)"', source) if key != "compare.status"}
    assert {"compare.none", "compare.no_curve", "compare.key"} <= used
    html = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    panel = html[html.index('id="model-compare-panel"'):html.index('id="model-tokens-panel"')]
    used |= set(re.findall(r'data-i18n="([\w.]+)"', panel))
    assert not sorted(used - set(strings)) and len(used) >= 12


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_the_panel_draws_one_line_per_run(browser, compare_server, lm_run, second_run, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    for page in open_page(browser, compare_server.url, tmp_path):
        lines = page.locator("#compare-chart polyline")
        assert lines.count() == 2
        points = [len(lines.nth(i).get_attribute("points").split()) for i in range(2)]
        assert points == [len(_curve(lm_run, "val_loss")), len(_curve(second_run, "val_loss"))]
        legend = page.locator("#compare-legend .key").all_inner_texts()
        assert len(legend) == 2 and legend[0].startswith(f"{lm_run}: finished, 40 steps")
        assert legend[1].startswith(f"{second_run}: finished, 20 steps")
        assert "no_such_run" in page.inner_text("#compare-note")
        page.select_option("#compare-curve", "train")
        settled(page)
        assert [len(lines.nth(i).get_attribute("points").split()) for i in range(lines.count())] == \
            [len(_curve(lm_run, "train_loss")), len(_curve(second_run, "train_loss"))]
        page.click("#lang-zh")
        assert page.text_content("#model-compare-panel h3") == "比较运行：每个 --run 的损失曲线"
        assert "已完成" in page.inner_text("#compare-legend") and lines.count() == 2
        assert [p for p in page.problems if "Failed to load resource" not in p] == []
