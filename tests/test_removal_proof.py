"""Preserve takes away only what it proved captured, ignored, or safe elsewhere.

Each test builds a state whose content `git status` does not show (or shows
only in part), runs a real preserve, and checks that the worktree stayed (exit
1, the path and the reason named) or that the work came back exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import ao, git, log_text, round_trip, states
from tests.worktree_state import assert_restored, differences, state

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")



def _kept(repo, wt: Path, sid: str, *needles: str) -> subprocess.CompletedProcess:
    """Preserve `sid`, which must keep its worktree (exit 1) naming each needle."""
    before = state(wt)
    res = ao("ao-preserve", sid, cwd=repo, rc=1)
    for needle in needles:
        assert needle in res.stdout + res.stderr, res.stdout + res.stderr
    assert wt.is_dir() and states(repo)[sid] == "live"
    after = state(wt)
    assert after == before
    return res




# ---------------------------------------------------------------- nested repositories


def test_a_nested_linked_worktree_that_is_no_session_keeps_the_outer_one(repo, worktrees):
    outer = worktrees(repo, "outer")
    (outer / ".gitignore").write_text("*.log\nbuild/\n.claude/\n")
    inner = outer / ".claude" / "worktrees" / "sub"
    git("worktree", "add", "-q", "-b", "sub", inner, cwd=repo)
    (inner / "work.txt").write_text("the sub-agent's work\n")
    _kept(repo, outer, "outer", ".claude/worktrees/sub", "linked worktree")
    assert (inner / "work.txt").read_text() == "the sub-agent's work\n"


def test_a_nested_linked_worktree_git_shows_as_untracked_is_named_as_one(repo, worktrees):
    outer = worktrees(repo, "outer")
    inner = outer / "sub"
    git("worktree", "add", "-q", "-b", "sub", inner, cwd=repo)
    (inner / "work.txt").write_text("the sub-agent's work\n")
    res = _kept(repo, outer, "outer", "linked worktree of", "nested in this one: preserve it "
                "first if it is a session", "git worktree remove it or git ao add it")
    assert "nested repository" not in res.stdout + res.stderr
    assert (inner / "work.txt").read_text() == "the sub-agent's work\n"
    # Registered, it is preserved first by --all, and the outer one follows.
    ao("ao", "add", inner, "--id", "sub", cwd=repo)
    res = _kept(repo, outer, "outer", "session 'sub' lives in", "preserve it first")
    assert "git ao add it" not in res.stdout  # it is a session already
    ao("ao-preserve", "--all", cwd=repo)
    assert not outer.exists()


def test_nested_sessions_go_inner_first_and_come_back_outer_first(repo, worktrees):
    outer = worktrees(repo, "outer")
    (outer / ".gitignore").write_text("*.log\nbuild/\n.claude/\n")
    (outer / "outer.txt").write_text("outer work\n")
    inner = outer / ".claude" / "worktrees" / "inner"
    git("worktree", "add", "-q", "-b", "inner", inner, cwd=repo)
    ao("ao", "add", inner, "--id", "inner", cwd=repo)
    (inner / "inner.txt").write_text("inner work\n")
    before = {"outer": state(outer), "inner": state(inner)}
    ao("ao-preserve", "--all", cwd=repo)
    assert states(repo) == {"outer": "pending", "inner": "pending"}
    assert not outer.exists()
    ao("ao-restore", cwd=repo)
    assert states(repo) == {"outer": "live", "inner": "live"}
    # The inner worktree is an ignored path of the outer one, back where it was.
    assert differences(before["outer"], state(outer)) == []
    assert_restored(before["inner"], state(inner))


def _dry_and_real(repo) -> tuple[dict[str, str], dict[str, str]]:
    """{id: status} of `git ao-preserve --all -n`, then of the real run."""
    import json

    def run() -> dict[str, str]:
        res = subprocess.run(["git", "ao-preserve", "--all", *extra, "--json"], cwd=repo,
                             capture_output=True, text=True, check=False)
        return {r["id"]: r["status"] for r in json.loads(res.stdout)["results"]}

    extra = ["-n"]
    dry = run()
    extra = []
    return dry, run()


@pytest.mark.parametrize("under", ["sub", ".claude/worktrees/sub"])
def test_a_dry_run_of_all_says_what_the_real_run_does_with_nested_sessions(
        repo, worktrees, under):
    outer = worktrees(repo, "outer")
    (outer / ".gitignore").write_text(".claude/\n")
    (outer / "outer.txt").write_text("outer work\n")
    inner = outer / under
    git("worktree", "add", "-q", "-b", "sub", inner, cwd=repo)
    ao("ao", "add", inner, "--id", "sub", cwd=repo)
    (inner / "inner.txt").write_text("inner work\n")
    # The real run takes the inner one first, so the outer one follows.
    dry, real = _dry_and_real(repo)
    assert dry == real == {"sub": "ok", "outer": "ok"}, (dry, real)


def test_a_dry_run_of_all_keeps_the_outer_session_where_the_inner_one_stays(
        repo, worktrees):
    outer = worktrees(repo, "outer")
    inner = outer / "sub"
    git("worktree", "add", "-q", "-b", "sub", inner, cwd=repo)
    ao("ao", "add", inner, "--id", "sub", cwd=repo)
    os.mkfifo(inner / "pipe")  # the inner worktree is kept, so the outer one is too
    dry, real = _dry_and_real(repo)
    assert dry == real == {"sub": "refused", "outer": "refused"}, (dry, real)


def test_the_outer_session_alone_is_kept_while_the_inner_one_is_live(repo, worktrees):
    outer = worktrees(repo, "outer")
    (outer / ".gitignore").write_text("*.log\nbuild/\n.claude/\n")
    inner = outer / ".claude" / "worktrees" / "inner"
    git("worktree", "add", "-q", "-b", "inner", inner, cwd=repo)
    ao("ao", "add", inner, "--id", "inner", cwd=repo)
    _kept(repo, outer, "outer", "session 'inner' lives here")


def test_an_embedded_repository_with_commits_nowhere_else_keeps_the_worktree(repo, worktrees):
    wt = worktrees(repo, "emb")
    git("init", "-q", "-b", "main", wt / "vendored", cwd=wt)
    git("commit", "-q", "--allow-empty", "-m", "only here", cwd=wt / "vendored")
    # `git add` of a repository stages a gitlink to a commit this repository lacks.
    git("add", "vendored", cwd=wt)
    _kept(repo, wt, "emb", "vendored", "no remote-tracking ref")


def test_a_clean_pushed_clone_in_an_ignored_dir_is_ordinary_ignored_content(repo, worktrees,
                                                                            tmp_path):
    origin = tmp_path / "pkg-origin"
    git("init", "-q", "-b", "main", origin, cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "pkg", cwd=origin)
    wt = worktrees(repo, "venv")
    (wt / ".gitignore").write_text("*.log\nbuild/\n.venv/\n")
    git("clone", "-q", origin, wt / ".venv" / "src" / "pkg", cwd=tmp_path)
    ao("ao-preserve", "venv", cwd=repo)
    assert states(repo)["venv"] == "pending" and not wt.exists()


# ---------------------------------------------------------------- what git does not show


def test_a_fifo_git_cannot_store_keeps_the_worktree(repo, worktrees):
    wt = worktrees(repo, "fifo")
    os.mkfifo(wt / "agent.pipe")
    _kept(repo, wt, "fifo", "agent.pipe", "FIFO")


@pytest.mark.parametrize("dry", [False, True])
def test_many_paths_kept_for_one_reason_are_one_bounded_line(repo, worktrees, dry):
    """As git says it: one line per reason with a count and a few paths; every
    path is in --json's `blocked` and the log."""
    wt = worktrees(repo, "fifos")
    for n in range(20):
        os.mkfifo(wt / f"pipe{n:02}")
    res = ao("ao-preserve", *(["-n"] if dry else []), "--json", "fifos", cwd=repo, rc=1)
    [r] = json.loads(res.stdout)["results"]
    msg = r["message"]
    assert msg.count("FIFO") == 1, msg
    assert f"20 paths in {wt} (pipe00, pipe01, pipe02, pipe03, pipe04 and 15 more), each a " \
        "FIFO" in msg, msg
    assert len(msg) < 600, msg
    assert [b.split(": ")[0] for b in r["blocked"]] == [str(wt / f"pipe{n:02}")
                                                        for n in range(20)], r
    if not dry:
        assert str(wt / "pipe19") in log_text()
    assert wt.is_dir() and states(repo)["fifos"] == "live"


