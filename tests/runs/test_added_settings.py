"""The rule for settings added after records were written: one whose default keeps the old
behaviour (field metadata ``added``, seqlab.settings.added_defaults) equals its absence when
settings are compared: a sweep's sweep.json (tests/sweep/test_old_sweeps.py), an experiment's
results.json (paths, induction) and a resumed run's config.json. Every setting added since 0.1.0
is either such a setting or a renamed one, checked against the records 0.1.0 wrote
(tests/fixtures/*_0.1.0)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.lm.settings import TrainConfig
from seqlab.model.config import ModelConfig
from seqlab.runs.experiment import ExperimentOut
from seqlab.seq2seq.config import Seq2SeqConfig
from seqlab.seq2seq.paths.settings import PathsSettings
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.settings import OLD_NAMES, added_defaults, with_added_defaults

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def settings_of_0_1_0() -> list[tuple[type, set[str]]]:
    """Each settings class and the keys 0.1.0's records of it hold."""
    lm = _json(FIXTURES / "runs_0.1.0" / "lm" / "config.json")
    s2s = _json(FIXTURES / "runs_0.1.0" / "seq2seq" / "config.json")
    sweep = _json(FIXTURES / "sweep_0.1.0" / "sweep" / "sweep.json")
    paths = _json(FIXTURES / "paths_0.1.0" / "paths" / "results.json")
    return [(TrainConfig, set(lm)), (TrainConfig, set(sweep["base"]) | {"out_dir", "resume", "overwrite"}),
            (ModelConfig, set(lm["model"])), (Seq2SeqTrainConfig, set(s2s["train"])),
            (Seq2SeqConfig, set(s2s["model_config"])), (PathsSettings, set(paths["settings"]))]


def later_settings(cls: type, old_keys: set[str]) -> set[str]:
    """The fields of ``cls`` a 0.1.0 record lacks, less those it holds under an old name."""
    renamed = {rule.new for old, rule in OLD_NAMES.items() if old in old_keys}
    return {f.name for f in dataclasses.fields(cls)} - old_keys - renamed


NOT_IN_A_SWEEP = {"reschedule", "progress", "wandb", "wandb_project", "tensorboard", "threads"}  # sweep's NOT_IDENTITY


@pytest.mark.parametrize("index", range(6))
def test_every_setting_added_since_0_1_0_keeps_the_old_behaviour_at_its_default_or_is_a_rename(index):
    cls, old_keys = settings_of_0_1_0()[index]
    if index == 1:
        old_keys |= NOT_IN_A_SWEEP
    later = later_settings(cls, old_keys)
    unmarked = sorted(later - set(added_defaults(cls)))
    assert not unmarked, (f"{cls.__name__}: {unmarked} came after 0.1.0; give each added=VERSION when its default "
                          "keeps the old behaviour (else old records compare as different)")
    assert not (later and index == 0) or later == {"track_heads"}, later  # what this check has seen so far


def test_the_check_sees_an_unmarked_setting():
    @dataclass
    class Later(TrainConfig):
        sparkle: bool = False

    assert later_settings(Later, settings_of_0_1_0()[0][1]) - set(added_defaults(Later)) == {"sparkle"}


def test_an_added_setting_at_its_default_equals_its_absence():
    assert added_defaults(TrainConfig) == {"track_heads": False}
    saved = {"lr": 0.01}
    assert with_added_defaults(saved, TrainConfig) == {"track_heads": False, "lr": 0.01}
    assert with_added_defaults({"track_heads": True}, TrainConfig) == {"track_heads": True}


@dataclass(frozen=True)
class Budget:
    steps: int = 100
    mlp_steps: int | None = field(default=None, metadata={"added": "0.3.0"})
    lengths: tuple = field(default=(1, 2), metadata={"added": "0.3.0"})

    def to_json(self):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def test_an_experiment_from_before_an_added_setting_is_continued_and_another_value_refused(tmp_path):
    out = ExperimentOut("seqlab demo-experiment", collections=("models",), owns=("results.json",), owned_text="x",
                        settings_class=Budget)
    (tmp_path / "results.json").write_text(json.dumps({"settings": {"steps": 100}, "fast": False, "seed": 0,
                                                       "models": {}}))
    assert out.check(tmp_path, Budget().to_json(), seed=0, fast=False, overwrite=False) is not None
    with pytest.raises(FileExistsError, match=r"other settings \(mlp_steps None there, 30 now\)"):
        out.check(tmp_path, Budget(mlp_steps=30).to_json(), seed=0, fast=False, overwrite=False)
    with pytest.raises(FileExistsError, match=r"other settings \(steps 100 there, 7 now\)"):
        out.check(tmp_path, Budget(steps=7).to_json(), seed=0, fast=False, overwrite=False)
    bare = ExperimentOut("seqlab demo-experiment", collections=("models",), owns=("results.json",), owned_text="x")
    with pytest.raises(FileExistsError, match=r"lengths absent there, \[1, 2\] now"):  # the rule needs the class
        bare.check(tmp_path, Budget().to_json(), seed=0, fast=False, overwrite=False)


def test_a_0_1_0_paths_experiment_reruns_with_its_own_command_and_trains_nothing(tmp_path, monkeypatch, capsys):
    import seqlab.seq2seq.paths.experiment as experiment

    spec = importlib.util.spec_from_file_location("paths_fixture_make", FIXTURES / "paths_0.1.0" / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    shutil.copytree(FIXTURES / "paths_0.1.0" / "paths", tmp_path / "paths")
    monkeypatch.chdir(tmp_path)

    def train(config, **kwargs):
        raise AssertionError(f"{config.out_dir} trained again")

    monkeypatch.setattr(experiment, "train", train)
    assert main(make.COMMAND) == 0
    assert "3 of 3 models done earlier" in capsys.readouterr().out
