"""The induction section: POST /api/induction returns the results.json of `seqlab explore
--induction DIR` as the panel draws them, and the page draws one line per model in each chart,
in English and 中文."""

from __future__ import annotations

import json

import pytest

from seqlab.induction import InductionSettings, run_induction
from tests.explorer.browsing import CHROMIUM, browser, open_page, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import client_for, serving

TINY = InductionSettings(vocab_size=8, half=4, min_repeat=2, d_model=16, num_heads=2, steps=8, lstm_steps=8,
                         batch_size=8, lr=1e-2, warmup_steps=2, eval_interval=4, eval_batches=1, distances=(2, 3, 4),
                         distance_rows=8)


@pytest.fixture(scope="module")
def induction_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("induction") / "out"
    run_induction(out, settings=TINY, progress=False, say=lambda line: None)
    return out


@pytest.fixture(scope="module")
def induction_server(induction_dir):
    from seqlab.explorer.runs import RunRegistry

    runs = RunRegistry([])
    runs.induction_dir = str(induction_dir)
    with serving(runs) as server:
        yield server


def test_the_api_returns_each_models_curves_from_results_json(induction_dir, induction_server):
    client = client_for(induction_server)
    assert client.ok("runs", {})["induction"] is True
    data = client.ok("induction", {})
    results = json.loads((induction_dir / "results.json").read_text())
    assert [m["name"] for m in data["models"]] == ["attn1", "attn2", "mlp2", "lstm"]
    for model in data["models"]:
        record = results["models"][model["name"]]
        assert model["steps"] == record["curve"]["steps"] == [4, 8]
        assert model["in_context_loss"] == record["curve"]["in_context_loss"]
        assert model["induction"] == record["curve"]["induction"]
        assert model["by_distance"] == [[d, record["by_distance"][str(d)]] for d in (2, 3, 4)]
    status, body = client.post("induction", {"extra": 1})
    assert status == 400 and "unknown field" in body["error"]


def test_without_induction_results_the_api_says_how_to_make_them(tmp_path):
    from seqlab.explorer.runs import RunRegistry

    with serving(RunRegistry([])) as server:
        client = client_for(server)
        assert client.ok("runs", {})["induction"] is False
        status, body = client.post("induction", {})
        assert status == 400 and body["code"] == "no_induction" and "seqlab induction --out DIR" in body["error"]
    runs = RunRegistry([])
    runs.induction_dir = str(tmp_path / "nothing")
    with serving(runs) as server:
        status, body = client_for(server).post("induction", {})
        assert status == 400 and body["code"] == "induction_missing"


def _damaged(source, target, damage):
    target.mkdir()
    results = json.loads((source / "results.json").read_text())
    damage(results)
    (target / "results.json").write_text(json.dumps(results))
    return target


@pytest.mark.parametrize("damage, missing", [
    (lambda r: r["models"]["attn2"].pop("curve"), 'models.attn2 has no "curve"'),
    (lambda r: r["models"]["lstm"]["curve"].pop("induction"), 'models.lstm.curve has no "induction"'),
    (lambda r: r["models"]["attn1"].update(by_distance=[1, 2]), "models.attn1.by_distance should be an object, "
                                                                 "found a list"),
    (lambda r: r["settings"].pop("vocab_size"), 'settings has no "vocab_size"'),
])
def test_a_results_file_of_another_shape_is_answered_with_what_is_missing(induction_dir, tmp_path, capfd, damage,
                                                                           missing):
    """Not HTTP 500 "KeyError" with a traceback: a 400 naming the file and what it lacks."""
    from seqlab.explorer.runs import RunRegistry

    runs = RunRegistry([])
    runs.induction_dir = str(_damaged(induction_dir, tmp_path / "damaged", damage))
    with serving(runs) as server:
        status, body = client_for(server).post("induction", {})
    assert status == 400 and body["code"] == "induction_bad", body
    assert body["error"].startswith(f"{tmp_path / 'damaged' / 'results.json'}: {missing}: not the results of "
                                    "`seqlab induction` as this seqlab reads them; run `seqlab induction --out")
    assert "Traceback" not in capfd.readouterr().err


