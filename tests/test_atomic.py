"""seqlab.atomic: a target is replaced whole or left as it was; no temporary file is left behind."""

import os
import stat

import pytest

from seqlab.atomic import atomic_path, link_or_copy


def test_success_renames_into_place_with_umask_permissions(tmp_path):
    target = tmp_path / "loss_curve.png"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".png" and tmp != target
        tmp.write_bytes(b"new")
        assert not target.exists()  # nothing visible until the block ends
    assert target.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["loss_curve.png"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("as_folder", [False, True])
def test_failure_keeps_the_old_target_and_removes_the_temporary(tmp_path, as_folder):
    target = tmp_path / "out"
    target.write_text("old")
    with pytest.raises(OSError, match="disk full"):
        with atomic_path(target) as tmp:
            if as_folder:
                tmp.mkdir()
                (tmp / "part").write_text("half")
            else:
                tmp.write_text("half")
            raise OSError("disk full")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out"]


def test_link_or_copy_replaces_the_destination(tmp_path):
    source, dest = tmp_path / "step_0000010.pt", tmp_path / "latest.pt"
    source.write_bytes(b"weights")
    dest.write_bytes(b"older weights")
    assert link_or_copy(source, dest) == dest
    assert dest.read_bytes() == b"weights"
    assert sorted(os.listdir(tmp_path)) == ["latest.pt", "step_0000010.pt"]


def test_an_os_error_without_a_file_name_is_named(tmp_path):
    import errno

    target = tmp_path / "vocab.json"
    with pytest.raises(OSError) as caught:
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # what a failed write() raises
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    assert str(target) in str(caught.value) and os.listdir(tmp_path) == []


def _folder(path, files):
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)


def _contents(path):
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def test_atomic_directory_swaps_the_folder_in_whole(tmp_path):
    from seqlab.atomic import atomic_directory

    target = tmp_path / "tok"
    _folder(target, {"vocab.json": "old vocab", "merges.txt": "old merges", "special_tokens.json": "[]"})
    with atomic_directory(target, {"vocab.json", "merges.txt", "special_tokens.json"}) as tmp:
        assert tmp.parent == tmp_path and list(tmp.iterdir()) == []
        (tmp / "vocab.json").write_text("new vocab")
        (tmp / "merges.txt").write_text("new merges")
        assert _contents(target)["vocab.json"] == "old vocab"  # untouched until the block ends
    assert _contents(target) == {"merges.txt": "new merges", "vocab.json": "new vocab"}  # no stale file kept
    assert os.listdir(tmp_path) == ["tok"]
    with atomic_directory(tmp_path / "new" / "fresh") as tmp:  # a missing target (and parent) is created
        (tmp / "a").write_text("1")
    assert _contents(tmp_path / "new" / "fresh") == {"a": "1"} and os.listdir(tmp_path / "new") == ["fresh"]


def test_atomic_directory_failure_leaves_the_old_folder_and_names_the_file(tmp_path):
    import errno

    from seqlab.atomic import atomic_directory

    target = tmp_path / "tok"
    _folder(target, {"vocab.json": "old vocab", "merges.txt": "old merges"})
    with pytest.raises(OSError) as caught:
        with atomic_directory(target, {"vocab.json", "merges.txt"}) as tmp:
            (tmp / "vocab.json").write_text("new vocab")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp / "merges.txt"))
    assert caught.value.filename == str(target / "merges.txt")  # the user's name, not the temporary's
    assert _contents(target) == {"merges.txt": "old merges", "vocab.json": "old vocab"}
    assert os.listdir(tmp_path) == ["tok"]


def test_atomic_directory_refuses_to_replace_foreign_files_before_the_block(tmp_path):
    from seqlab.atomic import atomic_directory

    target = tmp_path / "work"
    _folder(target, {"vocab.json": "v", "thesis.tex": "years of work"})
    ran = []
    with pytest.raises(FileExistsError, match=r"work.*thesis\.tex.*new or empty directory"):
        with atomic_directory(target, {"vocab.json"}):
            ran.append(True)
    assert not ran and _contents(target) == {"thesis.tex": "years of work", "vocab.json": "v"}
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        with atomic_directory(tmp_path / "file"):
            ran.append(True)
    assert not ran


def _dead_pid():
    """A process id that no longer runs: a child that has exited and been reaped."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_remove_stale_temporaries_only_touches_dead_seqlab_temporaries(tmp_path):
    from seqlab.atomic import remove_stale_temporaries

    dead, alive = _dead_pid(), os.getppid()
    stale = [f".out.tmp{dead}.npy", f".loss_curve.tmp{dead}.png", f".tokenizer.tmp{dead}"]
    kept = [f".out.tmp{alive}.npy", f".out.tmp{os.getpid()}.npy",  # their writers still run
            "out.npy", ".out.npy", "notes.tmp123.txt", f".out.tmp{dead}x.npy", ".bashrc", f"tmp{dead}"]
    for name in stale[:2] + kept:
        (tmp_path / name).write_bytes(b"x" * 10)
    (tmp_path / stale[2]).mkdir()
    (tmp_path / stale[2] / "vocab.json").write_text("{}")
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in removed) == sorted(stale)
    assert sorted(os.listdir(tmp_path)) == sorted(kept)
    assert remove_stale_temporaries(tmp_path / "missing") == []


def test_remove_stale_temporaries_puts_back_a_folder_caught_between_two_renames(tmp_path):
    from seqlab.atomic import remove_stale_temporaries

    dead = _dead_pid()
    (tmp_path / f".tok.old{dead}").mkdir()  # killed after moving tok/ aside, before the new one arrived
    (tmp_path / f".tok.old{dead}" / "vocab.json").write_text("kept")
    (tmp_path / "data").mkdir()
    (tmp_path / f".data.old{dead}").mkdir()  # killed after the swap, before deleting the old one
    assert [p.name for p in remove_stale_temporaries(tmp_path)] == [f".data.old{dead}"]
    assert sorted(os.listdir(tmp_path)) == ["data", "tok"]
    assert (tmp_path / "tok" / "vocab.json").read_text() == "kept"


def test_a_lone_surrogate_is_written_as_its_escape_and_json_reads_it_back(tmp_path):
    """A student's error text with a byte that was not UTF-8 (surrogateescape's \\udcff) in a JSON
    progress file: written (not a UnicodeEncodeError), and read back as the same string."""
    import json

    from seqlab.atomic import atomic_write_text

    message = b"bad byte \xff".decode("utf-8", "surrogateescape") + " 中"
    path = tmp_path / "progress.json"
    atomic_write_text(path, json.dumps({"error": message}, ensure_ascii=False))
    assert json.loads(path.read_bytes()) == {"error": message}
    assert path.read_bytes() == b'{"error": "bad byte \\udcff \xe4\xb8\xad"}'