@pytest.mark.parametrize("name", [".git /notes.txt", "GIT~1", ".GIT/x"])
def test_names_git_refuses_to_store_keep_the_worktree(repo, worktrees, name):
    wt = worktrees(repo, "refused")
    (wt / name).parent.mkdir(parents=True, exist_ok=True)
    (wt / name).write_text("only copy\n")
    _kept(repo, wt, "refused", name.split("/")[0])


def test_a_name_that_differs_only_in_case_under_ignorecase_keeps_the_worktree(repo, worktrees):
    wt = worktrees(repo, "case")
    git("config", "core.ignorecase", "true", cwd=repo)
    (wt / "readme.md").write_text("a different file\n")
    _kept(repo, wt, "case", "readme.md")


def test_a_path_longer_than_path_max_keeps_the_worktree(repo, worktrees):
    wt = worktrees(repo, "deep")
    fd = os.open(wt, os.O_RDONLY)
    try:
        for _ in range(21):
            os.mkdir("d" * 200, dir_fd=fd)
            nfd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open("notes.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, b"deep work\n")
        os.close(wfd)
    finally:
        os.close(fd)
    res = ao("ao-preserve", "deep", cwd=repo, rc=1)
    assert "PATH_MAX" in res.stdout + res.stderr
    assert wt.is_dir() and states(repo)["deep"] == "live"
    subprocess.run(["rm", "-rf", str(wt / ("d" * 200))], check=True)


@ROOT_ONLY
def test_a_directory_git_cannot_open_keeps_the_worktree(repo, worktrees):
    wt = worktrees(repo, "unreadable")
    (wt / "private").mkdir()
    (wt / "private" / "key").write_text("secret\n")
    os.chmod(wt / "private", 0)
    # Root reads everything: run the preserve without the capabilities that let it.
    env = dict(os.environ)
    res = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                          "--inh-caps=-dac_override,-dac_read_search",
                          "git", "ao-preserve", "unreadable"],
                         cwd=repo, capture_output=True, text=True, env=env, check=False)
    os.chmod(wt / "private", 0o755)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "private" in res.stdout and wt.is_dir()
    assert (wt / "private" / "key").read_text() == "secret\n"


