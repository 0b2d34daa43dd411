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
