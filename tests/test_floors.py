"""The declared minimum versions are true.

The floors live in one place each: the Python packages' in pyproject.toml
(`name>=X`), Python's in `requires-python`, git's in `git_ao.version.MIN_VERSION`.
A venv with exactly the floor versions runs the commands (a usage error, the
help, a save and a restore), and the README states the same floors.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

import pytest

from git_ao.git import version
from tests.support import ROOT, pip_in, venv_with


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def floors() -> dict[str, str]:
    """{package: floor version} of every runtime dependency (each must have one; an
    environment marker may follow it)."""
    out = {}
    for dep in _pyproject()["project"]["dependencies"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][0-9.]*)(;.*)?", dep.replace(" ", ""))
        assert m, f"dependency without a plain floor: {dep}"
        out[m.group(1)] = m.group(2)
    return out


def test_readme_states_the_floors():
    readme = (ROOT / "README.md").read_text()
    py = _pyproject()["project"]["requires-python"].removeprefix(">=")
    git_floor = ".".join(map(str, version.MIN_VERSION))
    assert f"Needs Python {py}+ and git {git_floor}+." in readme
    assert sys.version_info[:2] >= tuple(map(int, py.split(".")))


@pytest.fixture(scope="session")
def floor_venv(tmp_path_factory, wheel):
    """A venv holding git-ao and exactly the floor version of each dependency."""
    base = tmp_path_factory.mktemp("floors")
    root = base / "venv"
    pins = [f"{name}=={floor}" for name, floor in floors().items()]
    res = venv_with(root, *pins, home=base)
    if res.returncode == 0:
        res = pip_in(root, "install", "-q", "--no-deps", str(wheel), home=base)
    if res.returncode != 0:
        pytest.fail(f"pip install failed:\n{res.stdout}\n{res.stderr}")
    return root


def _run(venv_dir, *args, cwd, rc):
    env = dict(os.environ, PATH=f"{venv_dir / 'bin'}:/usr/local/bin:/usr/bin:/bin")
    res = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                         check=False)
    assert res.returncode == rc, f"git {' '.join(args)}: {res.returncode}\n{res.stderr}"
    return res


@pytest.mark.slow
def test_the_floor_versions_run_every_kind_of_command(floor_venv, repo, worktrees):
    freeze = pip_in(floor_venv, "freeze", home=floor_venv.parent).stdout.lower()
    for name, floor in floors().items():
        assert f"{name.lower()}=={floor}" in freeze.replace("_", "-")
    res = _run(floor_venv, "ao", cwd=repo, rc=129)
    assert res.stderr.startswith("usage: git ao ") and res.stdout == ""
    res = _run(floor_venv, "ao", "--bogus", cwd=repo, rc=129)
    assert res.stderr.startswith("error: unknown option 'bogus'\nusage: git ao ")
    _run(floor_venv, "ao-preserve", "-h", cwd=repo, rc=129)
    _run(floor_venv, "ao", "config", "set", "preserve.jobs", "2", cwd=repo, rc=0)
    wt = worktrees(repo, "floor")
    (wt / "new.txt").write_text("work\n")
    _run(floor_venv, "ao-preserve", "floor", cwd=repo, rc=0)
    assert not wt.exists()
    _run(floor_venv, "ao-restore", cwd=repo, rc=0)
    assert (wt / "new.txt").read_text() == "work\n"
    assert "floor" in _run(floor_venv, "ao", "list", cwd=repo, rc=0).stdout