# ---------------------------------------------------------------- mounts


@ROOT_ONLY
@pytest.mark.parametrize("kind", ["tmpfs", "bind"])
def test_a_mount_inside_an_ignored_dir_is_never_taken_away(repo, worktrees, tmp_path, kind):
    wt = worktrees(repo, "mnt")
    (wt / "build" / "data").mkdir(parents=True)
    source = tmp_path / "shared-data"
    source.mkdir()
    if kind == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(wt / "build" / "data")],
                       check=True)
    else:
        subprocess.run(["mount", "--bind", str(source), str(wt / "build" / "data")],
                       check=True)
    try:
        (wt / "build" / "data" / "big.db").write_text("data\n")
        _kept(repo, wt, "mnt", "build/data", "mount point")
        assert (wt / "build" / "data" / "big.db").read_text() == "data\n"
        ao("ao", "kill", "mnt", cwd=repo, rc=1)
        ao("ao-prune", cwd=repo)
        assert (wt / "build" / "data" / "big.db").read_text() == "data\n"
    finally:
        subprocess.run(["umount", str(wt / "build" / "data")], check=True)


def _mounted_session(repo, tmp_path) -> Path:
    """A session `sandbox` whose worktree is itself a tmpfs mount point, with one new
    file. The caller unmounts it."""
    wt = tmp_path / "sandbox"
    wt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(wt)], check=True)
    try:
        git("worktree", "add", "-q", "-b", "sandbox", wt, cwd=repo)
        ao("ao", "add", wt, "--id", "sandbox", cwd=repo)
        (wt / "work.txt").write_text("work\n")
    except BaseException:
        subprocess.run(["umount", str(wt)], check=False)
        raise
    return wt


