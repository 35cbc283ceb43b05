"""The machine guard sees what a test leaves outside its temporary directories, and
the shell set-ups the tests drive write nothing there."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests import machine_guard


def test_the_null_device_is_the_null_device():
    assert machine_guard.null_device_problem() is None
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_snapshot_names_what_was_added_changed_and_removed(tmp_path):
    home = tmp_path / "home"
    (home / ".ao" / "data").mkdir(parents=True)
    (home / ".ao" / "data" / "old.db").write_text("x")
    (home / ".bashrc").write_text("# rc\n")
    before = machine_guard.snapshot(home)
    (home / ".ao" / "data" / "git-ao.db").write_text("new")
    (home / ".ao" / "data" / "old.db").unlink()
    (home / ".bashrc").write_text("# rc, and more\n")
    (home / ".zcompdump").write_text("dump")
    assert sorted(machine_guard.diff(before, machine_guard.snapshot(home))) == sorted([
        f"added: {home / '.ao' / 'data' / 'git-ao.db'}",
        f"removed: {home / '.ao' / 'data' / 'old.db'}",
        f"changed: {home / '.ao' / 'data'}",
        f"changed: {home / '.bashrc'}",
        f"added: {home / '.zcompdump'}",
    ])


def test_the_run_has_a_private_temporary_directory_and_ignores_the_system_one(tmp_path):
    # Another program writing at the top of the system temporary directory is
    # none of the run's business; a file the run leaves in its own is.
    import tempfile
    run_tmp = Path(os.environ["TMPDIR"])
    assert run_tmp.name.startswith("git-ao-test-run-") and Path(tempfile.gettempdir()) == run_tmp
    mine = tmp_path / "run-tmp"
    mine.mkdir()
    assert machine_guard.leftovers(mine) == []
    (mine / "forgotten").write_text("x")
    assert machine_guard.leftovers(mine) == [
        f"left in the run's temporary directory: {mine / 'forgotten'}"]


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh not installed")
def test_zsh_compinit_as_the_tests_run_it_writes_no_dump(tmp_path):
    """compinit's -d FILE turns the dump back on even after -D; as root zsh then
    moves its dump over FILE. The completion tests' compinit line writes none."""
    from tests.test_completion import ZSH_REAL
    line = next(ln for ln in ZSH_REAL.splitlines() if "compinit" in ln)
    compinit = line[line.index("autoload"):].rstrip('"')
    home = Path(os.environ["HOME"])
    subprocess.run(["zsh", "-f", "-i", "-c", compinit], cwd=tmp_path, capture_output=True,
                   timeout=60, check=True)
    dumps = [p for base in (home, tmp_path) for p in base.rglob(".zcompdump*")]
    assert dumps == []
    assert machine_guard.null_device_problem() is None
