"""The API over a run trained in the test (`seqlab demo --fast`): every value against an oracle
computed here from the loaded model and tokenizer, and bad input as 400s with coded messages."""

from __future__ import annotations

import http.client
import json

import pytest
import torch

from seqlab.explorer.runs import RunRegistry
from seqlab.runs.log import read_jsonl
from tests.explorer.conftest import client_for, serving
from tests.explorer.oracles import attention_oracle, sorted_filter
from tests.explorer.test_i18n import _strings

TEXT = "Once upon a time there was a little cat. 小猫"


def test_runs_are_listed_with_their_problems(model_client, model_server):
    data = model_client.ok("runs")
    ids = model_server.run_ids
    assert [r["id"] for r in data["runs"]] == [ids["lm"], ids["damaged"], ids["missing"]]
    assert [r["kind"] for r in data["runs"]] == ["lm", "lm", "invalid"]
    assert data["runs"][2]["error"]["code"] == "run_missing"


def test_tokens_are_the_runs_bpe_pieces(model_client, loaded_lm):
    _, tokenizer = loaded_lm
    data = model_client.ok("lm/tokens", {"text": TEXT})
    ids = tokenizer.encode(TEXT)
    assert [t["id"] for t in data["tokens"]] == ids and not data["truncated"] and data["total"] == len(ids)
    assert [bytes(t["bytes"]) for t in data["tokens"]] == [tokenizer.vocab[i] for i in ids]
    assert b"".join(bytes(t["bytes"]) for t in data["tokens"]) == TEXT.encode("utf-8")
    assert data["tokens"][0]["text"] == tokenizer.vocab[ids[0]].decode()
    assert data["context_length"] == 32 and data["cut_text"] == ""


def test_text_past_the_context_is_cut(model_client, loaded_lm):
    _, tokenizer = loaded_lm
    text = TEXT * 4
    ids = tokenizer.encode(text)
    assert len(ids) > 32
    data = model_client.ok("lm/tokens", {"text": text})
    assert [t["id"] for t in data["tokens"]] == ids[:32]
    assert data["truncated"] and data["total"] == len(ids) and data["cut_text"] == tokenizer.decode(ids[32:])
    assert model_client.ok("lm/attention", {"text": text, "layer": 0, "head": 0})["truncated"]
    assert len(model_client.ok("lm/attention", {"text": text, "layer": 0, "head": 0})["weights"]) == 32


