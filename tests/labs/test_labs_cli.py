"""`seqlab labs`: exit code, report, results.json keys and the loss-curve PNG (in-process)."""

import argparse
import json

import pytest

from seqlab.labs import checks
from seqlab.labs import cli as labs_cli

REQUIRED_KEYS = [
    ("recurrence", "states"), ("recurrence", "reversed_states"),
    ("jacobian_products", "half_pow_10"), ("jacobian_products", "two_pow_10"),
    ("clipping", "clipped"), ("clipping", "norm"),
    ("lstm_step", "c"), ("lstm_step", "h"), ("gru_step", "h"),
    ("attention", "scores"), ("attention", "weights"), ("attention", "output"),
    ("attention", "equal_scores_output"), ("attention", "causal_first_weights"),
    ("attention", "causal_first_output"), ("causal_mask", "visible"),
    ("multihead_shapes", "q"), ("multihead_shapes", "scores"), ("multihead_shapes", "head_output"),
    ("multihead_shapes", "concat"),
    ("char_lm", "parameters"), ("char_lm", "final_loss"), ("char_lm", "loss_trace"), ("char_lm", "greedy"),
    ("xor", "final_loss"),
]


def run_labs(argv):
    parser = argparse.ArgumentParser(prog="seqlab")
    labs_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["labs", *argv])
    return args.func(args)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("labs")
    import contextlib
    import io
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = run_labs(["--output", str(out)])
    return code, buffer.getvalue(), out


def test_exit_code_zero_and_report(full_run):
    code, report, _ = full_run
    assert code == 0
    assert "FAIL" not in report and "ALL PASS" in report
    for text in ("0.761594156", "4.641907605", "0.3581489351", "gradient check gru_pytorch", "'ello'"):
        assert text in report
    assert report.count("gradient check ") == len(checks.GRADIENT_CHECKS)


def test_results_json_has_every_key_with_the_worked_values(full_run):
    _, _, out = full_run
    results = json.loads((out / "results.json").read_text())
    for section, key in REQUIRED_KEYS:
        assert key in results[section], f"{section}.{key} missing"
    assert results["recurrence"]["states"] == pytest.approx([0.761594156, 0.363399484, -0.674143676], abs=1e-9)
    assert results["recurrence"]["reversed_states"][-1] == pytest.approx(0.674143676, abs=1e-9)
    assert results["jacobian_products"] == {"half_pow_10": 0.0009765625, "two_pow_10": 1024.0}
    assert results["clipping"]["clipped"] == pytest.approx([1.2, 1.6], abs=1e-12)
    assert results["clipping"]["norm"] == 5.0
    assert results["lstm_step"]["h"] == pytest.approx(0.3581489351, abs=1e-9)
    assert results["gru_step"]["h"] == pytest.approx(0.4, abs=1e-12)
    assert results["attention"]["equal_scores_output"] == pytest.approx(6.0)
    assert results["attention"]["causal_first_weights"] == [1.0, 0.0]
    assert results["causal_mask"]["visible"] == 6
    shapes = results["multihead_shapes"]
    assert (shapes["q"], shapes["scores"], shapes["head_output"], shapes["concat"]) == ([3, 2], [3, 3], [3, 2], [3, 4])
    assert results["char_lm"]["parameters"] == 56 and results["char_lm"]["greedy"] == "ello"
    assert results["char_lm"]["final_loss"] < 0.01 and len(results["char_lm"]["loss_trace"]) == 601
    assert results["xor"]["final_loss"] < 0.01
    assert set(results["gradient_checks"]) == set(checks.GRADIENT_CHECKS)
    assert all(err < 1e-7 for err in results["gradient_checks"].values())


def test_loss_curve_png_written(full_run):
    _, _, out = full_run
    png = (out / "loss_curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert not list(out.glob(".*.tmp"))    # no temporary files left behind


def test_a_failing_check_gives_a_non_zero_exit(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(checks.GRADIENT_CHECKS, "recurrence", lambda: {"a": 3e-6})
    assert run_labs(["--only", "recurrence", "--output", str(tmp_path)]) == 1
    report = capsys.readouterr().out
    assert "FAIL  gradient check recurrence" in report and "FAILED: gradient check recurrence" in report
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["gradient_checks"] == {"recurrence": 3e-6}
    assert results["failures"] == ["gradient check recurrence"]


def test_a_wrong_worked_value_gives_a_non_zero_exit(monkeypatch, capsys):
    from seqlab.labs import results
    monkeypatch.setattr(results.clipping, "clip_global_norm", lambda g, t: (g * 0.5, 5.0))
    assert run_labs(["--only", "clipping"]) == 1
    assert "FAIL  global-norm clip" in capsys.readouterr().out


def test_only_runs_one_lab(capsys):
    assert run_labs(["--only", "gru"]) == 0
    report = capsys.readouterr().out
    assert "== gru ==" in report and "== attention ==" not in report
    with pytest.raises(SystemExit):
        run_labs(["--only", "nonsense"])


def test_registered_in_the_seqlab_command(capsys):
    from seqlab.cli import COMMAND_MODULES
    assert "seqlab.labs.cli" in COMMAND_MODULES
    from seqlab.cli import main
    assert main(["labs", "--only", "lstm"]) == 0
    assert "h = 0.5 * tanh(0.9)" in capsys.readouterr().out


def test_output_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("not a directory")
    assert run_labs(["--only", "clipping", "--output", str(target)]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_the_cli_knows_every_lab():
    """--only's list is written out (the CLI imports no numpy at start-up); it must stay the registry's."""
    from seqlab.labs.results import SECTIONS

    assert labs_cli.LAB_NAMES == tuple(SECTIONS)


def test_a_nan_gradient_error_is_reported_as_a_failure():
    from seqlab.labs.results import collect

    run = collect("gru")
    run.gradient_checks["gru_paper"]["Wx"] = float("nan")
    report = labs_cli.format_report(run, 1e-7)
    assert "FAIL  gradient check gru_paper" in report
    assert "4 run, 1 failed" in report and "FAILED: gradient check gru_paper" in report
