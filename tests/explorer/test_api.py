"""Every widget's API endpoint: the worked example by default, and edits, against independent oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqlab.explorer.api import DEFAULTS, ENDPOINTS

TOL = 1e-9


def test_every_widget_has_an_endpoint_and_defaults(client):
    status, _, body = client.request("GET", "/api/defaults")
    assert status == 200
    import json

    served = json.loads(body)
    assert set(served) == set(DEFAULTS) == set(ENDPOINTS)
    assert served["lstm"] == {"c_prev": 1.0, "f": 0.8, "i": 0.25, "g": 0.4, "o": 0.5}


# --- 1. recurrence -----------------------------------------------------------------------------------
def _tanh_loop(a, xs, h0=0.0):
    states, h = [], h0
    for x in xs:
        h = math.tanh(a * h + x)
        states.append(h)
    return states


def test_recurrence_worked_example(client):
    data = client.ok("recurrence")
    assert data["states"] == pytest.approx([0.761594156, 0.363399484, -0.674143676], abs=TOL)
    assert data["reversed_states"][-1] == pytest.approx(0.674143676, abs=TOL)
    assert data["states"] == pytest.approx(_tanh_loop(0.5, [1, 0, -1]), abs=1e-15)


def test_recurrence_edit_matches_a_plain_loop(client):
    xs = [0.3, -2.0, 1.5, 0.25]
    data = client.ok("recurrence", {"a": -1.3, "h0": 0.2, "xs": xs})
    assert data["states"] == pytest.approx(_tanh_loop(-1.3, xs, 0.2), abs=1e-15)
    assert data["reversed_states"] == pytest.approx(_tanh_loop(-1.3, xs[::-1], 0.2), abs=1e-15)


# --- 2. character LM ---------------------------------------------------------------------------------
def test_char_lm_worked_example(client):
    data = client.ok("char_lm")
    assert data["parameters"] == 56
    assert data["greedy"] == "ello"
    assert data["final_loss"] < 0.01
    assert len(data["loss_trace"]) == 601 and data["loss_trace"][-1] == data["final_loss"]
    assert data["vocab"] == ["h", "e", "l", "o"] and data["inputs"] == "hell" and data["targets"] == "ello"
    dists = np.array(data["distributions"])
    assert dists.shape == (4, 4)
    np.testing.assert_allclose(dists.sum(axis=1), 1.0, atol=1e-12)
    # the reported loss is the mean cross-entropy of those distributions at the targets
    targets = [data["vocab"].index(ch) for ch in data["targets"]]
    assert -np.mean(np.log(dists[range(4), targets])) == pytest.approx(data["final_loss"], rel=1e-9)


def test_char_lm_reset_state_gives_both_l_positions_one_distribution(client):
    data = client.ok("char_lm", {"reset_state": True})
    assert data["distributions"][2] == data["distributions"][3]
    assert data["distributions"][2][2] < 0.9 and data["distributions"][2][3] > 0.1  # a mix of "l" and "o"


def test_char_lm_is_deterministic_and_step_count_matters(client):
    short = client.ok("char_lm", {"steps": 20})
    again = client.ok("char_lm", {"steps": 20})
    assert short == again
    assert len(short["loss_trace"]) == 21
    assert short["final_loss"] > client.ok("char_lm")["final_loss"]


# --- 3. gradient flow -------------------------------------------------------------------------------------
def test_repeated_factor_worked_example(client):
    data = client.ok("repeated_factor")
    assert data["products"] == [0.0009765625, 1024.0]
    assert data["trajectories"][0] == [0.5**k for k in range(11)]
    assert data["trajectories"][1] == [2.0**k for k in range(11)]


def test_clipping_worked_example_and_torch_oracle(client):
    data = client.ok("clipping")
    assert data["global_norm"]["clipped"] == pytest.approx([1.2, 1.6], abs=TOL)
    assert data["global_norm"]["norm"] == pytest.approx(5.0, abs=TOL)
    assert data["coordinatewise"] == [2.0, 2.0]
    vector = [0.5, -7.0, 3.0]
    data = client.ok("clipping", {"vector": vector, "threshold": 1.5})
    grad = torch.tensor(vector, dtype=torch.float64)
    p = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    p.grad = grad.clone()
    torch.nn.utils.clip_grad_norm_([p], 1.5)
    assert data["global_norm"]["clipped"] == pytest.approx(p.grad.tolist(), rel=1e-5)
    assert data["coordinatewise"] == torch.clamp(grad, -1.5, 1.5).tolist()


def test_truncated_bptt_reach(client):
    data = client.ok("tbptt")
    assert data == {"reach": [6, 7], "chunk_starts": [0, 3, 6]}
    data = client.ok("tbptt", {"num_steps": 10, "chunk_length": 4, "loss_step": 6})
    assert data == {"reach": [4, 5, 6], "chunk_starts": [0, 4, 8]}
    assert client.ok("tbptt", {"chunk_length": 8})["reach"] == list(range(8))


# --- 4/5. LSTM and GRU ----------------------------------------------------------------------------------
def test_lstm_worked_example(client):
    data = client.ok("lstm")
    assert data["c"] == pytest.approx(0.9, abs=TOL)
    assert data["h"] == pytest.approx(0.3581489351, abs=TOL)
    assert data["retained"] == pytest.approx(0.8, abs=TOL) and data["written"] == pytest.approx(0.1, abs=TOL)


def test_lstm_forget_one_input_zero_keeps_the_cell(client):
    data = client.ok("lstm", {"c_prev": -1.7, "f": 1, "i": 0})
    assert data["c"] == -1.7 and data["written"] == 0
    assert data["h"] == pytest.approx(0.5 * math.tanh(-1.7), abs=1e-15)


def test_gru_worked_example_in_both_conventions(client):
    data = client.ok("gru")
    assert data["h"] == pytest.approx(0.4, abs=TOL)
    assert data["other"]["convention"] == "keep_new"
    assert data["other"]["z"] == pytest.approx(0.25, abs=TOL)
    assert data["other"]["h"] == pytest.approx(0.4, abs=TOL)
    flipped = client.ok("gru", {"z": 0.25, "convention": "keep_new"})
    assert flipped["h"] == pytest.approx(0.4, abs=TOL)
    # the keep_new convention is not just a relabeling: same z, different state
    assert client.ok("gru", {"convention": "keep_new"})["h"] == pytest.approx(0.25 * 0.6 + 0.75 * -0.2, abs=1e-15)


# --- 6. attention -------------------------------------------------------------------------------------
def _torch_attention(q, k, v, mask=None):
    q, k, v = (torch.tensor(x, dtype=torch.float64) for x in (q, k, v))
    m = None if mask is None else torch.tensor(mask)
    return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=m)[0].numpy()


def test_attention_worked_example(client):
    data = client.ok("attention")
    assert data["scores"][0] == pytest.approx([0.7071067812, 0.0], abs=TOL)
    assert data["weights"][0] == pytest.approx([0.6697615493, 0.3302384507], abs=TOL)
    assert data["output"][0][0] == pytest.approx(4.6419076054, abs=TOL)
    assert data["fully_masked_rows"] == [] and data["leak_check"] == {"checked": False, "leaks": []}


def test_attention_query_swap_equal_scores_and_causal_row(client):
    swapped = client.ok("attention", {"queries": [[0, 1]]})
    assert swapped["weights"][0] == pytest.approx([0.3302384507, 0.6697615493], abs=TOL)
    assert client.ok("attention", {"queries": [[0, 0]]})["output"][0][0] == pytest.approx(6.0, abs=TOL)
    causal = client.ok("attention", {"causal": True})
    assert causal["weights"][0] == [1.0, 0.0]
    assert causal["output"][0][0] == 2.0
    assert causal["scores"][0][1] is None  # masked score
    assert causal["leak_check"] == {"checked": True, "leaks": []}


def test_reversed_mask_is_caught_by_the_leak_check(client):
    data = client.ok("attention", {"causal": True, "reverse_mask": True})
    assert data["leak_check"]["leaks"] == [[0, 1]]
    three = {"queries": [[1, 0], [0, 1], [1, 1]], "keys": [[1, 0], [0, 1], [1, 1]], "values": [[1], [2], [3]]}
    assert client.ok("attention", {**three, "causal": True})["leak_check"]["leaks"] == []
    leaks = client.ok("attention", {**three, "causal": True, "reverse_mask": True})["leak_check"]["leaks"]
    assert leaks == [[0, 1], [0, 2], [1, 2]]


def test_attention_matches_torch_with_masks(client):
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    body = {"queries": q.tolist(), "keys": k.tolist(), "values": v.tolist()}
    data = client.ok("attention", body)
    np.testing.assert_allclose(data["output"], _torch_attention(q, k, v), atol=1e-12)
    data = client.ok("attention", {**body, "causal": True, "padding": True, "valid_length": 2})
    mask = np.tril(np.ones((5, 5), dtype=bool))[:3] & (np.arange(5) < 2)
    np.testing.assert_allclose(data["output"], _torch_attention(q, k, v, mask), atol=1e-12)
    assert np.array_equal(data["mask"], mask)
    weights = np.array(data["weights"])
    assert np.all(weights[~mask] == 0) and np.allclose(weights.sum(axis=1), 1.0)


def test_fully_masked_row_is_flagged_not_nan(client):
    data = client.ok("attention", {"padding": True, "valid_length": 0})
    assert data["fully_masked_rows"] == [0]
    assert data["weights"] == [[0.0, 0.0]] and data["output"] == [[0.0]]


def test_cross_attention_is_rectangular(client):
    d = DEFAULTS["cross_attention"]
    data = client.ok("cross_attention")
    assert np.shape(data["weights"]) == (len(d["queries"]), len(d["keys"])) == (2, 3)
    np.testing.assert_allclose(data["output"], _torch_attention(d["queries"], d["keys"], d["values"]), atol=1e-12)
    padded = client.ok("cross_attention", {"padding": True, "valid_length": 2})
    assert [row[2] for row in padded["weights"]] == [0.0, 0.0]


# --- 7/8. masks and shapes ---------------------------------------------------------------------------------
def test_causal_mask_grid(client):
    data = client.ok("causal_mask")
    assert data["visible"] == 6 and data["tokens"] == ["A", "B", "C"]
    assert data["mask"] == np.tril(np.ones((3, 3), dtype=bool)).tolist()
    for n in range(1, 9):
        assert client.ok("causal_mask", {"tokens": [f"t{i}" for i in range(n)]})["visible"] == n * (n + 1) // 2


def test_multihead_shapes(client):
    shapes = dict(client.ok("multihead")["shapes"])
    assert shapes["x"] == [3, 4]
    assert shapes["q"] == shapes["k"] == shapes["v"] == [3, 2]
    assert shapes["scores"] == [3, 3] and shapes["head_output"] == [3, 2]
    assert shapes["concat"] == [3, 4] and shapes["output"] == [3, 4]
    bigger = dict(client.ok("multihead", {"n": 5, "d_model": 12, "num_heads": 3})["shapes"])
    assert bigger["q"] == [5, 4] and bigger["scores"] == [5, 5] and bigger["concat"] == [5, 12]


# --- 9. BPE --------------------------------------------------------------------------------------------
def test_bpe_handout_merges(client):
    steps = client.ok("bpe")["steps"]
    assert [s["chosen"] for s in steps] == [["s", "t"], ["e", "st"], ["o", "w"], ["l", "ow"], ["w", "est"], ["n", "e"]]
    first = steps[0]
    assert first["best_count"] == 9 and sorted(first["tied"]) == [["e", "s"], ["s", "t"]]
    assert first["words"]["newest"] == ["n", "e", "w", "e", "st"]
    assert steps[-1]["words"]["newest"] == ["ne", "west"]


def test_bpe_custom_words(client):
    steps = client.ok("bpe", {"word_counts": {"aaab": 2, "ab": 1}, "num_merges": 5})["steps"]
    # "aaab" holds "a a" twice (x2 copies) = 4, "a b" 2 + 1 = 3
    assert steps[0]["pair_counts"] == [["a", "a", 4], ["a", "b", 3]]
    assert steps[0]["chosen"] == ["a", "a"] and steps[0]["words"]["aaab"] == ["aa", "a", "b"]
    assert steps[-1]["words"] == {"aaab": ["aaab"], "ab": ["ab"]}  # stops when nothing is left to merge
    assert client.ok("bpe", {"word_counts": {"a": 5, "b": 2}})["steps"] == []


# --- 10/11. self-check and dependency map -----------------------------------------------------------------
def test_selfcheck_answers_are_the_worked_values(client):
    data = client.ok("selfcheck")
    assert data["recurrence"]["h3"] == pytest.approx(-0.674143676, abs=TOL)
    assert data["recurrence"]["reversed_h3"] == pytest.approx(0.674143676, abs=TOL)
    assert data["char_lm"]["reset_l_rows"][0] == data["char_lm"]["reset_l_rows"][1]
    assert data["gradient"]["products"] == [0.0009765625, 1024.0]
    assert data["lstm"]["keep"]["c"] == 1.0 and data["gru"]["h"] == pytest.approx(0.4, abs=TOL)
    assert data["attention"]["equal_output"] == pytest.approx([6.0], abs=TOL)
    assert data["attention"]["causal"]["output"] == [[2.0]]
    assert data["causal_mask"] == {"visible3": 6, "visible5": 15}
    assert data["multihead"]["concat"] == [3, 4]
    assert data["bpe"]["first"]["chosen"] == ["s", "t"]
    assert data["dependency"]["depends"][0] == [True, False, False, False]


@pytest.mark.parametrize("kind", ["rnn", "birnn", "causal_self_attention", "self_attention", "cross_attention"])
def test_dependency_endpoint(client, kind):
    data = client.ok("dependency", {"kind": kind, "num_tokens": 3})
    depends = np.array(data["depends"])
    past_only = np.tril(np.ones((3, 3), dtype=bool))
    expected = {
        "rnn": past_only,
        "birnn": np.ones((3, 3), dtype=bool),
        "causal_self_attention": past_only,
        "self_attention": np.ones((3, 3), dtype=bool),
        "cross_attention": np.hstack([np.eye(3, dtype=bool), np.ones((3, 4), dtype=bool)]),
    }[kind]
    assert np.array_equal(depends, expected)
    assert len(data["output_labels"]) == 3 and len(data["input_labels"]) == depends.shape[1]
