"""Issue 22 item 2 and 3 in the explorer's translate panel, over a character fr-en run trained in the
test: it opens on the run's worked example, offers the mean over heads, the last layer, a grid of
every head and (character models) a word-level view, says when the input is outside the training,
clears its output on error, and speaks 中文. Values against oracles computed here."""

from __future__ import annotations

import pytest
import torch

from seqlab.explorer.runs import RunRegistry
from seqlab.model.taps import attention_patterns
from tests.explorer.browsing import CHROMIUM, browser, open_page, set_value, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import client_for, serving
from tests.explorer.test_i18n import _strings
from tests.seq2seq.test_coverage_alignment import naive_word_alignment

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def fr_server(tiny_fr_en_run):
    with serving(RunRegistry([str(tiny_fr_en_run)])) as server:
        yield server


@pytest.fixture(scope="module")
def fr_client(fr_server):
    return client_for(fr_server)


@pytest.fixture(scope="module")
def loaded(tiny_fr_en_run):
    from seqlab.seq2seq.loading import load_run

    return load_run(tiny_fr_en_run, device="cpu")


def test_info_gives_the_worked_example_and_what_the_run_knows(fr_client, loaded):
    from seqlab.seq2seq.builtin_tasks import fr_en_words

    info = fr_client.ok("seq2seq/info")
    assert info["task"] == "fr-en" and info["example"] == "la vache blanche a vu un chien"
    assert info["words"] == sorted(fr_en_words()) and info["step"] == loaded.step == 40
    assert info["vocab_kind"] == "char" and info["arch"] == "transformer"


def test_mean_and_word_views_are_the_models_own_maps(fr_client, loaded):
    from seqlab.seq2seq.config import BOS_ID
    from seqlab.seq2seq.decoding import decode_limit, translate_ids

    text = "le chat noir dort"
    data = fr_client.ok("seq2seq/translate", {"text": text})
    src = loaded.src_vocab.encode(text)
    (out,) = translate_ids(loaded.model, [src], max_len=decode_limit(loaded.model, [len(src) + 1]))
    with torch.no_grad():
        maps = torch.stack([m[0] for m in attention_patterns(loaded.model, torch.tensor([src]),
                                                                      torch.tensor([[BOS_ID, *out]]))]).double()
    assert maps.shape[:2] == (2, 2)
    torch.testing.assert_close(torch.tensor(data["cross_attention"], dtype=torch.float64), maps, atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.tensor(data["mean_attention"], dtype=torch.float64), maps.mean(1),
                               atol=1e-6, rtol=0)
    output = loaded.tgt_vocab.decode(out)
    words = data["words"]
    assert words["source"] == ["le", "chat", "noir", "dort"] and words["output"] == output.split() + ["</s>"]
    for layer in range(2):
        for head in range(2):
            expected = torch.tensor(naive_word_alignment(maps[layer, head], text, output), dtype=torch.float64)
            torch.testing.assert_close(torch.tensor(words["cross_attention"][layer][head], dtype=torch.float64),
                                       expected, atol=1e-5, rtol=0)
        expected = torch.tensor(naive_word_alignment(maps[layer].mean(0), text, output), dtype=torch.float64)
        torch.testing.assert_close(torch.tensor(words["mean_attention"][layer], dtype=torch.float64), expected,
                                   atol=1e-5, rtol=0)
    assert data["notes"] == [] and data["step"] == 40


def test_notes_say_when_the_input_is_outside_the_training(fr_client):
    notes = fr_client.ok("seq2seq/translate", {"text": "le petit chien mange"})["notes"]
    assert [(n["code"], n["params"]) for n in notes] == [("unknown_words", {"words": "petit"})]
    notes = fr_client.ok("seq2seq/translate", {"text": "la chien dort!"})["notes"]
    assert [n["code"] for n in notes] == ["unknown_chars", "unknown_words"]
    strings = _strings()
    for code in ("unknown_chars", "unknown_words", "not_in_grammar", "not_a_task_date", "length_outside"):
        assert f"note.{code}" in strings