@ROOT_ONLY
def test_a_worktree_that_is_a_mount_point_is_saved_as_a_checkpoint_and_kept(repo, tmp_path):
    """A mounted directory cannot be moved away whole: its work is saved in the ref
    (a checkpoint, the session stays live), the directory is left as it is."""
    wt = _mounted_session(repo, tmp_path)
    try:
        res = ao("ao-preserve", "sandbox", cwd=repo, rc=1)
        assert "mount point" in res.stdout + res.stderr
        assert states(repo)["sandbox"] == "live"
        ref = git("rev-parse", "refs/ao/preserved/sandbox", cwd=repo).strip()
        assert "work.txt" in git("show", "--name-only", "--format=", f"{ref}^3", cwd=repo)
        # and again: the same checkpoint, nothing half-removed
        ao("ao-preserve", "sandbox", cwd=repo, rc=1)
        assert (wt / "work.txt").read_text() == "work\n"
    finally:
        git("worktree", "remove", "--force", wt, cwd=repo, check=False)
        subprocess.run(["umount", str(wt)], check=False)


@pytest.mark.parametrize("dry", [False, True])
def test_a_worktree_whose_directory_is_a_symlink_is_saved_and_kept(repo, worktrees, dry):
    """A worktree reached through a symlink (its directory moved, a link left at the
    registered path): a rename would take the link alone away, and the pruned
    registration would orphan the real directory. Its work is saved in the ref, the
    link and the directory are left as they are, and the dry run says the same."""
    wt = worktrees(repo, "linked")
    (wt / "work.txt").write_text("work\n")
    (wt / "debug.log").write_text("ignored\n")
    real = wt.with_name("linked-real")
    wt.rename(real)
    wt.symlink_to(real.name)
    before = state(real)
    args = ["ao-preserve", "--all"] + (["-n"] if dry else [])
    res = ao(*args, cwd=repo, rc=None if dry else 1)
    out = res.stdout + res.stderr
    assert "is a symlink" in out and str(real) in out, out
    assert wt.is_symlink() and os.readlink(wt) == real.name
    assert state(real) == before
    assert states(repo)["linked"] == "live"
    if not dry:
        ref = git("rev-parse", "refs/ao/preserved/linked", cwd=repo).strip()
        assert "work.txt" in git("show", "--name-only", "--format=", f"{ref}^3", cwd=repo)
        assert str(wt) in git("worktree", "list", cwd=repo)
        # and again: the same, nothing half-removed
        ao("ao-preserve", "--all", cwd=repo, rc=1)
        assert state(real) == before


# ---------------------------------------------------------------- what only the admin dir holds


