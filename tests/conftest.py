"""Fixtures: an isolated HOME and data dir per test, real git repositories from
pytest-git, and helpers that run the real commands as a user would."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_git import GitRepo

from tests.worktree_state import state  # noqa: F401 - re-exported for tests

pytest_plugins = ["tests.machine_guard"]

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "bin"
_SCRUB = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
          "GIT_CEILING_DIRECTORIES", "GIT_AO_CRASH_AT", "GIT_AO_DEBUG", "NO_COLOR")


@pytest.fixture(autouse=True)
def ao_env(tmp_path, monkeypatch):
    """Every test gets its own HOME, global git config and AO_DATA_DIR; the user's
    ~/.ao and ~/.gitconfig are never read or written."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"
        "[advice]\n\tdetachedHead = false\n")
    for name in _SCRUB:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    # Shells and tools that honour these would otherwise write into the real home.
    for name, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                      ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state"),
                      ("ZDOTDIR", "")):
        monkeypatch.setenv(name, str(home / sub) if sub else str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("AO_DATA_DIR", str(tmp_path / "aodata"))
    monkeypatch.setenv("PATH", f"{BIN}:{Path(sys.executable).parent}:{os.environ['PATH']}")
    yield tmp_path
    # A file or database left open by in-process code is reported by the garbage
    # collector whenever it next runs, often in another test; collecting here pins
    # the report to the test that leaked it.
    gc.collect()


def git(*args, cwd, check=True, env=None, input=None) -> str:
    """Run real git; return stdout as str. Raises CalledProcessError when check fails."""
    full = dict(os.environ, **(env or {}))
    res = subprocess.run(["git", *map(str, args)], cwd=cwd, capture_output=True, env=full,
                         input=input)
    if check and res.returncode != 0:
        raise subprocess.CalledProcessError(res.returncode, res.args, res.stdout, res.stderr)
    return res.stdout.decode("utf-8", "surrogateescape")


def ao(*args, cwd=None, rc=0, env=None) -> subprocess.CompletedProcess:
    """Run `git <args>` (e.g. ao("ao-preserve", "--all")) as a user would, through git's
    dispatch to bin/. Asserts the exit status when rc is not None."""
    full = dict(os.environ, **(env or {}))
    res = subprocess.run(["git", *map(str, args)], cwd=cwd or os.getcwd(), capture_output=True,
                         text=True, env=full)
    if rc is not None:
        assert res.returncode == rc, (
            f"git {' '.join(map(str, args))}: rc={res.returncode}\n"
            f"stdout: {res.stdout}\nstderr: {res.stderr}")
    return res


def commit_on(repo: Path, branch: str, files: dict, message="moved on"):
    """Move `branch` of `repo` forward by one commit writing `files` ({relative path:
    text}), in a worktree of its own that is removed afterwards, so no other
    worktree (the main one included) is touched."""
    tmp = repo.parent / f"commit-on-{branch}"
    git("worktree", "add", "-q", tmp, branch, cwd=repo)
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    git("add", "--", *files, cwd=tmp)
    git("commit", "-q", "-m", message, cwd=tmp)
    git("worktree", "remove", tmp, cwd=repo)


def init_repo(path: Path) -> Path:
    """Give the repository at `path` a first commit of a few files and a .gitignore."""
    (path / "README.md").write_text("hello\n")
    (path / "src").mkdir(exist_ok=True)
    (path / "src" / "app.py").write_text("print('hi')\n")
    (path / "src" / "util.py").write_text("x = 1\n")
    (path / "run.sh").write_text("#!/bin/sh\necho run\n")
    (path / "data.bin").write_bytes(bytes(range(256)))
    (path / ".gitignore").write_text("*.log\nbuild/\n")
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "initial", cwd=path)
    return path


@pytest.fixture
def repo(git_repo) -> Path:
    """A main repository (pytest-git) with a first commit on 'main'."""
    path = Path(git_repo.workspace)
    git("symbolic-ref", "HEAD", "refs/heads/main", cwd=path)
    return init_repo(path)


@pytest.fixture
def make_repo():
    """Factory for more repositories: make_repo() -> Path, each with a first commit."""
    made = []

    def _make():
        r = GitRepo()
        made.append(r)
        p = Path(r.workspace)
        git("symbolic-ref", "HEAD", "refs/heads/main", cwd=p)
        return init_repo(p)

    yield _make
    for r in made:
        r.teardown()


@pytest.fixture
def worktrees(tmp_path):
    """Factory: add_worktree(repo, name, branch=None) -> Path of a new linked worktree
    under tmp_path/wt (branch defaults to the name)."""
    base = tmp_path / "wt"
    base.mkdir()

    def _add(repo_path, name, branch=None, register=True, kind="worker", **opts):
        path = base / name
        git("worktree", "add", "-q", "-b", branch or name, path, cwd=repo_path)
        if register:
            args = ["ao", "add", path, "--id", name, "--kind", kind]
            for k, v in opts.items():
                args += [f"--{k.replace('_', '-')}", v]
            ao(*args, cwd=repo_path)
        return path

    return _add


def dirty(wt: Path):
    """Make a representative mix of uncommitted work in worktree `wt`."""
    (wt / "README.md").write_text("hello\nstaged line\n")
    git("add", "README.md", cwd=wt)
    (wt / "README.md").write_text("hello\nstaged line\nunstaged line\n")
    (wt / "src" / "app.py").write_text("print('changed')\n")
    git("rm", "-q", "src/util.py", cwd=wt)
    (wt / "data.bin").unlink()
    (wt / "new dir" / "deep").mkdir(parents=True)
    (wt / "new dir" / "deep" / "naïve file.txt").write_text("untracked ünïcode\n")
    (wt / "bin.dat").write_bytes(b"\x00\x01\xff" * 100)
    os.symlink("README.md", wt / "link-to-readme")
    os.chmod(wt / "run.sh", 0o755)
    (wt / "debug.log").write_text("ignored\n")
    (wt / "build").mkdir()
    (wt / "build" / "out.o").write_bytes(b"obj")
