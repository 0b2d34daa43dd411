"""POST /api/interpret/* on a run trained in the test: every number equals the seqlab.interpret
function called here on the same run's model and tokens, and bad input is a 400 with a message and
a code the page translates."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.interpret import (
    direct_logit_attribution,
    head_roles,
    head_scores,
    knockout,
    logit_lens,
    patch,
)

CLEAN = "There was a little girl named Emma. Emma had a shiny stone. But then"
CORRUPT = CLEAN.replace("Emma", "Lily")


def ids_of(loaded_lm, text):
    model, tokenizer = loaded_lm
    return tokenizer.encode(text)[: model.config.context_length]


def close(api, ours):
    torch.testing.assert_close(torch.tensor(api, dtype=torch.float32), ours.float(), rtol=1e-4, atol=1e-5)


def test_lens_is_the_librarys_logit_lens(model_client, loaded_lm):
    data = model_client.ok("interpret/lens", {"text": CLEAN})
    model, tokenizer = loaded_lm
    ids = ids_of(loaded_lm, CLEAN)
    lens = logit_lens(model, ids, top_k=3)
    assert [t["id"] for t in data["tokens"]] == ids and data["layers"] == len(model.layers)
    assert data["top_ids"] == lens.top_ids.tolist()
    close(data["top_probs"], lens.top_probs)
    assert data["top_text"][1][0][0] == tokenizer.vocab[int(lens.top_ids[1, 0, 0])].decode("utf-8", "replace")
    probs = torch.tensor([[math.nan if p is None else p for p in row] for row in data["target_prob"]])
    torch.testing.assert_close(probs, lens.target_prob.float(), rtol=1e-4, atol=1e-5, equal_nan=True)
    assert all(row[-1] is None for row in data["target_prob"])  # the last token has no next token
    assert data["target_rank"] == lens.target_rank.tolist()


def test_attribution_is_the_librarys_and_sums_to_the_logit(model_client, loaded_lm):
    model, _ = loaded_lm
    ids = ids_of(loaded_lm, CLEAN)
    data = model_client.ok("interpret/attribute", {"text": CLEAN, "position": 3})
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, 3]
    assert data["target"]["id"] == int(logits.argmax()) and data["position"] == 3  # default: the top token
    ours = direct_logit_attribution(model, ids, position=3, target=data["target"]["id"])
    close(data["heads"], ours.heads)
    close(data["mlps"], ours.mlps)
    assert math.isclose(data["embed"], ours.embed, rel_tol=1e-4, abs_tol=1e-5)
    assert data["scale"]["bound"] >= 0.5 and data["scale"]["max"] >= max(max(map(max, data["heads"])), data["embed"])
    assert math.isclose(data["total"], float(logits.max()), rel_tol=1e-4, abs_tol=1e-4)
    parts = data["embed"] + sum(map(sum, data["heads"])) + sum(data["mlps"])
    assert math.isclose(parts, data["total"], rel_tol=1e-4, abs_tol=1e-4)


def test_patch_is_the_librarys_with_the_top_tokens_as_defaults(model_client, loaded_lm):
    model, tokenizer = loaded_lm
    clean, corrupt = ids_of(loaded_lm, CLEAN), ids_of(loaded_lm, CORRUPT)
    assert len(clean) == len(corrupt) and clean != corrupt
    for where in ("resid_pre", "head_out"):
        data = model_client.ok("interpret/patch", {"clean": CLEAN, "corrupt": CORRUPT, "where": where})
        with torch.no_grad():
            top_clean = model(torch.tensor([clean]))[0, -1].topk(2).indices.tolist()
            top_corrupt = int(model(torch.tensor([corrupt]))[0, -1].argmax())
        assert data["target"]["id"] == top_clean[0]
        assert data["baseline"]["id"] == (top_corrupt if top_corrupt != top_clean[0] else top_clean[1])
        ours = patch(model, clean, corrupt, target=data["target"]["id"], baseline=data["baseline"]["id"], where=where)
        close(data["recovery"], ours.recovery)
        assert data["scale"]["bound"] >= 1.0  # recovery's floor: 0 = corrupted, 1 = clean always fits
        assert data["changed"] == [i for i, (a, b) in enumerate(zip(clean, corrupt)) if a != b]
    # named tokens: the text of one token each
    target, baseline = (tokenizer.vocab[i].decode() for i in (clean[1], clean[2]))
    data = model_client.ok("interpret/patch", {"clean": CLEAN, "corrupt": CORRUPT, "where": "mlp_out",
                                               "target": target, "baseline": baseline})
    assert (data["target"]["id"], data["baseline"]["id"]) == (clean[1], clean[2])
    close(data["recovery"], patch(model, clean, corrupt, target=clean[1], baseline=clean[2], where="mlp_out").recovery)


def test_knockout_and_heads_are_the_librarys(model_client, loaded_lm):
    model, _ = loaded_lm
    ids = ids_of(loaded_lm, CLEAN)
    data = model_client.ok("interpret/knockout", {"text": CLEAN, "position": -2})
    assert data["position"] == len(ids) - 2
    expected = knockout(model, ids, position=-2)
    close(data["drops"], expected.drops)
    assert data["target"]["id"] == expected.target and math.isclose(data["p"], expected.p, rel_tol=1e-5)
    assert [n["code"] for n in data["notes"]] == [n.code for n in expected.notes]
    with torch.no_grad():
        assert data["target"]["id"] == int(model(torch.tensor([ids]))[0, -2].argmax())
    heads = model_client.ok("interpret/heads", {})
    scores = head_scores(model, seq_len=model.config.context_length // 2)
    assert heads["seq_len"] == 16 and heads["roles"] == head_roles(scores)
    for role, values in scores.items():
        close(heads["scores"][role], values)
    tl = model_client.ok("interpret/heads", {"convention": "transformerlens"})
    theirs = head_scores(model, seq_len=16, convention="transformerlens")
    assert tl["roles"] == heads["roles"] and tl["convention"] == "transformerlens"
    close(tl["scores"]["induction"], theirs["induction"])


@pytest.mark.parametrize("name, payload, code, words", [
    ("interpret/patch", {"clean": CLEAN, "corrupt": "There was"}, "patch_lengths", ["same number of tokens"]),
    ("interpret/patch", {"clean": "", "corrupt": CORRUPT}, "text_empty", ["clean and a corrupted"]),
    ("interpret/patch", {"clean": CLEAN, "corrupt": CORRUPT, "target": " the", "baseline": " the"}, None, []),
    ("interpret/lens", {"text": ""}, "text_empty", ["text is empty"]),
    ("interpret/knockout", {"text": CLEAN, "run": "elsewhere"}, "unknown_run", ["unknown run 'elsewhere'"]),
    ("interpret/heads", {"run": "elsewhere"}, "unknown_run", ["unknown run 'elsewhere'"]),
    ("interpret/attribute", {"text": CLEAN, "position": 500}, "position_range", ["position 500 is out of range"]),
    ("interpret/attribute", {"text": CLEAN, "target": " Emma and"}, "one_token", ["give the text of exactly one token"]),
    ("interpret/lens", {"text": CLEAN, "colour": 1}, None, ["unknown field(s): colour"]),
])
def test_bad_input_is_a_400_with_its_message(model_client, name, payload, code, words):
    status, data = model_client.post(name, payload)
    if payload.get("target") == " the":  # the same token twice, or " the" is not one token for this run
        assert status == 400 and data["code"] in ("patch_same", "one_token"), data
        return
    assert status == 400, data
    assert data.get("code") == code, data
    for word in words:
        assert word in data["error"], data


def test_a_request_over_the_cost_limit_is_refused_with_its_estimate_and_command(model_server, model_client):
    from seqlab.interpret.cost import estimate

    runs = model_server.runs
    previous, runs.interpret_limit = runs.interpret_limit, 1e-6
    try:
        status, data = model_client.post("interpret/patch", {"clean": CLEAN, "corrupt": CORRUPT})
    finally:
        runs.interpret_limit = previous
    assert status == 400 and data["code"] == "too_costly", data
    model = runs.lm(None).model
    seq = min(len(runs.lm(None).tokenizer.encode(CLEAN)), model.config.context_length)  # the window read
    cost = estimate(model, "patch", seq=seq)
    assert data["params"]["rows"] == cost.rows == len(model.layers) * seq
    assert data["params"]["seconds"] == round(cost.seconds, 1)
    assert data["params"]["command"].startswith("seqlab interpret patch --run ") and "--corrupt" in data["params"]["command"]
    assert "over this explorer's limit" in data["error"] and "progress bar" in data["error"]
