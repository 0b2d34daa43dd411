"""The --out rule of the campaign experiments (seqlab.runs.experiment), on a made-up command."""

from __future__ import annotations

import json

import pytest

from seqlab.runs.experiment import ExperimentOut, settings_differences

OUT = ExperimentOut("seqlab demo-experiment", collections=("models",), owns=("results.json", "report.md", "runs/a"),
                    owned_text="its runs/a, results.json and report.md")
SETTINGS = {f"k{i}": i for i in range(8)}


def _saved(out, **changes):
    out.mkdir(exist_ok=True)
    document = {"settings": SETTINGS, "fast": False, "seed": 0, "models": {}, **changes}
    (out / "results.json").write_text(json.dumps(document))
    return document


def test_the_same_settings_continue_and_other_ones_are_named(tmp_path):
    assert OUT.check(tmp_path / "new", SETTINGS, seed=0, fast=False, overwrite=False) is None
    saved = _saved(tmp_path / "out")
    assert OUT.check(tmp_path / "out", SETTINGS, seed=0, fast=False, overwrite=False) == saved
    other = {key: value + 1 for key, value in SETTINGS.items()}
    with pytest.raises(FileExistsError) as refused:
        OUT.check(tmp_path / "out", other, seed=1, fast=True, overwrite=False)
    message = str(refused.value)
    # --fast first, then the first five settings in key order, then how many more (3 settings and the seed)
    assert ("(not --fast there, --fast now; k0 0 there, 1 now; k1 1 there, 2 now; k2 2 there, 3 now; "
            "k3 3 there, 4 now; k4 4 there, 5 now; 4 more); rerun it with its own settings to resume it") in message
    assert OUT.check(tmp_path / "out", other, seed=1, fast=True, overwrite=True) is None
    # a key missing from older results equals a setting added later at its default (and only that)
    assert settings_differences({"settings": SETTINGS, "seed": 0}, {**SETTINGS, "new": None}, seed=0, fast=False,
                                added={"new": None}) == []
    assert settings_differences({"settings": SETTINGS, "seed": 0}, {**SETTINGS, "new": None}, seed=0,
                                fast=False) == ["new absent there, None now"]


def test_a_foreign_folder_a_file_and_a_damaged_results_file_are_refused(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"already holds files \(notes.txt\) and no results.json, so it is not a "
                                              r"`seqlab demo-experiment` experiment's folder.*\(its runs/a, "
                                              r"results.json and report.md are replaced"):
        OUT.check(foreign, SETTINGS, seed=0, fast=False, overwrite=False)
    with pytest.raises(NotADirectoryError, match="is a file"):
        OUT.check(foreign / "notes.txt", SETTINGS, seed=0, fast=False, overwrite=True)
    _saved(tmp_path / "wrong", models=[])
    with pytest.raises(ValueError, match=r'expected a JSON object with "settings" and "models"\); give another --out'):
        OUT.check(tmp_path / "wrong", SETTINGS, seed=0, fast=False, overwrite=False)


def test_start_over_deletes_only_what_the_experiment_owns(tmp_path):
    out = tmp_path / "out"
    _saved(out)
    for name in ("report.md", "notes.txt", "runs/a/log.jsonl", "runs/b/log.jsonl"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("x")
    OUT.start_over(out)
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert left == ["notes.txt", "runs/b/log.jsonl"]
    OUT.start_over(out)  # nothing of the experiment's left: nothing to do
