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
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    (home / ".ao" / "data").mkdir(parents=True)
    (home / ".ao" / "data" / "old.db").write_text("x")
    (home / ".bashrc").write_text("# rc\n")
    tmp.mkdir()
    before = machine_guard.snapshot(home, tmp)
    (home / ".ao" / "data" / "git-ao.db").write_text("new")
    (home / ".ao" / "data" / "old.db").unlink()
    (home / ".bashrc").write_text("# rc, and more\n")
    (home / ".zcompdump").write_text("dump")
    (tmp / "stray").mkdir()
    (tmp / "pytest-of-someone").mkdir()
    assert sorted(machine_guard.diff(before, machine_guard.snapshot(home, tmp))) == sorted([
        f"added: {home / '.ao' / 'data' / 'git-ao.db'}",
        f"removed: {home / '.ao' / 'data' / 'old.db'}",
        f"changed: {home / '.ao' / 'data'}",
        f"changed: {home / '.bashrc'}",
        f"added: {home / '.zcompdump'}",
        f"added: {tmp / 'stray'}",
    ])


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
