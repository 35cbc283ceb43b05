"""Scale: 60 sessions across 6 repositories are preserved and restored in one run
each, every one correctly. Nothing here is timed; bench/run.py reports the times
for 10, 50 and 200 sessions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from git_ao import context
from git_ao import git as ao_git
from git_ao.manage import register
from git_ao.preserve import workflow as preserve
from git_ao.store import database
from tests.support import ao, git

REPOS = 6
PER_REPO = 10


def _session_work(wt: Path, n: int):
    """Staged, unstaged and untracked work unique to session n."""
    (wt / "README.md").write_text(f"hello\nstaged {n}\n")
    git("add", "README.md", cwd=wt)
    (wt / "README.md").write_text(f"hello\nstaged {n}\nunstaged {n}\n")
    (wt / "src" / "app.py").write_text(f"print({n})\n")
    (wt / "notes").mkdir()
    (wt / "notes" / f"todo-{n}.txt").write_text(f"untracked {n}\n")


def _expect(wt: Path, n: int):
    assert (wt / "README.md").read_text() == f"hello\nstaged {n}\nunstaged {n}\n"
    assert (wt / "src" / "app.py").read_text() == f"print({n})\n"
    assert (wt / "notes" / f"todo-{n}.txt").read_text() == f"untracked {n}\n"
    assert git("show", ":README.md", cwd=wt) == f"hello\nstaged {n}\n"
    assert git("status", "--porcelain", "--untracked-files=all", cwd=wt).splitlines() == [
        "MM README.md", " M src/app.py", f"?? notes/todo-{n}.txt"]


@pytest.mark.slow
def test_60_sessions_in_6_repositories(make_repo, tmp_path):
    repos = [make_repo() for _ in range(REPOS)]
    ctx = context.Context(database.Store())
    sessions = {}
    for r, repo in enumerate(repos):
        for k in range(PER_REPO):
            n = r * PER_REPO + k
            wt = tmp_path / "wt" / f"r{r}" / f"s{n}"
            git("worktree", "add", "-q", "-b", f"s{n}", wt, cwd=repo)
            _session_work(wt, n)
            # Registration in-process (the same call `git ao add` makes) keeps setup short.
            register.register(ctx, str(wt), session_id=f"s{n}", harness="h")
            sessions[n] = (repo, wt)

    res = ao("ao-preserve", "--all", "-q", cwd=repos[0])
    assert res.stdout == ""
    for _, wt in sessions.values():
        assert not wt.exists(), wt
    for repo in repos:
        refs = git("for-each-ref", "--format=%(refname)", "refs/ao/preserved", cwd=repo).split()
        assert len(refs) == PER_REPO
        # One `git worktree prune` per repository deregistered every removed worktree.
        assert "prunable" not in git("worktree", "list", "--porcelain", cwd=repo)
        listed = git("worktree", "list", "--porcelain", cwd=repo)
        assert listed.count("worktree ") == 1, listed
    assert all(s.pending for s in database.Store().sessions())

    ao("ao-restore", "-q", cwd=repos[0])
    for n, (_, wt) in sessions.items():
        _expect(wt, n)
    for repo in repos:
        assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""
    assert all(s.live and not s.pending for s in database.Store().sessions())


def test_batch_prunes_once_per_repository(make_repo, tmp_path):
    """A preserve run deregisters removed worktrees with one `git worktree prune` per
    repository, not one per session, and leaves nothing prunable behind."""
    repos = [make_repo() for _ in range(2)]
    ctx = context.Context(database.Store())
    ids = []
    for r, repo in enumerate(repos):
        for k in range(3):
            wt = tmp_path / "wt" / f"b{r}{k}"
            git("worktree", "add", "-q", "-b", f"b{r}{k}", wt, cwd=repo)
            (wt / "new.txt").write_text("x\n")
            register.register(ctx, str(wt), session_id=f"b{r}{k}")
            ids.append(f"b{r}{k}")
    seen = []
    ao_git.set_trace(lambda argv, cwd: seen.append((argv[:2], os.path.realpath(cwd))))
    try:
        outcomes = preserve.preserve(ctx, [ctx.store.get(i) for i in ids], jobs=2)
    finally:
        ao_git.set_trace(None)
    assert [o.status for o in outcomes] == ["ok"] * 6, outcomes
    prunes = sorted(cwd for argv, cwd in seen if argv == ["worktree", "prune"])
    assert prunes == sorted(os.path.realpath(r / ".git") for r in repos)
    assert not any(argv == ["check-ref-format"] or argv[:1] == ["check-ref-format"]
                   for argv, _ in seen)
    for repo in repos:
        assert "prunable" not in git("worktree", "list", "--porcelain", cwd=repo)


def _registered(ctx: context.Context, repo: Path, tmp_path: Path,
                new: dict[str, str]) -> list[str]:
    """A worktree of `repo` per name of `new` (branch and session id the name),
    registered, holding a new file `new.txt` of its text; returns the names."""
    for name, text in new.items():
        wt = tmp_path / "wt" / name
        git("worktree", "add", "-q", "-b", name, wt, cwd=repo)
        (wt / "new.txt").write_text(text)
        register.register(ctx, str(wt), session_id=name)
    return list(new)


def test_a_restore_reads_every_session_a_number_of_times_that_does_not_grow_with_them(
        make_repo, tmp_path, monkeypatch):
    """A restore from the trash asks which live worktrees are missing (the
    registrations a `git worktree prune` must keep) only when it prunes, so the
    records are read whole a fixed number of times per run, not once per session
    (which made a run's time grow with the square of its sessions)."""
    repo = make_repo()
    ctx = context.Context(database.Store())
    ids = _registered(ctx, repo, tmp_path, {f"r{k}": f"{k}\n" for k in range(6)})
    outcomes = preserve.preserve(ctx, [ctx.store.get(i) for i in ids], jobs=2)
    assert [o.status for o in outcomes] == ["ok"] * 6, outcomes
    reads = []
    whole = database.Store.sessions
    monkeypatch.setattr(database.Store, "sessions", lambda self: reads.append(1) or whole(self))
    from git_ao.restore import workflow as restore
    outcomes = restore.restore(ctx, [ctx.store.get(i) for i in ids], jobs=2)
    assert [(o.status, o.data.get("from_trash")) for o in outcomes] == [("ok", True)] * 6, \
        outcomes
    assert len(reads) <= 1, len(reads)
    for k in range(6):
        assert (tmp_path / "wt" / f"r{k}" / "new.txt").read_text() == f"{k}\n"


def _config_lists(seen) -> dict[str, int]:
    """How many `git config --list` ran in each repository (by common dir) of the
    traced commands `seen` ((argv, common dir))."""
    counts: dict[str, int] = {}
    for argv, common in seen:
        if argv[:1] == ["config"] and "--list" in argv:
            counts[common] = counts.get(common, 0) + 1
    return counts


def _tracer(seen):
    """A git trace hook noting (argv, the common dir of the worktree it runs in)."""
    from git_ao import gitfiles

    def note(argv, cwd):
        admin = gitfiles.read_gitfile(os.path.join(cwd, ".git"))
        seen.append((argv, os.path.realpath(gitfiles.common_dir(admin)) if admin else cwd))
    return note


def test_a_preserve_reads_a_repository_config_once_while_it_holds_for_every_worktree(
        make_repo, tmp_path):
    """The config a capture reads is read once per repository and shared by its
    worktrees, unless it names an include (whose condition may hold in one worktree
    only: onbranch:) or it was written meanwhile."""
    import time
    plain, included = make_repo(), make_repo()
    (tmp_path / "inc").write_text("[ao-test]\n\tmarker = yes\n")
    git("config", "includeIf.onbranch:i0.path", str(tmp_path / "inc"), cwd=included)
    ctx = context.Context(database.Store())
    ids = [sid for r, repo in enumerate((plain, included))
           for sid in _registered(ctx, repo, tmp_path,
                                  {f"{'pi'[r]}{k}": f"{r}{k}\n" for k in range(3)})]
    time.sleep(2.1)  # a config file written in the last two seconds is read each time
    seen: list[tuple[list[str], str]] = []
    ao_git.set_trace(_tracer(seen))
    try:
        outcomes = preserve.preserve(ctx, [ctx.store.get(i) for i in ids], jobs=2)
    finally:
        ao_git.set_trace(None)
    assert [o.status for o in outcomes] == ["ok"] * 6, outcomes
    counts = _config_lists(seen)
    assert counts == {os.path.realpath(plain / ".git"): 1,
                      os.path.realpath(included / ".git"): 3}, counts


def test_a_shared_config_reading_is_read_again_once_a_file_changed(make_repo, tmp_path,
                                                                      monkeypatch):
    import time

    from git_ao.batch import RepoCache
    repo = make_repo()
    wts = []
    for k in range(2):
        wt = tmp_path / f"c{k}"
        git("worktree", "add", "-q", "-b", f"c{k}", wt, cwd=repo)
        wts.append(str(wt))
    common = ao_git.common_dir_of(str(repo))
    time.sleep(2.1)
    seen: list[tuple[list[str], str]] = []
    ao_git.set_trace(_tracer(seen))
    try:
        cache = RepoCache(batch=True)
        first = cache.config(common, wts[0])
        assert cache.config(common, wts[1]) == first and len(_config_lists(seen)) == 1
        first["ao-test.mine"] = "x"  # each reader has its own copy
        assert "ao-test.mine" not in cache.config(common, wts[1])
        assert sum(_config_lists(seen).values()) == 1
        git("config", "ao-test.changed", "yes", cwd=repo)  # the repository's file
        assert cache.config(common, wts[1])["ao-test.changed"] == "yes"
        assert sum(_config_lists(seen).values()) == 2
        home = tmp_path / "home" / ".gitconfig"  # a global file
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home))
        home.write_text("[ao-test]\n\tglobal = 1\n")
        assert cache.config(common, wts[0])["ao-test.global"] == "1"
        monkeypatch.setenv("GIT_CONFIG", str(home))  # git config reads that file alone
        cache.config(common, wts[0])
        cache.config(common, wts[0])
        assert sum(_config_lists(seen).values()) == 5
    finally:
        ao_git.set_trace(None)
