"""The README cannot drift: its commands parse with seqlab's own parser, each reads only what an
earlier block wrote or the repository ships, and (slow) they run in their written order on a fresh
copy of the repository, CPU-sized (``benchmarks/readme_commands.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.model.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


readme_commands = load_benchmark("readme_commands")
README = (ROOT / "README.md").read_text(encoding="utf-8")
# the guide: the README and its docs/ pages, in reading order (benchmarks/readme_commands.py GUIDE)
GUIDE_TEXT = "\n".join((ROOT / name).read_text(encoding="utf-8") for name in readme_commands.GUIDE
                        if (ROOT / name).is_file())


def _check(text: str, shipped=frozenset({"README.md", "docs", "docs/explorer.png"})) -> list[str]:
    return readme_commands.check(textwrap.dedent(text), set(shipped))


def test_every_block_of_the_readme_is_marked_and_every_command_parses_and_finds_its_inputs():
    assert readme_commands.check_guide(ROOT) == []


def test_the_readme_runs_something_of_every_kind():
    blocks = readme_commands.read_guide(ROOT)
    actions = {b.action for b in blocks}
    assert actions == {"run", "skip", "file"}
    ran = [str(c) for b in blocks if b.action == "run" for c in readme_commands.commands(b)]
    # the CPU-sized training example, with its resume, and the seq2seq and export commands really run
    assert any(c.startswith("seqlab train --data-dir data/stories --out runs/small") for c in ran), ran
    assert "seqlab train --out runs/small --resume --max-steps 40" in ran
    assert any(c.startswith("seqlab seq2seq train --task dates") for c in ran)
    assert "seqlab export --to hf runs/small hf/small" in ran
    skipped = {b.reason for b in blocks if b.action == "skip"}
    assert any("GPU" in reason for reason in skipped) and any("2.2 GB" in reason for reason in skipped)


def test_ts_toml_is_shown_before_it_is_used_and_is_a_valid_training_config(tmp_path):
    from seqlab.lm.settings import config_from_argv

    blocks = readme_commands.read_guide(ROOT)
    (toml,) = [b for b in blocks if b.action == "file" and b.file == "ts.toml"]
    first_use = min(b.number for b in blocks if "ts.toml" in b.text and b.lang == "bash")
    assert toml.number < first_use
    (tmp_path / "ts.toml").write_text(toml.text)
    config = config_from_argv(["--config", str(tmp_path / "ts.toml")])
    assert (config.data_dir, config.out_dir, config.d_model, config.batch_size) == ("data/ts", "runs/ts", 512, 64)
    assert config.total_steps(1) == 327_680_000 // (64 * 256) == 20_000  # "20,000 steps of 64 x 256 tokens"
    # the CPU example and the GPU example train into different directories
    outs = [c.writes for c in readme_commands.analysed_commands(blocks)
            if "seqlab" in c.argv and c.argv[c.argv.index("seqlab") + 1:][:1] == ["train"]
            and "--resume" not in c.argv]
    assert outs == [["runs/small"], ["runs/ts"], ["runs/ts-4gpu"]]


def test_an_unknown_flag_or_subcommand_is_named_with_its_line():
    problems = _check("""
        <!-- readme-test: run -->
        ```bash
        seqlab accounting --preset tinystories --no-such-flag 3
        seqlab trian --data-dir x
        ```
        """)
    assert len(problems) == 2
    assert problems[0].startswith("README.md:4: seqlab accounting") and "unrecognized arguments: --no-such-flag 3" in problems[0]
    assert problems[1].startswith("README.md:5: seqlab trian") and "invalid choice: 'trian'" in problems[1]


def test_a_path_read_before_any_block_writes_it_is_a_problem():
    problems = _check("""
        <!-- readme-test: run -->
        ```bash
        seqlab generate --run runs/small --prompt "Once"
        seqlab train --out runs/small --resume
        seqlab train --data-dir data/x --out runs/small --max-steps 5 && seqlab eval --run runs/small --data data/x/valid.npy
        ```
        """)
    assert [p.split(":")[1] for p in problems] == ["4", "5", "6", "6"]
    assert "reads runs/small" in problems[0] and "reads runs/small" in problems[1]  # --resume reads --out
    assert "seqlab train --data-dir data/x" in problems[2] and "reads data/x," in problems[2]
    assert "seqlab eval --run runs/small" in problems[3] and "reads data/x/valid.npy," in problems[3]
    assert "reads runs/small," not in problems[3]  # the train before it on the same line wrote it


def test_what_an_earlier_block_writes_a_file_block_given_and_later_paths_are_fine():
    problems = _check("""
        <!-- readme-test: file cfg.toml -->
        ```toml
        data_dir = "data/x"
        [run]
        out_dir = "runs/y"
        ```

        <!-- readme-test: run; given data/x: your own data; later runs/z -->
        ```bash
        torchrun --nproc_per_node 2 -m seqlab train --config cfg.toml
        seqlab generate --run runs/y/ --prompt "Once"   # inside what the config's out_dir names
        seqlab explore --run runs/z --run docs
        ```

        <!-- readme-test: skip: long -->
        ```bash
        seqlab train --data-dir data/x --out runs/z --max-steps 5
        ```
        """)
    assert problems == []


def test_markers_are_checked():
    problems = _check("""
        ```bash
        seqlab labs
        ```

        <!-- readme-test: run; "--max-steps 100" -> "--max-steps 1"; later runs/q -->
        ```bash
        seqlab labs --only attention
        ```

        <!-- readme-test: skip -->
        ```bash
        seqlab labs
        ```

        <!-- readme-test: file x.toml -->
        ```toml
        not = [valid
        ```
        """)
    text = "\n".join(problems)
    assert "README.md:2 (block 1, bash): no <!-- readme-test" in text
    assert "the replacement '--max-steps 100' is not in the block" in text
    assert "'later runs/q', but no command of the guide writes it" in text
    assert "README.md:12 (block 3, bash): unknown marker part 'skip'" in text
    assert "x.toml is not valid TOML" in text
    assert len(problems) == 6  # ... and block 3's marker says neither run nor skip


def test_the_run_leaves_out_pip_and_what_needs_a_skipped_block(tmp_path):
    (tmp_path / "README.md").write_text(textwrap.dedent("""
        <!-- readme-test: skip: a long download -->
        ```bash
        seqlab data tinystories --out raw
        ```

        <!-- readme-test: run; "--steps 400000" -> "--steps 10" -->
        ```bash
        pip install -e . && seqlab accounting --preset tinystories --steps 400000 --json --train-batch-size 1
        seqlab prepare --train raw/a.txt --valid raw/b.txt --vocab-size 300 --out data/ts
        seqlab train --data-dir data/ts --out runs/ts --max-steps 1
        ```
        """))
    said: list[str] = []
    readme_commands.run(tmp_path, seqlab_from=ROOT, say=said.append)
    assert said[0].endswith("skipped (a long download)")
    assert "ran 1 command(s)" in said[1]
    assert "left out `pip install -e ...` (pip: this environment is installed)" in said[1]
    assert "left out `seqlab prepare --train ...` (it reads raw/a.txt; block 1 is skipped: a long download)" in said[1]
    assert "left out `seqlab train --data-dir ...` (it reads data/ts; README.md:10 is left out)" in said[1]


def test_a_failing_command_stops_the_run_and_names_it(tmp_path):
    (tmp_path / "README.md").write_text(textwrap.dedent("""
        <!-- readme-test: run -->
        ```bash
        seqlab accounting --preset tinystories --steps -5
        ```
        """))
    with pytest.raises(RuntimeError, match=r"(?s)README.md:4: seqlab accounting .* exited with status 2.*--steps -5"):
        readme_commands.run(tmp_path, seqlab_from=ROOT, say=lambda line: None)


@pytest.mark.slow
def test_the_readme_runs_in_its_written_order_on_a_fresh_copy(tmp_path):
    assert readme_commands.main(["--keep", str(tmp_path / "seqlab")]) == 0
    assert (tmp_path / "seqlab" / "runs" / "small" / "checkpoints" / "latest.pt").exists()
    assert (tmp_path / "seqlab" / "hf" / "small" / "model.safetensors").exists()


def test_everything_the_readme_writes_is_ignored_by_git():
    """Following the README in a checkout leaves `git status` clean (and never overwrites docs/*.png)."""
    import subprocess

    blocks = readme_commands.read_guide(ROOT)
    written = {b.file for b in blocks if b.action == "file"}
    written |= {path for c in readme_commands.analysed_commands(blocks) for path in c.writes}
    assert {"demo_out", "runs/small", "data/stories", "ts.toml", "hf/small", "out/explorer.png"} <= written
    # as a file and as a folder (the paths do not exist here, so git cannot tell which they are)
    paths = sorted({p.rstrip("/") + end for p in written for end in ("", "/")})
    done = subprocess.run(["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *paths],
                          cwd=ROOT, capture_output=True, text=True)
    ignored = {line.split("\t")[1].rstrip("/") for line in done.stdout.splitlines() if not line.startswith("::")}
    assert sorted(p.rstrip("/") for p in written if p.rstrip("/") not in ignored) == []


def test_the_gpu_time_estimate_is_what_seqlab_accounting_prints(capsys):
    import re
    import shlex

    from seqlab.cli import main

    flat = " ".join(GUIDE_TEXT.split())
    found = re.search(r"`(seqlab accounting --preset tinystories [^`]*--mfu 0\.4)` estimates ([\d.]+ min) .*?"
                      r"with `--mfu 0\.1` ([\d.]+ min)", flat)
    assert found, "the README's GPU estimate sentence changed; update this test with it"
    for mfu, quoted in (("0.4", found.group(2)), ("0.1", found.group(3))):
        argv = shlex.split(found.group(1).replace("--mfu 0.4", f"--mfu {mfu}"))
        assert main(argv[1:]) == 0
        assert capsys.readouterr().out.count(f"= {quoted}\n") == 1, quoted


def test_the_readme_is_short_and_links_every_page_of_the_guide():
    """The README: what seqlab is, the two commands, the learning path, one example per area, links;
    the reference material lives in the guide's docs/ pages, each linked from it and each existing."""
    assert len(README.splitlines()) <= 170
    headings = [line for line in README.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## Quick start", "## Start here: the learning path", "## One example per area"]
    for page in readme_commands.GUIDE[1:]:
        assert (ROOT / page).is_file(), f"{page} is in the guide but missing"
        assert f"]({page})" in README, f"the README does not link {page}"
    assert "--resume --max-steps 1500   # also after Ctrl-C" not in GUIDE_TEXT  # one scenario per line
