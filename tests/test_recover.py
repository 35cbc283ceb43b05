"""Database loss and damage: deleted, truncated, garbage. No command deletes
anything, each says what is wrong, `git ao doctor` reports it, and `git ao doctor
--recover` rebuilds the pending sessions from the preserve refs' trailers, after
which `git ao-restore` brings them back."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sqlite3
import subprocess

import pytest

from tests.support import (
    REF,
    ao,
    ao_refs,
    assert_all_restored,
    db_path,
    git,
    init_repo,
    integrity_ok,
    make_sessions,
    ref_of,
    states,
)
from tests.worktree_state import same_but_ignored, state


def _lose(how):
    db = db_path()
    if how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{db}{suffix}"):
                os.unlink(f"{db}{suffix}")
    elif how == "emptied":
        open(db, "wb").close()
    elif how == "truncated":
        size = db.stat().st_size
        with open(db, "r+b") as fh:
            fh.truncate(max(size // 2, 4096 + 100))
    elif how == "garbage":
        db.write_bytes(b"this is not a database\n" * 400)



@pytest.fixture
def mixed(repo, make_repo, worktrees, monkeypatch):
    """Six sessions over two repositories: four pending (saved by preserve), two live.
    Every command after this runs as its own process, as at a boot after the
    damage."""
    other = make_repo()
    sessions = make_sessions(repo, worktrees, 6, other=other)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    ao("ao-preserve", "s00", "s01", "s02", "s04", cwd=repo)
    ao("ao", "list", cwd=repo)
    monkeypatch.setenv("GIT_AO_TEST_PROCESSES", "1")
    return sessions, before, other


def _fingerprint(sessions):
    """Every ref under refs/ao/ and every worktree directory: what must survive."""
    refs = {r: ao_refs(r, "refs/ao/") for r, _ in sessions.values()}
    dirs = {sid: wt.is_dir() and state(wt) for sid, (_, wt) in sessions.items()}
    return refs, dirs


@pytest.mark.slow
@pytest.mark.parametrize("how", ["deleted", "emptied", "truncated", "garbage"])
def test_lost_database_deletes_nothing_and_recovers(how, repo, mixed, tmp_path):
    sessions, before, other = mixed
    _lose(how)
    kept = _fingerprint(sessions)
    every = (["ao-preserve", "--all"], ["ao-restore"], ["ao-prune"], ["ao", "list"],
             ["ao-preserve", "s03"])
    for args in every if how in ("deleted", "garbage") else every[:3]:
        res = ao(*args, cwd=repo, rc=128)
        assert res.stderr.startswith("fatal: database "), (args, res.stderr)
        assert "doctor --recover" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
    # kill, too, stops before any session: fatal (128), and nothing is removed.
    res = ao("ao", "kill", "s05", cwd=repo, rc=128)
    assert "doctor --recover" in res.stderr
    assert _fingerprint(sessions) == kept
    res = ao("ao", "doctor", "-C", other, cwd=repo, rc=1)
    assert "problem  database" in res.stdout, res.stdout
    assert "preserve refs with no readable record" in res.stdout, res.stdout
    assert _fingerprint(sessions) == kept
    # --recover with no repository named, outside any (in one it searches that one),
    # would build an empty database and hide the loss.
    res = ao("ao", "doctor", "--recover", cwd=tmp_path, rc=129)
    assert "no repository was named" in res.stderr
    assert _fingerprint(sessions) == kept
    if how == "deleted":
        assert not db_path().exists()
    res = ao("ao", "doctor", "--recover", "-C", repo, "-C", other, cwd=repo, rc=None)
    assert res.returncode == 0, res.stdout + res.stderr
    if how in ("truncated", "garbage"):
        assert "moved the damaged database aside" in res.stderr
        assert any(n.startswith("git-ao.db.damaged.") for n in os.listdir(db_path().parent))
    integrity_ok()
    got = states(repo)
    # Pending sessions with work (a ref) come back; the clean one (s03 is live anyway)
    # and the live sessions without a ref are registered again with `git ao add`.
    assert got == {"s00": "pending", "s01": "pending", "s02": "pending", "s04": "pending"}, got
    ao("ao-restore", cwd=repo)
    for sid in ("s00", "s01", "s02", "s04"):
        r, wt = sessions[sid]
        assert same_but_ignored(before[sid], state(wt)), sid
        assert ref_of(r, sid) is None
    listed = {s["id"]: s for s in json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)
              ["sessions"]}
    assert listed["s04"]["branch"] is None and listed["s00"]["branch"] == "s00"
    for sid in ("s03", "s05"):  # never saved: still live in their worktrees
        assert same_but_ignored(before[sid], state(sessions[sid][1]))


def test_recover_by_scanning_a_directory(tmp_path, worktrees):
    projects = tmp_path / "projects"
    repos = []
    for name in ("alpha", "beta"):
        p = projects / "nested" / name
        p.mkdir(parents=True)
        git("init", "-q", "-b", "main", p, cwd=tmp_path)
        repos.append(init_repo(p))
    sessions = make_sessions(repos[0], worktrees, 4, other=repos[1], detached=False)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    ao("ao-preserve", "--all", cwd=repos[0])
    _lose("garbage")
    ao("ao", "doctor", "--recover", projects, cwd=tmp_path)
    # s03 was clean: no ref, nothing to rebuild; its branch is intact.
    assert states(repos[0]) == dict.fromkeys(["s00", "s01", "s02"], "pending")
    assert git("rev-parse", "s03", cwd=repos[1]).strip() == before["s03"]["head"].decode()
    ao("ao-restore", cwd=tmp_path)
    sessions.pop("s03")
    assert_all_restored(sessions, before, repos[0])


def test_new_data_dir_notices_orphaned_refs_and_deletes_nothing(repo, worktrees, tmp_path,
                                                                  monkeypatch):
    sessions = make_sessions(repo, worktrees, 2, detached=False)
    ao("ao-preserve", "--all", cwd=repo)
    monkeypatch.setenv("AO_DATA_DIR", str(tmp_path / "elsewhere"))
    # A data dir never used: a new, empty database. Nothing acts on refs it does not know.
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-prune", cwd=repo)
    assert ref_of(repo, "s00") and ref_of(repo, "s01")
    res = ao("ao", "doctor", "-C", repo, cwd=repo, rc=1)
    assert "orphaned refs: " + REF + "s00" in res.stdout, res.stdout
    ao("ao", "doctor", "--recover", "-C", repo, cwd=repo)
    ao("ao-restore", cwd=repo)
    assert all(wt.is_dir() for _, wt in sessions.values())


def test_checkpoint_recovers_as_live(repo, worktrees):
    sessions = make_sessions(repo, worktrees, 1)
    wt = sessions["s00"][1]
    before = state(wt)
    ao("ao-preserve", "--keep-worktree", "s00", cwd=repo)
    _lose("deleted")
    ao("ao", "doctor", "--recover", "-C", repo, cwd=repo)
    assert states(repo) == {"s00": "live"}
    ao("ao-restore", cwd=repo)  # nothing pending: nothing applied over the live worktree
    assert same_but_ignored(before, state(wt))
    assert ref_of(repo, "s00")


def test_a_recovered_record_restores_permission_bits_and_empty_directories(
        repo, worktrees):
    wt = worktrees(repo, "keys")
    (wt / "id_key").write_text("secret\n")
    os.chmod(wt / "id_key", 0o600)
    (wt / "emptydir").mkdir()
    ao("ao-preserve", "keys", cwd=repo)
    _lose("deleted")
    shutil.rmtree(os.path.join(os.environ["AO_DATA_DIR"], "trash"))  # the data dir lost whole
    ao("ao", "doctor", "--recover", "-C", repo, cwd=repo)
    ao("ao-restore", cwd=repo)
    assert oct(os.stat(wt / "id_key").st_mode & 0o777) == "0o600"
    assert (wt / "emptydir").is_dir()


def test_foreign_ref_is_reported_not_recovered(repo, worktrees):
    make_sessions(repo, worktrees, 1)
    git("update-ref", REF + "stranger", "HEAD", cwd=repo)
    res = ao("ao", "doctor", "--recover", "-C", repo, cwd=repo, rc=1)
    assert "not a git-ao preserve commit" in res.stdout + res.stderr
    assert ref_of(repo, "stranger")
    assert subprocess.run(["git", "rev-parse", "-q", "--verify", REF + "stranger"],
                          cwd=repo, capture_output=True, check=False).returncode == 0


def test_an_in_process_command_leaves_no_database_open(repo, worktrees):
    """The tests run most commands in this process: one that left its database
    connection alive (held through the log's failure callback) made a later
    command here read a damaged file through the old connection's state."""
    make_sessions(repo, worktrees, 1)
    ao("ao", "list", cwd=repo)
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, sqlite3.Connection)]


