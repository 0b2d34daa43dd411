"""Faults a hostile probe and a newcomer found, injected one by one: a task named twice, a byte-order
mark inside a pairs file, a JSON file nested too deeply, a log line that is a list."""

from __future__ import annotations

import subprocess

import pytest

from seqlab.cli import main


def test_paths_trains_a_task_named_twice_once_and_says_so(tmp_path, capsys, monkeypatch):
    import seqlab.seq2seq.paths as paths

    asked = []

    def fake_run_paths(out, *, tasks, **kwargs):
        asked.append(tasks)
        raise ValueError("stop here")  # the tasks it would train are all this test needs

    monkeypatch.setattr(paths, "run_paths", fake_run_paths)
    assert main(["paths", "--out", str(tmp_path / "p"), "--fast", "--tasks", "copy,reverse,copy"]) == 1
    assert asked == [("copy", "reverse")]
    assert "note: --tasks names copy more than once; each task is trained once" in capsys.readouterr().err


def test_a_byte_order_mark_inside_a_pairs_file_says_how_to_remove_it(tmp_path):
    from seqlab.seq2seq.data import PairsFileError, read_pairs_tsv

    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("\ufeffGo.\tVa !\n", encoding="utf-8")
    b.write_text("\ufeffRun!\tCours !\n", encoding="utf-8")
    joined = tmp_path / "joined.tsv"
    joined.write_bytes(a.read_bytes() + b.read_bytes())
    with pytest.raises(PairsFileError) as info:
        read_pairs_tsv(joined)
    message = str(info.value)
    assert f"{joined}:2: byte-order mark (U+FEFF) at column 1" in message and "two files joined" in message
    command = message[message.index("sed -i"):].split("\n")[0]
    subprocess.run(["sh", "-c", command], check=True)  # the fix it gives works
    assert read_pairs_tsv(joined) == ([("Go.", "Va !"), ("Run!", "Cours !")], [])