def test_per_worktree_refs_and_reflog_only_commits_survive_gc_and_come_back(repo, worktrees):
    wt = worktrees(repo, "admin")
    (wt / "a.txt").write_text("marked\n")
    git("add", "a.txt", cwd=wt)
    git("commit", "-q", "-m", "marked", cwd=wt)
    git("update-ref", "refs/worktree/mark", "HEAD", cwd=wt)
    (wt / "b.txt").write_text("dropped\n")
    git("add", "b.txt", cwd=wt)
    git("commit", "-q", "-m", "dropped by a reset", cwd=wt)
    dropped = git("rev-parse", "HEAD", cwd=wt).strip()
    marked = git("rev-parse", "refs/worktree/mark", cwd=wt).strip()
    git("reset", "-q", "--hard", "HEAD~2", cwd=wt)
    ao("ao-preserve", "admin", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    assert git("cat-file", "-t", dropped, cwd=repo).strip() == "commit"
    ao("ao-restore", cwd=repo)
    assert git("rev-parse", "refs/worktree/mark", cwd=wt).strip() == marked


def test_objects_pruned_between_capture_and_ref_are_written_again(repo, worktrees):
    """A `git gc --prune=now` running while preserve writes: simulated by pruning
    right after the capture, before the ref exists."""
    from git_ao.context import Context
    from git_ao.preserve import workflow as preserve_mod
    from git_ao.save import capture
    from git_ao.store.database import Store

    wt = worktrees(repo, "gc")
    (wt / "new.txt").write_text("work written during a gc\n")
    before = state(wt)
    real = capture.capture
    calls = []

    def capture_then_gc(*args, **kw):
        cap = real(*args, **kw)
        if not calls:
            git("gc", "-q", "--prune=now", cwd=repo)
        calls.append(cap.commit)
        return cap

    capture.capture = capture_then_gc
    try:
        out = preserve_mod.preserve_one(Context(Store()), "gc")
    finally:
        capture.capture = real
    assert out.status == "ok", out.message
    assert len(calls) >= 2
    from git_ao.store import log
    log.close()
    logged = (Path(os.environ["AO_DATA_DIR"]) / "logs" / log.LOG_NAME).read_text()
    # The refs moved together, the proof found the trees gone, both were moved back.
    assert "objects-pruned" in logged and "attempt=0" in logged, logged
    git("fsck", "--no-dangling", "--connectivity-only", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


@pytest.mark.parametrize("keep", [False, True])
def test_objects_pruned_between_their_writing_and_the_refs_are_written_again(
        repo, worktrees, keep):
    """The commits are written, then a `git gc --prune=now` drops them (no ref holds
    them yet), then the one transaction that moves both refs fails: the refs are
    written one at a time, the capture taken again, and the history holds a whole
    entry (a checkpoint and a preserve alike)."""
    from git_ao.context import Context
    from git_ao.preserve import workflow as preserve_mod
    from git_ao.save import capture
    from git_ao.store.database import Store

    wt = worktrees(repo, "gc")
    (wt / "new.txt").write_text("work written during a gc\n")
    (wt / "README.md").write_text("edited\n")
    before = state(wt)
    real = capture.flush
    pruned = []

    def flush_then_gc(*args, **kw):
        real(*args, **kw)
        if not pruned:
            pruned.append(git("gc", "-q", "--prune=now", cwd=repo))

    capture.flush = flush_then_gc
    try:
        out = preserve_mod.preserve_one(Context(Store()), "gc", keep)
    finally:
        capture.flush = real
    assert out.status == "ok", out.message
    assert pruned
    from git_ao.store import log
    log.close()
    logged = (Path(os.environ["AO_DATA_DIR"]) / "logs" / log.LOG_NAME).read_text()
    assert "refs-one-by-one" in logged and "objects-pruned" in logged, logged
    git("fsck", "--no-dangling", "--connectivity-only", cwd=repo)
    import json
    entries = json.loads(ao("ao", "history", "gc", "--json", cwd=repo).stdout)["entries"]
    assert len(entries) == 1
    assert entries[0]["commit"] == git("rev-parse", "refs/ao/preserved/gc", cwd=repo).strip()
    if not keep:
        ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


def test_a_moved_worktree_with_staged_work_is_not_recorded_as_gone(repo, worktrees, tmp_path):
    wt = worktrees(repo, "moved")
    (wt / "staged.txt").write_text("staged work\n")
    git("add", "staged.txt", cwd=wt)
    os.rename(wt, tmp_path / "elsewhere")
    res = ao("ao-preserve", "moved", cwd=repo, rc=1)
    assert "staged" in res.stdout + res.stderr
    # Still live (not recorded as gone), and listed as needing attention: its
    # worktree is not at its path.
    assert states(repo)["moved"] == "attention"


def test_a_same_size_rewrite_keeping_the_mtime_is_captured_without_trustctime(repo, worktrees):
    wt = worktrees(repo, "ctime")
    git("config", "core.trustctime", "false", cwd=repo)
    f = wt / "README.md"
    st = f.stat()
    f.write_text("HELLO\n")  # same size as "hello\n"
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    round_trip(repo, wt, "ctime")
    assert (wt / "README.md").read_text() == "HELLO\n"


@pytest.mark.parametrize("key, value", [("core.trustctime", "false"),
                                        ("core.checkStat", "minimal"),
                                        ("core.trustctime", "no")])
def test_a_same_size_rewrite_keeping_the_mtime_stays_modified_in_the_user_s_git(
        repo, worktrees, key, value):
    """git-ao's git compares every stat field; the user's may compare fewer (ctime
    not trusted, checkStat minimal). A rewrite keeping the size and mtime but not
    the ctime must still show as modified to the user's git after
    the restore, however long after the worktree was made the save ran: the
    trash's index keeps a time at which that file is compared by content."""
    wt = worktrees(repo, "minimal")
    git("config", key, value, cwd=repo)
    f = wt / "README.md"
    st = f.stat()
    time.sleep(1.1)  # out of git's racy second of the worktree's index
    f.write_text("HELLO\n")  # same size as "hello\n", same inode, a new ctime
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    round_trip(repo, wt, "minimal")
    assert (wt / "README.md").read_text() == "HELLO\n"


def test_a_submodule_hidden_by_ignore_all_is_still_judged(repo, worktrees, tmp_path):
    sub = tmp_path / "subrepo"
    git("init", "-q", "-b", "main", sub, cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "s", cwd=sub)
    wt = worktrees(repo, "subm")
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "s", cwd=wt)
    git("config", "-f", ".gitmodules", "submodule.s.ignore", "all", cwd=wt)
    git("commit", "-q", "-am", "add s", cwd=wt)
    (wt / "s" / "dirty.txt").write_text("work inside the submodule\n")
    _kept(repo, wt, "subm", "s")


def test_a_mirror_refspec_is_warned_about(repo, worktrees):
    wt = worktrees(repo, "mirror")
    git("config", "remote.origin.url", "/nowhere", cwd=repo)
    git("config", "remote.origin.fetch", "+refs/*:refs/*", cwd=repo)
    (wt / "f.txt").write_text("work\n")
    res = ao("ao-preserve", "mirror", cwd=repo)
    assert "fetch --prune" in res.stdout + res.stderr


def test_kill_keeps_ignored_files_in_the_trash(repo, worktrees):
    wt = worktrees(repo, "killed")
    (wt / "build").mkdir()
    (wt / "build" / "cache.o").write_text("ignored build output\n")
    (wt / ".env.log").write_text("SECRET=1\n")
    ao("ao", "kill", "killed", cwd=repo)
    assert not wt.exists()
    trash = Path(os.environ["AO_DATA_DIR"]) / "trash"
    kept = [p for p in trash.rglob(".env.log")]
    assert len(kept) == 1 and kept[0].read_text() == "SECRET=1\n"


# ---------------------------------------------------------------- states from git's own tests


def test_config_that_hides_untracked_files_from_status_hides_nothing(repo, worktrees):
    """t7508: status.showUntrackedFiles=no makes plain `git status` blind to new
    files; the capture asks for every untracked file all the same."""
    wt = worktrees(repo, "hidden")
    git("config", "status.showUntrackedFiles", "no", cwd=repo)
    (wt / "new dir").mkdir()
    (wt / "new dir" / "only copy.txt").write_text("new work\n")
    round_trip(repo, wt, "hidden")


def test_a_file_named_head_and_a_refs_dir_in_the_worktree(repo, worktrees):
    """t3903: a worktree file called HEAD must not be read as a revision."""
    wt = worktrees(repo, "headfile")
    (wt / "HEAD").write_text("not a revision\n")
    (wt / "refs").mkdir()
    (wt / "refs" / "heads").write_text("nor a ref\n")
    round_trip(repo, wt, "headfile")


def test_a_removed_file_recreated_as_ignored_is_kept_in_the_trash(repo, worktrees):
    """t3903 'stash rm and ignore': the path is deleted in the index and its new
    content is ignored, so the commit cannot hold it; the trash keeps it."""
    wt = worktrees(repo, "rmignore")
    git("rm", "-q", "src/util.py", cwd=wt)
    with open(wt / ".gitignore", "a") as fh:
        fh.write("src/util.py\n")
    (wt / "src" / "util.py").write_text("x = 2  # now ignored\n")
    ao("ao-preserve", "rmignore", cwd=repo)
    kept = list((Path(os.environ["AO_DATA_DIR"]) / "trash").rglob("util.py"))
    assert [p.read_text() for p in kept] == ["x = 2  # now ignored\n"]


@ROOT_ONLY
def test_a_mounted_worktree_wiped_by_a_reboot_comes_back_from_its_checkpoint(repo, tmp_path):
    """A tmpfs worktree is kept at shutdown with its work in a checkpoint; after a
    reboot the mount is empty: doctor says so, the next preserve records it as
    gone, and restore brings the work back into the empty mount point."""
    wt = _mounted_session(repo, tmp_path)
    try:
        ao("ao-preserve", "--all", cwd=repo, rc=1)
        subprocess.run(["umount", str(wt)], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(wt)], check=True)
        res = ao("ao", "doctor", cwd=repo, rc=1)
        assert "sandbox: live, but its worktree" in res.stdout
        ao("ao-preserve", "--all", cwd=repo)
        assert states(repo)["sandbox"] == "pending"
        ao("ao-restore", cwd=repo)
        assert (wt / "work.txt").read_text() == "work\n"
        assert states(repo)["sandbox"] == "live"
    finally:
        git("worktree", "remove", "--force", wt, cwd=repo, check=False)
        subprocess.run(["umount", "-l", str(wt)], check=False)


