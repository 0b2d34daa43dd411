"""A live explorer server on a free port, shared by the explorer tests."""

from __future__ import annotations

import http.client
import json
from contextlib import contextmanager

import pytest

from seqlab.explorer.server import start_in_thread


class Client:
    """Tiny HTTP client for the explorer API (one connection per request)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                timeout: float = 10):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def post(self, name: str, payload=None, raw: bytes | None = None, headers: dict | None = None,
             timeout: float = 10):
        """POST JSON to /api/<name>; returns (status, decoded JSON body)."""
        body = raw if raw is not None else json.dumps({} if payload is None else payload).encode()
        status, _, data = self.request("POST", f"/api/{name}", body,
                                       {"Content-Type": "application/json", **(headers or {})}, timeout)
        return status, json.loads(data)

    def ok(self, name: str, payload=None) -> dict:
        status, data = self.post(name, payload)
        assert status == 200, data
        return data


@contextmanager
def serving(runs=None):
    """An explorer on a free loopback port (with ``runs``, a RunRegistry), stopped afterwards."""
    server, thread = start_in_thread("127.0.0.1", 0, runs=runs)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def client_for(server) -> Client:
    return Client(*server.server_address[:2])


@pytest.fixture(scope="session")
def explorer_server():
    with serving() as server:
        yield server


@pytest.fixture(scope="session")
def client(explorer_server) -> Client:
    return client_for(explorer_server)


# --- the user's own runs ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def lm_run(tmp_path_factory):
    """A language-model run trained here by `seqlab demo --fast` (2 layers, 2 heads, context 32;
    a few seconds)."""
    from seqlab.demo.pipeline import run_demo

    out = tmp_path_factory.mktemp("demo")
    run_demo(out, fast=True, progress=False)
    return out / "run"


@pytest.fixture(scope="session")
def damaged_run(lm_run, tmp_path_factory):
    """A copy of lm_run whose checkpoint was cut in half (as by a full disk)."""
    import shutil

    run = tmp_path_factory.mktemp("damaged") / "run"
    shutil.copytree(lm_run, run)
    checkpoint = run / "checkpoints" / "latest.pt"
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) // 2])
    return run


@pytest.fixture(scope="session")
def model_server(lm_run, damaged_run, tmp_path_factory):
    """An explorer serving lm_run (the default), the damaged run and a directory that does not exist."""
    from seqlab.explorer.runs import RunRegistry

    missing = tmp_path_factory.mktemp("gone") / "no_such_run"
    with serving(RunRegistry([str(lm_run), str(damaged_run), str(missing)])) as server:
        server.run_ids = {"lm": str(lm_run), "damaged": str(damaged_run), "missing": str(missing)}
        yield server


@pytest.fixture(scope="session")
def model_client(model_server) -> Client:
    return client_for(model_server)


@pytest.fixture(scope="session")
def loaded_lm(lm_run):
    """lm_run's model and tokenizer, loaded here (not through the explorer)."""
    from seqlab.runs.checkpoint import load_model_from_checkpoint
    from seqlab.tokenizer import Tokenizer

    model, _ = load_model_from_checkpoint(lm_run / "checkpoints" / "latest.pt")
    return model, Tokenizer.load(lm_run / "tokenizer")


@pytest.fixture(scope="session")
def side_by_side_dir(tmp_path_factory):
    """A folder laid out as `seqlab paths --out DIR` lays out its runs: runs/copy_rnn,
    runs/copy_rnn-attention and runs/copy_transformer, tiny models trained a few steps on copy (their
    weights are what they are; the tests compare with the library's numbers on them)."""
    from seqlab.seq2seq.settings import Seq2SeqTrainConfig
    from seqlab.seq2seq.task import train

    out = tmp_path_factory.mktemp("side_by_side")
    for arch in ("rnn", "rnn-attention", "transformer"):
        train(Seq2SeqTrainConfig(out_dir=str(out / "runs" / f"copy_{arch}"), task="copy", min_len=3, max_len=6,
                                 train_size=40, valid_size=4, arch=arch, d_model=16, num_heads=2, num_layers=1,
                                 context_length=16, max_steps=4, batch_size=8, lr=0.01, progress=False, threads=1,
                                 seed=0), say=lambda message: None)
    return out


def saturated_lm_run(directory):
    """A byte-level LM run whose every prediction is token 42 ('*') with p ~ 1: every token embeds with
    a large first component, which the final norm turns into the same direction, and the output layer
    reads that direction for token 42 only (logit about 40)."""
    import torch

    from seqlab.model import TransformerLM
    from seqlab.runs import save_checkpoint
    from seqlab.tokenizer import Tokenizer

    torch.manual_seed(0)
    model = TransformerLM(256, 64, 32, 2, 4)
    with torch.no_grad():
        model.token_embeddings.weight[:, 0] = 100.0
        model.lm_head.weight.mul_(0.01)
        model.lm_head.weight[42].zero_()
        model.lm_head.weight[42, 0] = 40.0 / 32 ** 0.5
    Tokenizer({i: bytes([i]) for i in range(256)}, []).save(directory / "tokenizer")
    save_checkpoint(model, None, 1, directory / "checkpoints" / "latest.pt")
    return directory
