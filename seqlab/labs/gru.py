"""GRU with hand-written BPTT, and a `convention` switch for the variants found in the literature.

Lecture convention (z = fraction of the OLD state kept):

    r = sigmoid(.)   z = sigmoid(.)   n = tanh(Wx_n x + bx_n + Wh_n (r * h_prev) + bh_n)
    h = z * h_prev + (1 - z) * n

Variants, chosen with `GRUConvention`:
- reset "before" the recurrent matmul, Wh_n (r * h_prev) (Cho et al. 2014, d2l), or "after" it,
  r * (Wh_n h_prev + bh_n) (PyTorch nn.GRU / nn.GRUCell).
- z_keeps_old=True (above; also PyTorch and d2l) or False, the complement h = (1 - z) h_prev + z n.

Maps stacked in PyTorch's order (r, z, n): Wx (3H, D), Wh (3H, H), bx (3H,), bh (3H,); the count is
3 (H D + H H + 2 H), three affine maps where the LSTM has four.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seqlab.labs.lstm import init_gate_maps, sigmoid
from seqlab.labs.rnn import check_sequence

GRU_PARAMS = ("Wx", "Wh", "bx", "bh")


@dataclass(frozen=True)
class GRUConvention:
    reset: str = "before"        # "before" (paper, d2l) or "after" (PyTorch) the recurrent matmul
    z_keeps_old: bool = True     # True: h = z h_prev + (1 - z) n; False: h = (1 - z) h_prev + z n

    def __post_init__(self):
        if self.reset not in ("before", "after"):
            raise ValueError(f"GRUConvention.reset must be 'before' or 'after', got {self.reset!r}")


NAMED_CONVENTIONS = {
    "paper": GRUConvention("before", True),
    "d2l": GRUConvention("before", True),
    "pytorch": GRUConvention("after", True),
}


def resolve_convention(convention) -> GRUConvention:
    if isinstance(convention, GRUConvention):
        return convention
    if convention in NAMED_CONVENTIONS:
        return NAMED_CONVENTIONS[convention]
    raise ValueError(f"unknown GRU convention {convention!r}; use a GRUConvention or one of "
                     f"{sorted(NAMED_CONVENTIONS)}")


def gru_gate_step(h_prev, z, candidate, z_keeps_old: bool = True):
    """Interpolate old state and candidate. z_keeps_old: h = z h_prev + (1 - z) candidate;
    otherwise h = (1 - z) h_prev + z candidate. h_prev=0.6, z=0.75, candidate=-0.2 -> 0.4."""
    h = z * h_prev + (1 - z) * candidate if z_keeps_old else (1 - z) * h_prev + z * candidate
    return float(h) if np.ndim(h) == 0 else h


def init_gru_params(input_size: int, hidden_size: int, rng: np.random.Generator,
                    scale: float = 0.5) -> dict[str, np.ndarray]:
    return init_gate_maps(3, input_size, hidden_size, rng, scale)


def gru_parameter_count(input_size: int, hidden_size: int) -> int:
    shapes = init_gru_params(input_size, hidden_size, np.random.default_rng(0))
    return int(sum(p.size for p in shapes.values()))


def gru_cell_forward(params, x, h_prev, convention="paper"):
    """x (D,), h_prev (H,) -> (h (H,), cache)."""
    conv = resolve_convention(convention)
    H = h_prev.shape[0]
    Wh, bh = params["Wh"], params["bh"]
    ax = params["Wx"] @ x + params["bx"]
    a_rz = ax[:2 * H] + Wh[:2 * H] @ h_prev + bh[:2 * H]
    r, z = sigmoid(a_rz[:H]), sigmoid(a_rz[H:])
    if conv.reset == "before":
        recurrent_n = Wh[2 * H:] @ (r * h_prev) + bh[2 * H:]   # reset the state, then multiply
    else:
        recurrent_n = r * (Wh[2 * H:] @ h_prev + bh[2 * H:])   # multiply, then reset the result
    n = np.tanh(ax[2 * H:] + recurrent_n)
    h = gru_gate_step(h_prev, z, n, conv.z_keeps_old)
    cache = {"x": x, "h_prev": h_prev, "r": r, "z": z, "n": n,
             "hidden_n": Wh[2 * H:] @ h_prev + bh[2 * H:]}
    return h, cache


def gru_cell_backward(params, cache, dh, grads, convention="paper"):
    """Backward through one cell given dh (H,). Accumulates into `grads`; returns (dx, dh_prev)."""
    conv = resolve_convention(convention)
    x, h_prev, r, z, n = cache["x"], cache["h_prev"], cache["r"], cache["z"], cache["n"]
    H = h_prev.shape[0]
    Wh_n = params["Wh"][2 * H:]
    if conv.z_keeps_old:
        dz, dn, dh_prev = dh * (h_prev - n), dh * (1 - z), dh * z
    else:
        dz, dn, dh_prev = dh * (n - h_prev), dh * z, dh * (1 - z)
    da_n = dn * (1 - n ** 2)                     # pre-activation of the candidate
    if conv.reset == "before":
        d_hidden_n = da_n                        # gradient at Wh_n (r h_prev) + bh_n
        grads["Wh"][2 * H:] += np.outer(d_hidden_n, r * h_prev)
        d_reset_state = Wh_n.T @ d_hidden_n
        dr = d_reset_state * h_prev
        dh_prev = dh_prev + d_reset_state * r
    else:
        d_hidden_n = da_n * r                    # gradient at Wh_n h_prev + bh_n
        grads["Wh"][2 * H:] += np.outer(d_hidden_n, h_prev)
        dr = da_n * cache["hidden_n"]
        dh_prev = dh_prev + Wh_n.T @ d_hidden_n
    grads["bh"][2 * H:] += d_hidden_n
    da_rz = np.concatenate([dr * r * (1 - r), dz * z * (1 - z)])
    grads["Wh"][:2 * H] += np.outer(da_rz, h_prev)
    grads["bh"][:2 * H] += da_rz
    dh_prev = dh_prev + params["Wh"][:2 * H].T @ da_rz
    dax = np.concatenate([da_rz, da_n])
    grads["Wx"] += np.outer(dax, x)
    grads["bx"] += dax
    return params["Wx"].T @ dax, dh_prev


def _initial_state(params, xs, h0):
    return check_sequence("gru", xs, params["Wx"].shape[1], params["Wh"].shape[1], h0=h0)


def gru_forward(params, xs, h0=None, convention="paper") -> dict:
    """xs (T, D) -> {"hs": (T, H), "caches": per-step caches}."""
    xs, h = _initial_state(params, xs, h0)
    hs, caches = [], []
    for x in xs:
        h, cache = gru_cell_forward(params, x, h, convention)
        hs.append(h)
        caches.append(cache)
    return {"hs": np.array(hs), "caches": caches}


def gru_bptt(params, xs, dhs, h0=None, convention="paper") -> dict[str, np.ndarray]:
    """BPTT given dhs (T, H). Returns gradients for Wx, Wh, bx, bh, xs (T, D), h0 (H,)."""
    xs, h0 = _initial_state(params, xs, h0)
    caches = gru_forward(params, xs, h0, convention)["caches"]
    grads = {name: np.zeros_like(params[name]) for name in GRU_PARAMS}
    grads["xs"] = np.zeros_like(xs)
    dh_next = np.zeros_like(h0)
    for t in reversed(range(len(xs))):
        grads["xs"][t], dh_next = gru_cell_backward(params, caches[t], dhs[t] + dh_next, grads, convention)
    grads["h0"] = dh_next
    return grads
