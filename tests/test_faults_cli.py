"""Issue 13 item 7 (command line): messages instead of tracebacks for unwritable outputs and closed pipes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("where", ["proc", "under_a_file"])
def test_labs_output_that_cannot_be_written_is_a_message(tmp_path, capsys, monkeypatch, where):
    import seqlab.labs.results

    if where == "proc":
        if not os.path.isdir("/proc/self"):
            pytest.skip("no /proc on this system")
        output = Path("/proc/x")
    else:
        (tmp_path / "file").write_text("x")
        output = tmp_path / "file" / "out"
    monkeypatch.setattr(seqlab.labs.results, "collect", lambda *a: pytest.fail("labs ran before the check"))
    assert main(["labs", "--only", "recurrence", "--output", str(output)]) == 1  # a folder that cannot be made: a failure
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write to --output {output}: ") and "Traceback" not in err


def test_labs_output_failing_while_writing_is_a_message(tmp_path, capsys, monkeypatch):
    import errno

    import seqlab.labs.cli

    def full_disk(results, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(seqlab.labs.cli, "write_json", full_disk)
    assert main(["labs", "--only", "recurrence", "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: cannot write to --output {tmp_path / 'out'}: No space left on device "
                   f"({tmp_path / 'out' / 'results.json'}); give a directory you can write to\n")


def _run_into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess:
    """Run ``python -m seqlab ARGS`` with stdout a pipe whose reader is gone (like ``| head`` after
    it has read its line): every write fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    try:
        return subprocess.run([sys.executable, "-m", "seqlab", *args], stdout=write_end, stderr=subprocess.PIPE,
                              env=env, timeout=120)
    finally:
        os.close(write_end)


def test_a_closed_stdout_pipe_exits_quietly():
    done = _run_into_closed_pipe(["labs", "--only", "recurrence"])
    assert done.returncode == 141 and done.stderr == b""
    done = _run_into_closed_pipe(["--help"])  # argparse ignores a failed write itself: exit 0, quietly
    assert done.returncode in (0, 141) and done.stderr == b""


def test_broken_pipe_in_any_command_is_handled_by_main(monkeypatch):
    class HungUp:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", HungUp())  # no file descriptor: nothing to redirect, still quiet
    assert main(["labs", "--only", "recurrence"]) == 141