def test_the_induction_command_refuses_to_continue_a_damaged_results_file(induction_dir, tmp_path):
    from seqlab.induction.results import check_out

    out = _damaged(induction_dir, tmp_path / "damaged", lambda r: r["models"]["attn2"].pop("curve"))
    with pytest.raises(ValueError, match=r'results.json: models.attn2 has no "curve"; give another --out, or '
                                         r"--overwrite"):
        check_out(out, TINY, seed=0, fast=False, overwrite=False)


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent")
def test_the_panel_draws_every_model_in_english_and_chinese(browser, induction_server, tmp_path):
    pytest.importorskip("playwright.sync_api")
    page = next(open_page(browser, induction_server.url, tmp_path))
    settled(page)
    page.wait_for_selector("#induction-chart-2 polyline", timeout=15_000)
    counts = [page.locator(f"#induction-chart-{i} polyline").count() for i in range(3)]
    assert counts == [4, 3, 4]  # the induction score: Transformers only
    colours = page.eval_on_selector_all("#induction-chart-0 polyline", "ls => ls.map(l => l.style.stroke)")
    assert len(set(colours)) == 4
    assert len(page.locator("#induction-legend .key").all_inner_texts()) == 4
    assert page.inner_text("#w-induction h2").endswith("Induction heads: how a Transformer learns to copy")
    page.click("#lang-zh")
    settled(page)
    assert "归纳头" in page.inner_text("#w-induction h2")
    assert "上下文损失" in page.inner_text("#induction-legend")
    assert page.problems == []


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent")
def test_without_induction_the_section_says_how_to_make_it_and_asks_nothing(browser, tmp_path):
    pytest.importorskip("playwright.sync_api")
    from seqlab.explorer.runs import RunRegistry

    with serving(RunRegistry([])) as server:
        page = next(open_page(browser, server.url, tmp_path))
        settled(page)
        assert page.inner_text("#induction-note").startswith("Run `seqlab induction --out DIR`")
        assert page.locator("#induction-charts *").count() == 0
        assert page.problems == []  # no failing request


def test_every_label_of_the_induction_panel_is_in_english_and_chinese():
    import re

    from seqlab.explorer.server import STATIC_DIR
    from tests.explorer.test_i18n import _strings

    strings = _strings()
    source = (STATIC_DIR / "induction.js").read_text(encoding="utf-8")
    used = set(re.findall(r'"(ind\.[a-z_]+)"', source)) | {"nav.induction", "ind.title", "ind.lead"}
    assert len(used) >= 12 and not sorted(used - set(strings))
    assert all(len(strings[key]) == 2 and all(strings[key]) for key in used)


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent")
def test_a_screenshot_of_the_induction_section_holds_the_charts(browser, induction_dir, tmp_path, capsys):
    """`seqlab explore --screenshot OUT --induction DIR --section w-induction` draws the charts, in
    the models' colours (the API's, as induction.png has them), not the "Run seqlab induction"
    placeholder; without --induction it says what to give."""
    pytest.importorskip("playwright.sync_api")
    from PIL import Image

    from seqlab.cli import main
    from seqlab.explorer.induction_api import COLORS
    from seqlab.explorer.screenshot import take_screenshot

    out = tmp_path / "induction.png"
    take_screenshot(out, 1000, browser=browser, section="w-induction", induction=str(induction_dir))
    pixels = set(Image.open(out).convert("RGB").getdata())
    for name, colour in COLORS.items():
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert min(sum(abs(a - b) for a, b in zip(rgb, p)) for p in pixels) <= 12, f"{name}'s line is not drawn"
    assert main(["explore", "--screenshot", str(tmp_path / "none.png"), "--section", "w-induction"]) == 2
    assert "--section w-induction draws results: give --induction DIR" in capsys.readouterr().err
    assert not (tmp_path / "none.png").exists()