def test_an_inner_session_alone_waits_for_its_pending_outer_one(repo, worktrees):
    outer = worktrees(repo, "outer")
    (outer / ".gitignore").write_text("*.log\nbuild/\n.claude/\n")
    inner = outer / ".claude" / "worktrees" / "inner"
    git("worktree", "add", "-q", "-b", "inner", inner, cwd=repo)
    ao("ao", "add", inner, "--id", "inner", cwd=repo)
    (inner / "inner.txt").write_text("inner work\n")
    ao("ao-preserve", "--all", cwd=repo)
    res = ao("ao-restore", "inner", cwd=repo, rc=1)
    assert "inside pending session 'outer'" in res.stdout
    assert states(repo) == {"outer": "pending", "inner": "pending"}
    ao("ao-restore", cwd=repo)
    assert (inner / "inner.txt").read_text() == "inner work\n"


def test_a_write_just_after_git_status_and_before_the_walk_is_saved(repo, worktrees,
                                                                    monkeypatch):
    # An agent rewrites a tracked file right after preserve's `git status` found
    # the worktree clean, well outside the walk's racy window. The capture takes
    # the status at its word; the witness must still see the write and save it.
    import time

    from git_ao.context import Context
    from git_ao.preserve import workflow as preserve
    from git_ao.save import capture
    from git_ao.store.database import Store
    wt = worktrees(repo, "late")
    real_inspect = capture.inspect

    def inspect_then_write(path, git_dir, *more, **kw):
        st = real_inspect(path, git_dir, *more, **kw)
        if path == str(wt):  # once: a capture of the moved copy reads it as it is
            (wt / "README.md").write_text("written after git status\n")
            time.sleep(0.2)  # past the racy window of a walk that starts now
        return st

    monkeypatch.setattr(capture, "inspect", inspect_then_write)
    ctx = Context(Store())
    [out] = preserve.preserve(ctx, [ctx.store.get("late")])
    assert not wt.exists(), out
    # In the save itself, not only in the trash copy the directory went to.
    saved = git("rev-parse", "-q", "--verify", "refs/ao/preserved/late", cwd=repo,
                check=False).strip()
    assert saved, out.message
    assert git("show", f"{saved}:README.md", cwd=repo) == "written after git status\n"
    monkeypatch.setattr(capture, "inspect", real_inspect)
    ao("ao-restore", "late", cwd=repo)
    assert (wt / "README.md").read_text() == "written after git status\n"