def test_attention_matches_the_models_own_projections_and_rope(model_client, loaded_lm):
    model, tokenizer = loaded_lm
    ids = tokenizer.encode(TEXT)
    oracle = attention_oracle(model, ids)
    for layer in range(2):
        for head in range(2):
            data = model_client.ok("lm/attention", {"text": TEXT, "layer": layer, "head": head})
            assert [t["id"] for t in data["tokens"]] == ids
            weights = torch.tensor(data["weights"], dtype=torch.float64)
            torch.testing.assert_close(weights, oracle[layer][2][head], atol=1e-5, rtol=1e-4)
            assert torch.all(weights.triu(1) == 0)
    grid = model_client.ok("lm/heads", {"text": TEXT})
    torch.testing.assert_close(torch.tensor(grid["weights"], dtype=torch.float64),
                               torch.stack([o[2] for o in oracle]), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("temperature, top_k, top_p", [(1.0, None, 1.0), (0.8, 5, 1.0), (1.2, None, 0.5),
                                                       (0.6, 10, 0.9)])
def test_next_token_candidates_against_the_logits_and_a_sort_based_filter(model_client, loaded_lm,
                                                                           temperature, top_k, top_p):
    model, tokenizer = loaded_lm
    with torch.no_grad():
        logits = model(torch.tensor([tokenizer.encode(TEXT)]))[0, -1]
    data = model_client.ok("lm/next", {"text": TEXT, "temperature": temperature, "top_k": top_k, "top_p": top_p})
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    expected = torch.sort(probs, descending=True).indices[:20].tolist()
    candidates = data["candidates"]
    assert [c["id"] for c in candidates] == expected
    assert [c["prob"] for c in candidates] == pytest.approx(probs[expected].tolist(), abs=1e-6)
    filtered = sorted_filter(logits, temperature, top_k, top_p)
    assert [c["filtered_prob"] for c in candidates] == pytest.approx(filtered[expected].tolist(), abs=1e-6)
    assert [c["kept"] for c in candidates] == (filtered[expected] > 0).tolist()
    assert data["kept_total"] == int((filtered > 0).sum())
    assert candidates[0]["text"] == tokenizer.vocab[expected[0]].decode("utf-8", errors="replace")


def test_sample_appends_the_token_the_filters_allow(model_client, loaded_lm):
    _, tokenizer = loaded_lm
    top = model_client.ok("lm/next", {"text": TEXT})["candidates"][0]
    data = model_client.ok("lm/sample", {"text": TEXT, "top_k": 1})  # only the top token survives
    assert data["token"]["id"] == top["id"]
    assert data["text"] == tokenizer.decode(tokenizer.encode(TEXT) + [top["id"]])
    one = model_client.ok("lm/sample", {"text": TEXT, "seed": 3, "temperature": 1.5})
    assert one == model_client.ok("lm/sample", {"text": TEXT, "seed": 3, "temperature": 1.5})  # seeded


def _stream(server, payload) -> list[dict]:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("POST", "/api/lm/generate", json.dumps(payload), {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Content-Type").startswith("application/x-ndjson")
        return [json.loads(line) for line in response.read().decode().splitlines()]
    finally:
        conn.close()


def test_generate_streams_what_seqlab_generate_produces(model_server, loaded_lm):
    from seqlab.inference.generate import generate

    model, tokenizer = loaded_lm
    lines = _stream(model_server, {"text": TEXT, "temperature": 0.9, "top_p": 0.9, "seed": 7, "max_tokens": 25})
    expected = generate(model, tokenizer.encode(TEXT), 25, temperature=0.9, top_p=0.9, eos_id=tokenizer.eot_id, seed=7)
    done = lines[-1]
    assert done["done"] and done["tokens"] == len(expected)
    if expected[-1] == tokenizer.eot_id:
        assert done["stopped"] == "eos"
        expected = expected[:-1]
    assert "".join(line["piece"] for line in lines[:-1]) == tokenizer.decode(expected)
    assert len(lines) > 3  # one line per piece, not one block at the end


def test_shapes_are_the_forward_pass_of_this_model(model_client, loaded_lm):
    _, tokenizer = loaded_lm
    T = len(tokenizer.encode(TEXT))
    shapes = dict((name, tuple(shape)) for name, shape in model_client.ok("lm/shapes", {"text": TEXT})["shapes"])
    assert shapes["embedding"] == (1, T, 32) and shapes["q"] == (1, 2, T, 16) and shapes["scores"] == (1, 2, T, T)
    assert shapes["attention_output"] == (1, T, 32) and shapes["logits"] == (1, T, 300)


def test_info_is_the_runs_log_and_config(model_client, lm_run, loaded_lm):
    data = model_client.ok("lm/info")
    log = read_jsonl(lm_run / "log.jsonl")
    assert data["loss"]["train"] == [[r["step"], r["train_loss"]] for r in log if "train_loss" in r]
    assert data["loss"]["val"] == [[r["step"], r["val_loss"]] for r in log if "val_loss" in r]
    assert len(data["loss"]["train"]) == 40 and data["loss"]["val"]
    assert data["config"] == json.loads((lm_run / "config.json").read_text())["settings"]
    assert data["parameters"] == loaded_lm[0].num_parameters() and data["model"]["num_heads"] == 2


BAD = [
    ("lm/tokens", {"text": ""}, "text_empty", ["text is empty"]),
    ("lm/tokens", {"text": "a" * 4001}, "text_too_long", ["4001", "4000"]),
    ("lm/attention", {"text": "a", "layer": 2, "head": 0}, "layer_range", ["layer 2", "2 layers"]),
    ("lm/attention", {"text": "a", "layer": 0, "head": -1}, "head_range", ["head -1", "2 heads"]),
    ("lm/next", {"text": "a", "temperature": 0}, "temperature", ["temperature must be > 0", "greedy"]),
    ("lm/next", {"text": "a", "temperature": -1}, "temperature", ["temperature must be > 0"]),
    ("lm/next", {"text": "a", "top_p": 0}, "top_p", ["top_p must be in (0, 1]"]),
    ("lm/next", {"text": "a", "top_k": -1}, "top_k", ["top_k must be a positive", "0 or null for off"]),
    ("lm/sample", {"text": "a", "top_p": 1.5}, "top_p", ["top_p"]),
    ("lm/tokens", {"text": "a", "run": "elsewhere"}, "unknown_run", ["unknown run 'elsewhere'"]),
]


@pytest.mark.parametrize("name, payload, code, words", BAD, ids=[f"{b[0]}-{b[2]}" for b in BAD])
def test_bad_input_is_a_400_the_page_can_translate(model_client, name, payload, code, words):
    status, data = model_client.post(name, payload)
    assert status == 400 and data["code"] == code, data
    for word in words:
        assert word in data["error"]
    assert f"err.{code}" in _strings()


def test_unusable_runs_name_the_directory_and_the_fix(model_client, model_server):
    ids = model_server.run_ids
    status, data = model_client.post("lm/tokens", {"text": "a", "run": ids["missing"]})
    assert status == 400 and data["code"] == "run_missing"
    assert ids["missing"] in data["error"] and "seqlab demo" in data["error"]
    status, data = model_client.post("lm/next", {"text": "a", "run": ids["damaged"]})
    assert status == 400 and data["code"] == "run_damaged"
    assert "latest.pt" in data["error"] and "truncated or corrupt" in data["error"]
    assert data["params"]["run"] == ids["damaged"]
    status, data = model_client.post("lm/generate", {"text": "a", "run": ids["damaged"]})
    assert status == 400 and data["code"] == "run_damaged"  # no stream is started


@pytest.mark.parametrize("model_ids, words", [
    (300, ["the tokenizer has 257 ids but the model samples from 300", "257..299 could not be decoded"]),
    (200, ["the tokenizer has 257 ids but the model only 200"]),
])
def test_a_tokenizer_that_does_not_fit_the_model_is_a_coded_400(tmp_path, model_ids, words):
    """A 257-id byte tokenizer beside a model of another vocabulary size: with 300 ids, lm/next
    would list ids the tokenizer cannot decode (it was a KeyError, HTTP 500); with 200, the
    tokenizer makes ids the model cannot embed. Every LM endpoint refuses the run the same way."""
    from seqlab.model import TransformerLM
    from seqlab.tokenizer import Tokenizer
    from seqlab.training import save_checkpoint

    run = tmp_path / "run"
    tokenizer = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])
    tokenizer.save(run / "tokenizer")
    model = TransformerLM(vocab_size=model_ids, context_length=8, d_model=16, num_layers=1, num_heads=2, d_ff=24)
    save_checkpoint(model, None, 1, str(run / "checkpoints" / "latest.pt"))
    assert tokenizer.vocab_size == 257
    with serving(RunRegistry([str(run)])) as server:
        for name in ("lm/next", "lm/tokens", "lm/generate"):
            status, data = client_for(server).post(name, {"text": "a"})
            assert status == 400 and data["code"] == "run_damaged", (name, data)
            assert data["params"]["run"] == str(run)
            for word in words:
                assert word in data["error"] and word in data["params"]["detail"]
            assert str(run / "tokenizer") in data["error"]


def test_without_any_run_the_panels_say_how_to_make_one(tmp_path):
    with serving(RunRegistry([])) as server:
        status, data = client_for(server).post("lm/tokens", {"text": "a"})
        assert status == 400 and data["code"] == "no_lm_run" and "seqlab demo" in data["error"]


def test_a_directory_that_is_not_a_run(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    runs = RunRegistry([str(tmp_path)])
    assert runs.runs[0].kind == "invalid" and runs.runs[0].problem.code == "run_not_run"
    assert "checkpoints/latest.pt" in str(runs.runs[0].problem)


def test_translate_without_a_seq2seq_run_says_how_to_train_one(model_client):
    status, data = model_client.post("seq2seq/translate", {"text": "ab"})
    assert status == 400 and data["code"] == "no_s2s_run" and "seqlab seq2seq train" in data["error"]


def test_a_seq2seq_run_that_cannot_be_loaded(tmp_path):
    """Files of a seq2seq run whose checkpoint is empty: without seqlab.seq2seq the page says the
    package is missing; with it, that the run cannot be loaded."""
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest.pt").write_bytes(b"")
    (tmp_path / "vocab.json").write_text("{}")
    (tmp_path / "config.json").write_text("{}")
    with serving(RunRegistry([str(tmp_path)])) as server:
        assert client_for(server).ok("runs")["runs"][0]["kind"] == "seq2seq"
        status, data = client_for(server).post("seq2seq/translate", {"text": "ab"})
    try:
        import seqlab.seq2seq.loading  # noqa: F401
    except ImportError:
        assert status == 400 and data["code"] == "s2s_missing"
    else:
        assert status == 400 and data["code"] == "run_damaged" and str(tmp_path) in data["error"]
