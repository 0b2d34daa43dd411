"""The translate panel over a seq2seq run trained in the test (`seqlab seq2seq train`, a few
seconds): greedy output against a naive decoding loop written here, beam output against
`seqlab seq2seq translate`, the cross-attention maps, bad input, and the panel in Chromium.

Needs seqlab.seq2seq (skipped, with the reason, in a checkout without it)."""

from __future__ import annotations

import pytest
import torch

from seqlab.explorer.runs import RunRegistry
from seqlab.model.taps import attention_patterns
from tests.explorer.browsing import CHROMIUM, browser, open_page, set_value, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import Client, client_for, serving

pytest.importorskip("seqlab.seq2seq.task", reason="seqlab.seq2seq is not in this checkout")
pytestmark = pytest.mark.usefixtures("one_thread")

TINY = ["--task", "reverse", "--min-len", "2", "--max-len", "5", "--train-size", "1000", "--valid-size", "30",
        "--eval-size", "30", "--arch", "transformer", "--d-model", "32", "--num-heads", "2", "--layers", "2",
        "--batch-size", "32", "--lr", "0.01", "--warmup-steps", "5", "--no-progress", "--threads", "1",
        "--steps", "80", "--eval-interval", "80"]


@pytest.fixture(scope="module")
def s2s_run(tmp_path_factory):
    from seqlab.cli import main

    run = tmp_path_factory.mktemp("s2s") / "run"
    assert main(["seq2seq", "train", *TINY, "--out", str(run)]) == 0
    return run


@pytest.fixture(scope="module")
def s2s_server(s2s_run, lm_run):
    with serving(RunRegistry([str(lm_run), str(s2s_run)])) as server:
        yield server


@pytest.fixture(scope="module")
def s2s_client(s2s_server) -> Client:
    return client_for(s2s_server)


def _naive_greedy(model, src: list[int], limit: int) -> list[int]:
    """Re-run the whole decoder on BOS + the output so far; take the most likely token that is
    neither PAD nor BOS; stop after EOS."""
    from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID

    out: list[int] = []
    with torch.no_grad():
        while len(out) < limit:
            logits = model(torch.tensor([src]), torch.tensor([[BOS_ID, *out]]))[0, -1].clone()
            logits[[PAD_ID, BOS_ID]] = float("-inf")
            token = int(logits.argmax())
            if token == EOS_ID:
                break
            out.append(token)
    return out


def test_greedy_translation_and_its_cross_attention(s2s_client, s2s_run):
    from seqlab.seq2seq import load_run
    from seqlab.seq2seq.config import BOS_ID
    from seqlab.seq2seq.decoding import decode_limit

    run = load_run(s2s_run, device="cpu")
    for text in ("abcd", "ba", "edcab"):
        src = run.src_vocab.encode(text)
        expected = _naive_greedy(run.model, src, decode_limit(run.model, [len(src) + 1]))
        data = s2s_client.ok("seq2seq/translate", {"run": str(s2s_run), "text": text})
        assert data["output"] == run.tgt_vocab.decode(expected)
        assert data["source_tokens"] == list(text)
        assert data["output_tokens"] == [run.tgt_vocab.decode([i]) for i in expected] + ["</s>"]
        maps = torch.tensor(data["cross_attention"], dtype=torch.float64)
        assert maps.shape == (2, 2, len(expected) + 1, len(src))  # layers, heads, target rows, source columns
        torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1], dtype=torch.float64), atol=1e-5, rtol=0)
        with torch.no_grad():
            own = attention_patterns(run.model, torch.tensor([src]), torch.tensor([[BOS_ID, *expected]]))
        torch.testing.assert_close(maps, torch.stack([m[0] for m in own]).double(), atol=1e-6, rtol=0)


def test_beam_output_is_what_seqlab_seq2seq_translate_prints(s2s_client, s2s_run, capsys):
    from seqlab.cli import main

    assert main(["seq2seq", "translate", "--run", str(s2s_run), "--beam", "3", "abcde"]) == 0
    printed = capsys.readouterr().out.strip().split("\t")[1]
    assert s2s_client.ok("seq2seq/translate", {"text": "abcde", "beam": 3})["output"] == printed


@pytest.mark.parametrize("name, payload, code", [
    ("seq2seq/translate", {"text": ""}, "text_empty"),
    ("seq2seq/translate", {"text": "ab", "beam": 0}, None),
    ("seq2seq/translate", {"text": "ab", "beam": 9}, None),
    ("lm/tokens", {"text": "ab", "run": "S2S"}, "run_kind"),
])
def test_bad_translate_requests(s2s_client, s2s_run, name, payload, code):
    payload = {k: (str(s2s_run) if v == "S2S" else v) for k, v in payload.items()}
    status, data = s2s_client.post(name, payload)
    assert status == 400 and data.get("code") == code, data
    if code is None:
        assert "beam must be between 1 and 8" in data["error"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_translate_panel_in_the_browser(browser, s2s_server, s2s_client, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    for page in open_page(browser, s2s_server.url, tmp_path):
        set_value(page, "#tr-text", "abcd")
        settled(page)
        data = s2s_client.ok("seq2seq/translate", {"text": "abcd"})
        assert page.inner_text("#tr-output") == data["output"]
        page.select_option("#tr-layer", "1")
        page.select_option("#tr-head", "1")
        settled(page)
        cells = page.eval_on_selector_all("#tr-map rect.attn-cell", "cs => cs.map(c => [+c.dataset.q, +c.dataset.k, +c.dataset.w])")
        weights = data["cross_attention"][1][1]
        assert {(q, k): w for q, k, w in cells} == {(q, k): w for q, row in enumerate(weights) for k, w in enumerate(row)}
        page.click("#lang-zh")
        assert page.inner_text("#w-translate h2 [data-i18n]") == "用你的 seq2seq 模型翻译"
        assert page.inner_text("#tr-note").startswith("行：输出词元")
        set_value(page, "#tr-text", "")
        page.wait_for_selector("#w-translate > .error:visible")
        assert page.inner_text("#w-translate > .error") == "错误：文本为空：请输入一些文本供模型读取。"
        # the LM panels still work beside it
        assert page.locator("#model-tokens .piece").count() > 5
        assert [p for p in page.problems if "Failed to load resource" not in p] == []