def _saved_repo(path, worktrees, sid):
    """A repository at `path` with one session `sid` preserved (its work pending)."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", path, cwd=path.parent)
    init_repo(path)
    wt = worktrees(path, sid)
    (wt / "work.txt").write_text(f"{sid}\n")
    ao("ao-preserve", sid, cwd=path)
    return path


def test_recover_with_nothing_named_searches_the_home_directory(ao_env, worktrees, tmp_path):
    """After the data dir is lost, `git ao doctor --recover` alone looks in the home
    directory: five levels deep, not into what git ignores, not through symbolic
    links; the sessions it finds come back with git ao-restore."""
    home = ao_env / "home"
    alpha = _saved_repo(home / "src" / "alpha", worktrees, "a1")
    (alpha / ".gitignore").write_text("build/\n")
    git("add", ".gitignore", cwd=alpha)
    git("commit", "-qm", "ignore build", cwd=alpha)
    _saved_repo(alpha / "build" / "inner", worktrees, "i1")  # ignored by alpha: not entered
    beta = _saved_repo(home / "work" / "team" / "proj" / "deep" / "beta", worktrees, "b1")
    _saved_repo(home / "a" / "b" / "c" / "d" / "e" / "gamma", worktrees, "g1")  # too deep
    outside = _saved_repo(tmp_path / "outside" / "delta", worktrees, "d1")
    (home / "link").symlink_to(outside.parent)  # not followed
    _lose("deleted")
    res = ao("ao", "doctor", "--recover", cwd=tmp_path, rc=None)
    assert f"searched {home} (" in res.stderr, res.stderr
    assert res.returncode == 0, res.stdout + res.stderr
    assert states(alpha) == {"a1": "pending", "b1": "pending"}, states(alpha)
    ao("ao-restore", "a1", "b1", cwd=tmp_path)
    assert (tmp_path / "wt" / "a1" / "work.txt").read_text() == "a1\n"
    assert ref_of(beta, "b1") is None
    # The search is bounded in time too: out of time, it says where it stopped.
    from git_ao.manage.doctor import searched_notes
    from git_ao.manage.recover import Search, repositories
    search = Search()
    assert repositories([], [str(home)], seconds=0, search=search) == ([], [])
    assert search.stopped_at == str(home)
    assert any("stopped after" in n and str(home) in n for n in searched_notes([str(home)],
                                                                               search))


def test_recover_with_nothing_named_searches_the_repository_it_runs_in(ao_env, worktrees,
                                                                      tmp_path):
    """The repository the command runs in is searched too, though it lies outside the
    home directory; outside any repository only the home directory is."""
    outside = _saved_repo(tmp_path / "outside" / "delta", worktrees, "d1")
    _lose("deleted")
    res = ao("ao", "doctor", "--recover", cwd=tmp_path, rc=None)
    assert "d1" not in res.stdout, res.stdout
    res = ao("ao", "doctor", "--recover", cwd=outside / "src", rc=None)
    assert res.returncode == 0, res.stdout + res.stderr
    assert states(outside) == {"d1": "pending"}, states(outside)
    ao("ao-restore", "d1", cwd=outside)
    assert (tmp_path / "wt" / "d1" / "work.txt").read_text() == "d1\n"


def test_recover_refuses_when_the_home_directory_holds_no_preserve_ref(ao_env, tmp_path):
    (ao_env / "home" / "src").mkdir()
    db_path().parent.mkdir(mode=0o700)
    db_path().write_bytes(b"garbage\n" * 600)
    res = ao("ao", "doctor", "--recover", cwd=tmp_path, rc=129)
    assert "none holding preserve refs was found in the home directory" in res.stderr
    assert db_path().read_bytes() == b"garbage\n" * 600


def test_any_command_in_a_repository_with_unrecorded_refs_says_so(repo, worktrees, tmp_path,
                                                                  monkeypatch):
    """A lost data dir: every git-ao command run in a repository whose preserve refs
    no record knows says so once, with the command that rebuilds them; one whose
    refs all have records, or that holds none, runs no git for it."""
    make_sessions(repo, worktrees, 2, detached=False)
    ao("ao-preserve", "--all", cwd=repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    git("init", "-q", "-b", "main", plain, cwd=tmp_path)
    init_repo(plain)
    for where in (repo, plain):
        res = ao("ao", "list", "-v", cwd=where)
        assert "warning:" not in res.stderr, res.stderr
        if where == plain:  # nothing run for it (the trace quotes --format's value)
            assert not any("git for-each-ref" in ln and "refs/ao/preserved/" in ln
                           for ln in res.stderr.splitlines()), res.stderr
    monkeypatch.setenv("AO_DATA_DIR", str(tmp_path / "new-data"))
    said = (f"warning: {os.path.realpath(repo / '.git')} holds preserve refs no record knows "
            f"({REF}s00, {REF}s01): git ao doctor --recover -C {repo} rebuilds their records")
    for args in (["ao", "list"], ["ao", "list", "--json"], ["ao", "config", "list"],
                 ["ao-prune", "-n"], ["ao-preserve", "--all", "-q"], ["ao", "log"]):
        res = ao(*args, cwd=repo, rc=None)
        assert res.stderr.count(said) == 1, (args, res.stderr)
    res = ao("ao", "list", cwd=plain)
    assert "warning" not in res.stderr
    ao("ao", "doctor", "--recover", "-C", repo, cwd=repo, rc=None)
    res = ao("ao", "list", cwd=repo)
    assert "warning" not in res.stderr, res.stderr


def test_the_notice_of_unrecorded_refs_reads_git_s_files_where_they_tell(repo, worktrees,
                                                                         monkeypatch):
    """The refs the notice of unrecorded preserve refs judges come from the ref files
    (loose and packed, no git process) where git's discovery would find the same
    repository; with a discovery boundary set in the environment git is asked,
    and both say the same."""
    wt = worktrees(repo, "wt")
    (wt / "README.md").write_text("work\n")
    ao("ao", "checkpoint", "-q", cwd=wt)
    git("update-ref", "refs/ao/preserved/ghost", "HEAD", cwd=repo)
    git("update-ref", "refs/ao/preserved/packed", "HEAD", cwd=repo)
    git("pack-refs", "--all", cwd=repo)
    git("update-ref", "refs/ao/preserved/loose", "HEAD", cwd=repo)
    said = "holds preserve refs no record knows (refs/ao/preserved/ghost, " \
        "refs/ao/preserved/loose, refs/ao/preserved/packed)"

    def listed_by_git(stderr: str) -> bool:
        return any("git for-each-ref" in ln and "refs/ao/preserved/" in ln
                   for ln in stderr.splitlines())
    (wt / "README.md").write_text("more work\n")
    res = ao("ao", "checkpoint", "-v", cwd=wt)
    assert said in res.stderr and not listed_by_git(res.stderr), res.stderr
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo.parent / "elsewhere"))
    (wt / "README.md").write_text("yet more work\n")
    res = ao("ao", "checkpoint", "-v", cwd=wt)
    assert said in res.stderr and listed_by_git(res.stderr), res.stderr


def test_the_home_search_stays_on_its_file_system_as_git_discovery_does(ao_env, worktrees,
                                                                        tmp_path, monkeypatch):
    """A repository on another file system below the home directory (a mounted disk,
    a network share) is not entered, and the note names it; with
    GIT_DISCOVERY_ACROSS_FILESYSTEM set, as git then does, it is."""
    from tests.support import tmpfs
    home = ao_env / "home"
    with tmpfs(home / "mnt", "16m") as mnt:
        _saved_repo(mnt / "eps", worktrees, "e1")
        _lose("deleted")
        # Nothing else holds a ref: refused (no empty database made), naming the mount.
        res = ao("ao", "doctor", "--recover", cwd=tmp_path, rc=129, process=True)
        assert f"not entered (another file system, as git's discovery): {mnt}" in res.stderr, \
            res.stderr
        assert not db_path().exists()
        monkeypatch.setenv("GIT_DISCOVERY_ACROSS_FILESYSTEM", "1")
        ao("ao", "doctor", "--recover", cwd=tmp_path, rc=None, process=True)
        assert states(mnt / "eps") == {"e1": "pending"}


def test_intent_to_add_comes_back_on_a_record_rebuilt_from_its_ref(repo, worktrees):
    """The record lost (forgotten, or a database lost), the trash entry pruned: the
    restore rebuilds the worktree from the commit alone, and the intent-to-add
    entries the commit shows (in W, not in I) are marked again."""
    wt = worktrees(repo, "itarec")
    (wt / "ita.txt").write_text("hi\n")
    (wt / "sub").mkdir()
    (wt / "sub" / "deep.txt").write_text("deep\n")
    git("add", "-N", "ita.txt", "sub/deep.txt", cwd=wt)
    git("rm", "-q", "README.md", cwd=wt)
    (wt / "README.md").write_text("again\n")
    git("add", "-N", "README.md", cwd=wt)
    (wt / "untracked").write_text("u\n")
    before = git("status", "--porcelain", cwd=wt)
    assert " A ita.txt" in before and "DA README.md" in before
    ao("ao-preserve", "itarec", cwd=repo)
    ao("ao", "forget", "--force", "itarec", cwd=repo)
    pruned = ao("ao-prune", "--expire=now", cwd=repo)
    assert "deleted" in pruned.stdout  # the trash entry: nothing pending any more
    ao("ao", "doctor", "--recover", "-C", str(repo), cwd=repo)
    res = ao("ao-restore", "itarec", cwd=repo)
    assert "attention" not in res.stdout, res.stdout
    assert git("status", "--porcelain", cwd=wt) == before
