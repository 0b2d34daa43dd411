"""POST /api/interpret/seq2seq: one question asked of every architecture side by side, each answer
equal to seqlab.interpret called here on the same run; the explorer picks up the paths experiment's
runs and the induction experiment's 2-layer model (read in token ids, with its worked example)."""

from __future__ import annotations

import pytest
import torch

from seqlab.explorer.runs import RunRegistry
from tests.explorer.conftest import client_for, serving

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def side_client(side_by_side_dir):
    with serving(RunRegistry([], paths_dir=str(side_by_side_dir))) as server:
        yield client_for(server)


def test_every_architecture_answers_the_same_question(side_client, side_by_side_dir):
    from seqlab.interpret import knockout, token_dependencies
    from seqlab.seq2seq.loading import load_run

    runs = side_client.ok("runs")["runs"]
    ids = [r["id"] for r in runs if r["kind"] == "seq2seq"]
    assert [i.rsplit("_", 1)[-1] for i in ids] == ["rnn", "rnn-attention", "transformer"]
    data = side_client.ok("interpret/seq2seq", {"question": "depends", "text": "abcd"})
    assert [r["arch"] for r in data["results"]] == ["rnn", "rnn-attention", "transformer"]
    for result in data["results"]:
        run = load_run(result["run"], device="cpu")
        expected = token_dependencies(run.model, run.src_vocab.encode("abcd"))
        torch.testing.assert_close(torch.tensor(result["values"]), expected.values, rtol=1e-5, atol=1e-7)
        assert result["columns"] == list("abcd") and len(result["rows"]) == len(expected.predicted)
        assert result["scale"]["bound"] >= 1e-3 and result["measure"] == "||d log p(y_t) / d e_s||_2"
    knocked = side_client.ok("interpret/seq2seq", {"question": "knockout", "text": "abcd"})
    rnn, attention, transformer = knocked["results"]
    assert "plain RNN has no attention to cut" in rnn["error"]
    run = load_run(transformer["run"], device="cpu")
    expected = knockout(run.model, run.src_vocab.encode("abcd"))
    torch.testing.assert_close(torch.tensor(transformer["values"]), expected.drops.amax(0), rtol=1e-5, atol=1e-7)
    patched = side_client.ok("interpret/seq2seq", {"question": "patch", "text": "abcd", "corrupt": "abdc"})
    assert all("values" in r or "nothing to recover" in r["error"] for r in patched["results"])
    status, body = side_client.post("interpret/seq2seq", {"question": "patch", "text": "abcd"})
    assert status == 400 and body["code"] == "text_empty"


def test_the_induction_model_joins_the_runs_with_its_example(tmp_path, lm_run):
    """A --induction folder's runs/attn2 is an LM run read in token ids, with a repeated sequence."""
    import shutil

    from seqlab.model import ModelConfig, TransformerLM
    from seqlab.runs import save_checkpoint
    from seqlab.runs.config import RunConfig, write_run_config
    from seqlab.runs.kinds import Kind

    run = tmp_path / "induction" / "runs" / "attn2"
    config = ModelConfig(vocab_size=16, context_length=16, d_model=16, num_layers=2, num_heads=2, ffn="none")
    save_checkpoint(TransformerLM(config), None, 1, run / "checkpoints" / "latest.pt")
    from dataclasses import asdict

    write_run_config(run, RunConfig(Kind.LM, {}, asdict(config), {"task": "repeated random tokens"}))
    registry = RunRegistry([str(lm_run)], induction_dir=str(tmp_path / "induction"))
    with serving(registry) as server:
        client = client_for(server)
        runs = client.ok("runs")["runs"]
        ids = [r for r in runs if r["tokens"] == "ids"]
        assert len(ids) == 1 and ids[0]["id"] == str(run)
        clean, corrupt = ids[0]["example"]["clean"].split(), ids[0]["example"]["corrupt"].split()
        assert len(clean) == len(corrupt) == 15 and clean[8:] == clean[:7] and clean[7] != corrupt[7]
        lens = client.ok("interpret/lens", {"run": str(run), "text": ids[0]["example"]["clean"]})
        assert [t["text"] for t in lens["tokens"]] == clean
        status, body = client.post("interpret/lens", {"run": str(run), "text": "3 x 4"})
        assert status == 400 and body["code"] == "ids_text" and "'x' is not a token" in body["error"]
    shutil.rmtree(tmp_path / "induction")
