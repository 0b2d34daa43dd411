"""seqlab.runs.kinds: one vocabulary and one check for the two kinds of run."""

import json

import pytest

from seqlab.runs.kinds import SEQ2SEQ_TASKS, Kind, RunKindError, check_kind, how_to_make, run_kind


def test_task_names_held_as_data_equal_the_builtin_tasks():
    from seqlab.seq2seq.builtin_tasks import TASKS

    assert SEQ2SEQ_TASKS == tuple(TASKS)


def _run(tmp_path, config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


@pytest.mark.parametrize("config, kind", [({"kind": "lm"}, Kind.LM), ({"kind": "seq2seq"}, Kind.SEQ2SEQ),
                                          ({"train": {}, "model_config": {}}, Kind.SEQ2SEQ),
                                          ({"model": {}, "max_steps": 3}, Kind.LM), ({"x": 1}, None)])
def test_run_kind_from_key_then_old_shapes(tmp_path, config, kind):
    run = _run(tmp_path, config)
    assert run_kind(run) is kind
    assert run_kind(run / "checkpoints" / "latest.pt") is kind


def test_run_kind_falls_back_to_files(tmp_path):
    (tmp_path / "vocab.json").write_text("{}")
    assert run_kind(tmp_path) is Kind.SEQ2SEQ
    assert run_kind(tmp_path / "missing") is None


def test_check_kind_messages_by_purpose_and_by_command(tmp_path):
    run = _run(tmp_path, {"kind": "seq2seq"})
    check_kind(run, "seq2seq", "use")  # the right kind passes
    with pytest.raises(RunKindError, match=r"is a seq2seq run \(written by `seqlab seq2seq train`\), not a "
                                           r"language-model run; use `seqlab seq2seq translate --run"):
        check_kind(run, Kind.LM, "use")
    with pytest.raises(RunKindError, match=r"not a language model: `seqlab generate` needs a run of `seqlab train` "
                                           r"or `seqlab demo`; for this run use `seqlab seq2seq translate"):
        check_kind(run, "lm", "seqlab generate")
    with pytest.raises(FileNotFoundError, match=r"does not exist .*`seqlab seq2seq train --task dates --out"):
        check_kind(tmp_path / "dates", "lm", "seqlab generate", run_dir=True)


def test_how_to_make_names_the_task_or_both_kinds():
    assert "--task fr-en --out runs/fr-en" in how_to_make("runs/fr-en")
    assert how_to_make("runs/x", "lm").startswith("make it with `seqlab train --out runs/x`")
    assert "seqlab demo --fast" in how_to_make("runs/x") and "seqlab seq2seq train --out runs/x" in how_to_make("runs/x")