def _cells(page):
    return page.eval_on_selector_all("#tr-map rect.attn-cell", "cs => cs.map(c => [+c.dataset.q, +c.dataset.k, +c.dataset.w])")


def _as_cells(weights):
    return {(q, k): w for q, row in enumerate(weights) for k, w in enumerate(row)}


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_the_panel_opens_on_the_example_with_every_view(browser, fr_server, fr_client, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    for page in open_page(browser, fr_server.url, tmp_path):
        settled(page)
        example = "la vache blanche a vu un chien"
        assert page.input_value("#tr-text") == example  # opened on the worked example, untouched
        data = fr_client.ok("seq2seq/translate", {"text": example})
        assert page.inner_text("#tr-output") == data["output"]
        assert page.inner_text("#tr-hint").startswith("This run translates French sentences")
        # default view: the last layer's mean over heads, a non-empty heatmap
        cells = _cells(page)
        assert cells and {(q, k): w for q, k, w in cells} == _as_cells(data["mean_attention"][-1])
        # the grid: every head and each layer's mean
        assert page.locator("#tr-grid button.thumb-button").count() == 2 * (2 + 1)
        page.click("#tr-thumb-0-1")
        settled(page)
        assert page.input_value("#tr-view") == "head"
        assert {(q, k): w for q, k, w in _cells(page)} == _as_cells(data["cross_attention"][0][1])
        # words, mean over heads of layer 0
        page.select_option("#tr-view", "mean")
        page.select_option("#tr-layer", "0")
        page.select_option("#tr-units", "words")
        settled(page)
        assert {(q, k): w for q, k, w in _cells(page)} == _as_cells(data["words"]["mean_attention"][0])
        labels = page.eval_on_selector_all("#tr-map text.attn-label", "ts => ts.map(t => t.textContent)")
        assert [w for w in data["words"]["source"] if w in labels] == data["words"]["source"]
        # outside the grammar: a note, in English and 中文
        set_value(page, "#tr-text", "le petit chien mange")
        settled(page)
        assert "petit: not a word of the fr-en grammar" in page.inner_text("#tr-notes")
        page.click("#lang-zh")
        assert "petit：不是模型所学 fr-en 语法中的词" in page.inner_text("#tr-notes")
        assert page.inner_text("#tr-hint").startswith("该运行翻译一个小型语法中的法语句子")
        assert page.inner_text("#tr-view option[value=last]") == "最后一层，各头平均"
        # an error clears what the earlier translation showed
        set_value(page, "#tr-text", "")
        page.wait_for_selector("#w-translate > .error:visible")
        assert page.inner_text("#tr-output") == "" and _cells(page) == []
        assert page.locator("#tr-grid button").count() == 0 and page.inner_text("#tr-notes") == ""
        assert [p for p in page.problems if "Failed to load resource" not in p] == []


def test_a_section_screenshot_holds_the_whole_section(browser, tiny_fr_en_run, tmp_path):
    """The README's screenshot command cut a section taller than the viewport left below the header:
    the translate panel's last lines were page background."""
    from PIL import Image

    from seqlab.explorer.screenshot import take_screenshot

    out = tmp_path / "translate.png"
    take_screenshot(out, 800, browser=browser, runs=[str(tiny_fr_en_run)], section="w-translate")
    with Image.open(out) as image:
        pixels = image.convert("L")
        width, height = pixels.size
        assert height > 900  # taller than the 900-pixel viewport
        # the last line of the note under the heatmap ("Shown: layer 1, mean over its heads.") is there
        band = [pixels.getpixel((x, y)) for y in range(height - 45, height - 8) for x in range(0, width // 2)]
        assert min(band) < 120, "no text in the section's last lines"
        assert pixels.getpixel((width // 2, height - 4)) > 250  # the card's white, not the page's background
    with pytest.raises(ValueError, match="has no section 'w-nothing'; its sections are course, w-recurrence"):
        take_screenshot(tmp_path / "none.png", browser=browser, section="w-nothing")