# ---------------------------------------------------------------- files from elsewhere


@pytest.mark.parametrize("target", ["tracked", ".git"])
def test_a_file_bind_mounted_into_the_worktree_keeps_it(repo, worktrees, tmp_path, target):
    wt = worktrees(repo, "fm")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"someone else's\n")
    name = next(p for p in git("ls-files", cwd=wt).split() if "/" not in p) \
        if target == "tracked" else ".git"
    if name == ".git":
        outside.write_bytes((wt / ".git").read_bytes())  # a .git file git can still read
    kept = outside.read_bytes()
    from tests.support import bind_mount
    with bind_mount(outside, wt / name, under=tmp_path):
        res = ao("ao-preserve", "fm", cwd=repo, rc=1)
        assert "mount point" in res.stdout + res.stderr, res.stdout + res.stderr
        assert wt.is_dir() and states(repo)["fm"] == "live"
        res = ao("ao", "kill", "fm", cwd=repo, rc=1)
        assert wt.is_dir()
    assert outside.read_bytes() == kept


def test_a_hard_link_to_the_worktrees_git_file_keeps_its_bytes(repo, worktrees, tmp_path):
    wt = worktrees(repo, "hl")
    (wt / "work.txt").write_text("mine\n")
    elsewhere = tmp_path / "gitfile"
    os.link(wt / ".git", elsewhere)
    kept = elsewhere.read_bytes()
    ao("ao-preserve", "hl", cwd=repo)
    assert elsewhere.read_bytes() == kept
    ao("ao-restore", "hl", cwd=repo)
    assert (wt / "work.txt").read_text() == "mine\n"
    assert elsewhere.read_bytes() == kept


def test_a_crlf_file_git_keeps_as_it_is_in_the_racy_window_is_no_late_write(repo, worktrees):
    """A file whose times are too close to the walk is compared by content after the
    move, as `git add` reads it: its index blob holds CRLFs, so git stores it with
    them, which `git hash-object` (reading no index) does not; the save is the same."""
    (repo / "m.txt").write_bytes(b"x\r\ny\r\n")
    git("add", "m.txt", cwd=repo)
    git("commit", "-q", "-m", "a CRLF file", cwd=repo)
    git("config", "core.autocrlf", "true", cwd=repo)
    wt = worktrees(repo, "racy")
    (wt / "m.txt").write_bytes(b"x\r\ny\r\nz\r\n")
    later = time.time_ns() + 3600 * 10**9  # racy to any walk: compared by content
    os.utime(wt / "m.txt", ns=(later, later))
    res = ao("ao-preserve", "racy", cwd=repo)
    assert "written after the capture" not in res.stdout, res.stdout
    assert states(repo) == {"racy": "pending"}
