"""Warm-up + cosine learning-rate schedule."""

import math

import pytest

from seqlab.training import lr_cosine_schedule

# the CS336 reference values for max 1, min 0.1, warm-up 7, cosine cycle 21
EXPECTED = [
    0, 0.14285714285714285, 0.2857142857142857, 0.42857142857142855, 0.5714285714285714,
    0.7142857142857143, 0.8571428571428571, 1.0, 0.9887175604818206, 0.9554359905560885,
    0.9018241671106134, 0.8305704108364301, 0.7452476826029011, 0.6501344202803414,
    0.55, 0.44986557971965857, 0.3547523173970989, 0.26942958916356996, 0.19817583288938662,
    0.14456400944391146, 0.11128243951817937, 0.1, 0.1, 0.1, 0.1,
]


def test_matches_closed_form_values():
    got = [lr_cosine_schedule(it, 1.0, 0.1, 7, 21) for it in range(25)]
    for it, (a, b) in enumerate(zip(got, EXPECTED)):
        # independent closed form as a second check
        if it < 7:
            ref = it / 7
        elif it <= 21:
            ref = 0.1 + 0.5 * (1 + math.cos(math.pi * (it - 7) / 14)) * 0.9
        else:
            ref = 0.1
        assert a == pytest.approx(b, abs=1e-12) and a == pytest.approx(ref, abs=1e-12)


def test_edge_cases():
    assert lr_cosine_schedule(0, 3e-4, 3e-5, 0, 10) == pytest.approx(3e-4)
    assert lr_cosine_schedule(10, 3e-4, 3e-5, 0, 10) == pytest.approx(3e-5)
    assert lr_cosine_schedule(5, 1.0, 0.0, 5, 5) == 1.0
    with pytest.raises(ValueError, match="warmup_iters"):
        lr_cosine_schedule(1, 1.0, 0.0, 10, 5)
