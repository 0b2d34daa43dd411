"""Issue 21 over the explorer's run endpoints: tiny temperatures, top-k 0, a stream that fails midway,
text that is not Unicode, 20 clients at once and a run trained further while the explorer serves it.
Each test injects the fault and compares with an oracle computed here."""

from __future__ import annotations

import pytest
import torch

from seqlab.explorer.runs import RunRegistry
from tests.explorer.conftest import client_for, serving
from tests.explorer.test_model_api import TEXT, _stream


def test_tiny_temperature_is_greedy_in_every_panel(model_client, model_server, loaded_lm):
    """lm/sample was an HTTP 500, lm/generate a cut stream, lm/next 'weights damaged'."""
    from seqlab.inference.generate import generate

    model, tokenizer = loaded_lm
    ids = tokenizer.encode(TEXT)
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, -1]
    top = int(logits.argmax())
    data = model_client.ok("lm/next", {"text": TEXT, "temperature": 1e-300})
    assert data["candidates"][0]["id"] == top and data["candidates"][0]["prob"] == 1.0
    assert data["kept_total"] == 1
    assert model_client.ok("lm/sample", {"text": TEXT, "temperature": 1e-300})["token"]["id"] == top
    greedy = generate(model, ids, 20, temperature=0, eos_id=tokenizer.eot_id)
    lines = _stream(model_server, {"text": TEXT, "temperature": 1e-300, "max_tokens": 20})
    assert lines[-1]["done"] and lines[-1]["tokens"] == len(greedy)
    if greedy[-1] == tokenizer.eot_id:
        greedy = greedy[:-1]
    assert "".join(line["piece"] for line in lines[:-1]) == tokenizer.decode(greedy)


def test_top_k_zero_is_off_as_on_the_command_line(model_client):
    off = model_client.ok("lm/next", {"text": TEXT, "temperature": 0.7, "top_k": 0, "top_p": 0.9})
    assert off == model_client.ok("lm/next", {"text": TEXT, "temperature": 0.7, "top_k": None, "top_p": 0.9})
    assert off["kept_total"] > 1
    sample = {"text": TEXT, "seed": 4, "temperature": 1.3}
    assert model_client.ok("lm/sample", {**sample, "top_k": 0}) == model_client.ok("lm/sample", sample)


@pytest.mark.parametrize("failure, message", [
    (ValueError("the prompt is too odd"), "the prompt is too odd"),
    (RuntimeError("probability tensor contains inf"), "internal error while streaming: RuntimeError"),
])
def test_a_stream_that_fails_midway_ends_with_an_error_line(model_server, loaded_lm, monkeypatch, failure, message,
                                                           capsys):
    """Before, the server stopped writing and the page saw the stream end with no reason."""
    import seqlab.inference.generate as generation

    def failing(*args, **kwargs):
        def tokens():
            yield 65
            yield 66
            raise failure
        return tokens()

    monkeypatch.setattr(generation, "generate_stream", failing)
    lines = _stream(model_server, {"text": TEXT, "max_tokens": 10})
    tokenizer = loaded_lm[1]
    assert [line.get("piece") for line in lines[:-1]] == [tokenizer.decode([65]), tokenizer.decode([66])]
    assert lines[-1] == {"error": message}


def test_text_that_is_not_unicode_is_a_coded_400(model_client):
    raw = b'{"text": "caf\\udce9 au lait"}'  # a lone surrogate, valid JSON
    status, data = model_client.post("lm/tokens", raw=raw)
    assert status == 400 and data["code"] == "text_not_unicode", data
    assert "U+DCE9" in data["error"] or "byte 0xe9" in data["error"]
    assert "surrogates not allowed" not in data["error"]


def test_twenty_clients_at_once_are_all_served():
    """The listen backlog was 5: while the server was busy, the kernel dropped the connections of
    all but 6 of 20 clients arriving together. Here 20 connect while the server accepts nothing
    yet (each must be queued by the kernel), then every one gets its answer."""
    import socket
    import threading

    from seqlab.explorer.server import make_server

    server = make_server("127.0.0.1", 0)
    host, port = server.server_address[:2]
    clients, thread = [], None
    try:
        for _ in range(20):
            client = socket.create_connection((host, port), timeout=2)  # times out if the SYN is dropped
            clients.append(client)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        answers = []
        for client in clients:
            client.sendall(b"GET /api/defaults HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        for client in clients:
            data = b""
            while chunk := client.recv(65536):
                data += chunk
            answers.append(data.split(b"\r\n", 1)[0])
        assert answers == [b"HTTP/1.1 200 OK"] * 20
    finally:
        for client in clients:
            client.close()
        if thread is not None:  # shutdown() waits for a serve_forever that never started
            server.shutdown()
        server.server_close()


def test_twenty_concurrent_api_requests_get_the_same_answer(model_server, model_client):
    from concurrent.futures import ThreadPoolExecutor

    expected = model_client.ok("lm/next", {"text": TEXT})
    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: model_client.post("lm/next", {"text": TEXT}), range(20)))
    assert answers == [(200, expected)] * 20


def test_a_run_trained_further_is_reloaded(lm_run, tmp_path):
    """The explorer kept the model it loaded first: after the run on disk was trained further it
    went on answering with the old weights, with no sign. Now each request checks the checkpoint
    (one stat) and reloads it when it changed; lm/info shows the step."""
    import shutil

    from seqlab.runs.checkpoint import load_model_from_checkpoint
    from seqlab.tokenizer import Tokenizer
    from seqlab.training import save_checkpoint

    run = tmp_path / "run"
    shutil.copytree(lm_run, run)
    checkpoint = run / "checkpoints" / "latest.pt"
    tokenizer = Tokenizer.load(run / "tokenizer")
    ids = torch.tensor([tokenizer.encode(TEXT)])

    def top_ids(model):
        with torch.no_grad():
            return torch.sort(torch.softmax(model(ids)[0, -1].double(), -1), descending=True).indices[:20].tolist()

    old, payload = load_model_from_checkpoint(checkpoint)
    with serving(RunRegistry([str(run)])) as server:
        client = client_for(server)
        before = client.ok("lm/next", {"text": TEXT})
        assert [c["id"] for c in before["candidates"]] == top_ids(old)
        assert client.ok("lm/info")["step"] == payload["iteration"]
        # "train further": other weights, a later step, written the way training writes (atomic rename)
        torch.manual_seed(5)
        with torch.no_grad():
            for parameter in old.parameters():
                parameter.add_(torch.randn_like(parameter))
        save_checkpoint(old, None, payload["iteration"] + 100, str(checkpoint))
        new, _ = load_model_from_checkpoint(checkpoint)
        after = client.ok("lm/next", {"text": TEXT})
        assert [c["id"] for c in after["candidates"]] == top_ids(new) != top_ids(load_model_from_checkpoint(
            lm_run / "checkpoints" / "latest.pt")[0])
        assert client.ok("lm/info")["step"] == payload["iteration"] + 100
        # unchanged on disk: the loaded model is reused, not read again
        registry = server.runs
        assert registry.lm() is registry.lm()
