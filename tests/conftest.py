"""Fixtures: an isolated HOME and data dir per test, real git repositories from
pytest-git, linked worktrees registered as sessions. The helpers the tests call
(git, ao, dirty, ...) are in tests/support.py; tests/README.md says which file
tests what."""

from __future__ import annotations

import compileall
import gc
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_git import GitRepo

from tests import support

# The helpers live in tests/support.py; these names stay importable from here for
# test files written before it existed.
from tests.support import BIN, ROOT, ao, commit_on, dirty, git, init_repo  # noqa: F401
from tests.worktree_state import state  # noqa: F401 - re-exported for tests

pytest_plugins = ["tests.machine_guard"]

_SCRUB = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
          "GIT_CEILING_DIRECTORIES", "GIT_AO_CRASH_AT", "GIT_AO_DEBUG", "NO_COLOR",
          # Where tools git-ao imports from keep their state instead of under HOME.
          "CODEX_HOME", "CLAUDE_CONFIG_DIR", "CRYSTAL_DIR")


@pytest.fixture(autouse=True)
def ao_env(tmp_path, monkeypatch):
    """Every test gets its own HOME, global git config and AO_DATA_DIR; the user's
    ~/.ao and ~/.gitconfig are never read or written."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"
        "[advice]\n\tdetachedHead = false\n"
        # No `git maintenance run --auto` after each commit and checkout the
        # tests make: a process each, and no part of what is tested.
        "[maintenance]\n\tauto = false\n")
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
    # the report to the test that leaked it. What survives lives on (caches,
    # pytest's reports): frozen, later collections pass it over.
    gc.collect()
    gc.freeze()


def pytest_configure(config):
    """Write bytecode once, before any xdist worker starts, also where
    PYTHONDONTWRITEBYTECODE is set: git_ao's (every command the tests run as a
    process would otherwise compile each module from source, about 0.1 s of CPU
    a command) and the test modules' as pytest rewrites their asserts (each
    worker would otherwise rewrite every one of them while it collects: about
    3 s of CPU a worker). Importing the test modules here runs nothing but
    their top level."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    compileall.compile_dir(ROOT / "git_ao", quiet=1)
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        for test_file in sorted((ROOT / "tests").glob("test_*.py")):
            importlib.import_module(f"tests.{test_file.stem}")
    finally:
        sys.dont_write_bytecode = saved


def pytest_collection_finish(session):
    """Freeze what is alive once the tests are collected (pytest, hypothesis, the
    modules under test, the commands the tests run in process): the collections
    after every test and every in-process command then look only at what the
    tests made, not at some 100,000 objects that live as long as the worker."""
    for module in (*support.COMMAND_MODULES, "git_ao.cli.output"):
        importlib.import_module(module)
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def shared_temp(tmp_path_factory, worker_id) -> Path:
    """A directory every xdist worker of this run shares (see `built_once`)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@pytest.fixture(scope="session")
def wheel(shared_temp) -> Path:
    """git-ao's wheel, built once per run for the packaging, pipx and floor tests."""
    return next(support.built_once(shared_temp, "wheel", support.build_wheel).glob("git_ao-*.whl"))


@pytest.fixture(scope="session", autouse=True)
def _workspaces(tmp_path_factory) -> None:
    """pytest-git makes each repository in a workspace under $WORKSPACE (else at
    the top of /tmp). Under this run's basetemp, the repositories are kept, not
    deleted one by one at teardown (a few hundred directories each); pytest
    removes old basetemps as it does the tests' tmp_path."""
    ws = tmp_path_factory.getbasetemp() / "workspaces"
    ws.mkdir(exist_ok=True)
    os.environ["WORKSPACE"] = str(ws)


@pytest.fixture
def repo(git_repo) -> Iterator[Path]:
    """A main repository (pytest-git) with a first commit on 'main'."""
    path = Path(git_repo.workspace)
    git("symbolic-ref", "HEAD", "refs/heads/main", cwd=path)
    yield init_repo(path)
    git_repo.delete = False  # see _workspaces


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
        r.delete = False  # see _workspaces


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
