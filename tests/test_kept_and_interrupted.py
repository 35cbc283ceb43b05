"""Work a restore could not put back is never replaced by a later preserve; a restore
a kill interrupted is recognised and started again; prune keeps listings true; a
registration a killed `git worktree add` left half-written is named with its fix.
(Found by a new user trying to break git-ao.)"""

import json
import os
import re
import shutil
import subprocess

from tests.support import REF, ao, commit_on, dirty, git, ref_of
from tests.trash_helpers import checkout_path_only
from tests.worktree_state import assert_restored, state


def _blocked_restore(repo, worktrees):
    """Session 'wt' saved with an untracked notes.txt; its branch then gains a
    notes.txt of its own, so the restore applies nothing and keeps the ref (exit 3)."""
    wt = worktrees(repo, "wt", branch="feat")
    (wt / "notes.txt").write_text("MINE\n")
    ao("ao-preserve", "wt", cwd=repo)
    commit_on(repo, "feat", {"notes.txt": "THEIRS\n"})
    ao("ao-restore", "wt", cwd=repo, rc=3)
    return wt


def test_preserve_never_replaces_work_a_restore_could_not_put_back(repo, worktrees):
    wt = _blocked_restore(repo, worktrees)
    kept = ref_of(repo, "wt")
    assert kept and (wt / "notes.txt").read_text() == "THEIRS\n"
    (wt / "other.txt").write_text("the agent went on\n")
    for args in (["--all"], ["wt"]):
        res = ao("ao-preserve", *args, cwd=repo, rc=1)
        assert "still holds work the last restore could not put back" in res.stdout
        assert "drop it with git ao resolve wt" in res.stdout
        assert "git ao checkpoint wt appends the worktree's state" in res.stdout
    assert ref_of(repo, "wt") == kept
    assert (wt / "other.txt").read_text() == "the agent went on\n"
    assert "wt\tworker\t-\tattention" in ao("ao", "list", cwd=repo).stdout
    # Once the user has what they need and drops the ref, shutdown saves as usual.
    git("update-ref", "-d", REF + "wt", kept, cwd=repo)
    ao("ao-preserve", "--all", cwd=repo)
    assert not wt.exists() and ref_of(repo, "wt") not in (None, kept)


def _history(repo, sid):
    return json.loads(ao("ao", "history", sid, "--json", cwd=repo).stdout)["entries"]


def test_a_checkpoint_of_an_attention_session_keeps_its_work_and_leaves_the_ref(
        repo, worktrees, tmp_path):
    """The agent goes on writing after a conflicted restore: each checkpoint form
    appends that work to the history, so a git clean loses nothing, and the kept
    ref (the work the restore could not put back) stays exactly as it is."""
    wt = _blocked_restore(repo, worktrees)
    kept = ref_of(repo, "wt")
    reflog = git("reflog", "show", REF + "wt", cwd=repo)
    before = len(_history(repo, "wt"))
    hook = json.dumps({"hook_event_name": "Stop", "cwd": str(wt)})
    forms = [lambda: ao("ao", "checkpoint", "wt", cwd=repo),
             lambda: subprocess.run(["git", "ao", "checkpoint", "--hook-input", "--trigger",
                                     "hook"], cwd=tmp_path, input=hook, capture_output=True,
                                    text=True, check=False),
             lambda: ao("ao-preserve", "wt", "--keep-worktree", cwd=repo)]
    for n, form in enumerate(forms):
        (wt / f"agent{n}.txt").write_text(f"written after the restore {n}\n")
        res = form()
        assert res.returncode == 0, res
        assert f"{REF}wt is left as it is" in res.stdout, res.stdout
        entries = _history(repo, "wt")
        assert len(entries) == before + n + 1
        save = entries[0]["commit"]
        assert git("show", f"{save}^3:agent{n}.txt", cwd=repo) == (
            f"written after the restore {n}\n")
        assert ref_of(repo, "wt") == kept
    assert git("reflog", "show", REF + "wt", cwd=repo) == reflog
    assert "wt\tworker\t-\tattention" in ao("ao", "list", cwd=repo).stdout
    res = ao("ao", "checkpoint", "wt", cwd=repo)  # unchanged: said too
    assert f"{REF}wt is left as it is" in res.stdout, res.stdout
    (wt / "agent3.txt").write_text("written after the restore 3\n")
    res = ao("ao", "checkpoint", "wt", "--json", cwd=repo)
    got = json.loads(res.stdout)["results"][0]
    assert (got["preserve_ref"], got["preserved_commit"]) == (REF + "wt", kept)
    git("clean", "-fdq", cwd=wt)
    assert not (wt / "agent3.txt").exists()
    ao("ao-restore", "wt", "--at", "1", cwd=repo)
    assert (wt / "agent3.txt").read_text() == "written after the restore 3\n"
    # The full preserve still refuses to replace the kept ref.
    ao("ao-preserve", "--all", cwd=repo, rc=1)
    assert ref_of(repo, "wt") == kept


def test_kept_work_committed_on_the_branch_no_longer_blocks(repo, worktrees):
    """A conflict resolved to the saved content and committed: the kept work is on
    the branch, so the next preserve replaces the ref."""
    wt = worktrees(repo, "cf")
    (wt / "README.md").write_text("hello\nMINE\n")
    ao("ao-preserve", "cf", cwd=repo)
    commit_on(repo, "cf", {"README.md": "hello\nTHEIRS\n"})
    ao("ao-restore", "cf", cwd=repo, rc=3)
    (wt / "README.md").write_text("hello\nMINE\n")
    git("commit", "-qam", "resolved", cwd=wt)
    (wt / "next.txt").write_text("next\n")
    ao("ao-preserve", "cf", cwd=repo)
    assert not wt.exists()
    ao("ao-restore", cwd=repo)
    assert (wt / "next.txt").read_text() == "next\n"
    assert (wt / "README.md").read_text() == "hello\nMINE\n"


def test_a_restore_killed_in_the_apply_is_started_again(repo, worktrees, tmp_path):
    """A kill inside `git stash apply` leaves some saved files written, some half
    written. The rerun sees the restore it started, sets that worktree aside in the
    trash and restores again, exactly; the files no save holds are named."""
    wt = worktrees(repo, "k")
    dirty(wt)
    (wt / "big.bin").write_bytes(os.urandom(1 << 16))
    before = state(wt)
    ao("ao-preserve", "k", cwd=repo)
    checkout_path_only()
    ao("ao-restore", cwd=repo, rc=None, env={"GIT_AO_CRASH_AT": "restore:after-worktree-add"})
    assert wt.is_dir() and "k\tworker\t-\tpending" in ao("ao", "list", cwd=repo).stdout
    # What the killed apply had written: a truncated untracked file, an edited one.
    (wt / "big.bin").write_bytes(b"partial")
    (wt / "src" / "app.py").write_text("print('changed')\n")
    res = ao("ao-restore", "--json", cwd=repo, rc=3)
    (r,) = json.loads(res.stdout)["results"]
    # what the rerun set aside holds content no save has: kept, and said
    assert r["status"] == "attention", r
    assert r["unsaved_files"] == ["big.bin"]  # dirty() saved src/app.py's new text
    assert os.path.exists(os.path.join(r["set_aside_unfinished"], "big.bin"))
    assert_restored(before, state(wt))
    assert ref_of(repo, "k") is None
    with open(os.path.join(os.environ["AO_DATA_DIR"], "logs", "git-ao.log")) as fh:
        assert "interrupted-restore-set-aside" in fh.read()


def test_an_interrupted_restore_with_a_stranger_file_is_left_alone(repo, worktrees):
    """A file no saved tree has appeared in the half-restored worktree: it might be
    someone's, so nothing is set aside; the work stays in the ref (attention)."""
    wt = worktrees(repo, "s")
    dirty(wt)
    ao("ao-preserve", "s", cwd=repo)
    checkout_path_only()
    ao("ao-restore", cwd=repo, rc=None, env={"GIT_AO_CRASH_AT": "restore:after-worktree-add"})
    (wt / "src" / "app.py").write_text("half\n")
    (wt / "stranger.txt").write_text("not from the save\n")
    ao("ao-restore", cwd=repo, rc=3)
    assert (wt / "stranger.txt").read_text() == "not from the save\n"
    assert ref_of(repo, "s")


def test_prune_that_deletes_a_checkpoint_ref_updates_the_listing(repo, worktrees):
    wt = worktrees(repo, "cp")
    (wt / "f.txt").write_text("x\n")
    ao("ao-preserve", "--keep-worktree", "cp", cwd=repo)
    shown = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"][0]
    assert shown["preserve_ref"] == REF + "cp"
    res = ao("ao-prune", cwd=repo)
    assert "in the worktree" in res.stdout and ref_of(repo, "cp") is None
    shown = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"][0]
    assert shown["preserve_ref"] is None and shown["preserved_commit"] is None
    assert re.search(r"^preserve_ref: +-$", ao("ao", "show", "cp", cwd=repo).stdout, re.MULTILINE)


def test_a_half_written_worktree_registration_is_named_with_its_fix(repo, worktrees):
    worktrees(repo, "ok")
    half = repo / ".git" / "worktrees" / "half"
    half.mkdir()
    (half / "commondir").write_text("")
    (half / "locked").write_text("initializing\n")
    (half / "gitdir").write_text(str(repo.parent / "half" / ".git") + "\n")
    res = ao("ao-preserve", "--all", cwd=repo, rc=1)
    assert f"rm -r '{half}'" in res.stdout and "killed `git worktree add`" in res.stdout


def _interrupted_after_add(repo, worktrees, sid):
    wt = worktrees(repo, sid)
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", sid, cwd=repo)
    checkout_path_only()
    ao("ao-restore", cwd=repo, rc=None, env={"GIT_AO_CRASH_AT": "restore:after-worktree-add"})
    assert wt.is_dir() and f"{sid}\tworker\t-\tpending" in ao("ao", "list", cwd=repo).stdout
    return wt, before


def test_an_interrupted_restore_with_a_stale_index_lock_is_started_again(repo, worktrees):
    """A git killed inside the apply leaves index.lock: the rerun sets that worktree
    aside rather than fail on the lock and mark the session live."""
    wt, before = _interrupted_after_add(repo, worktrees, "lk")
    (repo / ".git" / "worktrees" / "lk" / "index.lock").write_text("")
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


def test_an_interrupted_add_that_left_its_registration_locked(repo, worktrees):
    """A kill inside `git worktree add` can leave the registration locked
    ("initializing") and the directory gone; git's prune keeps locked ones, so the
    rerun unlocks its own and restores."""
    wt, before = _interrupted_after_add(repo, worktrees, "il")
    git("worktree", "lock", "--reason", "initializing", str(wt), cwd=repo)
    import shutil
    shutil.rmtree(wt)
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


def test_an_interrupted_checkout_with_its_registration_still_locked(repo, worktrees):
    """Killed inside `git worktree add`'s checkout: a partial worktree, its
    registration still locked "initializing". One rerun sets the worktree aside,
    unlocks its registration and restores."""
    wt, before = _interrupted_after_add(repo, worktrees, "ck")
    git("worktree", "lock", "--reason", "initializing", str(wt), cwd=repo)
    (wt / "src" / "util.py").unlink()  # the checkout had not got there yet
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


def test_a_lock_file_is_called_stale_or_held_with_what_clears_it(repo, worktrees):
    """A lock file in the way of a preserve: stale when no process holds it (named with
    the `rm` that clears it), held while a git runs there; the work stays in place."""
    import subprocess
    wt = worktrees(repo, "lk")
    dirty(wt)
    lock = repo / ".git" / "worktrees" / "lk" / "index.lock"
    lock.write_text("")
    res = ao("ao-preserve", "lk", cwd=repo, rc=1)
    assert f"{lock} is stale (no process holds it" in res.stdout, res.stdout
    assert f"rm {lock}" in res.stdout and "another process" not in res.stdout
    assert wt.is_dir()
    # A git running in the lock's directory (waiting on its stdin) may hold it.
    with subprocess.Popen(["git", "hash-object", "--stdin"], cwd=lock.parent,
                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as held:
        try:
            res = ao("ao-preserve", "lk", cwd=repo, rc=1, process=True)
        finally:
            held.communicate(b"")
    assert f"is held by pid {held.pid} (git)" in res.stdout, res.stdout
    lock.unlink()
    # Any git failing on a lock of another file is said the same way.
    ref_lock = repo / ".git" / "refs" / "ao" / "preserved" / "lk.lock"
    ref_lock.parent.mkdir(parents=True, exist_ok=True)
    ref_lock.write_text("")
    fd = os.open(ref_lock, os.O_RDONLY)
    try:  # held open by a git of someone else: named held, never removed
        with subprocess.Popen(["git", "hash-object", "--stdin"], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, pass_fds=(fd,)) as keep:
            try:
                res = ao("ao-preserve", "lk", cwd=repo, rc=None, process=True)
            finally:
                keep.communicate(b"")
    finally:
        os.close(fd)
    # This process has it open too (it passed the fd on), and is named with it.
    assert f"{ref_lock} is held by " in res.stdout, res.stdout
    assert f"pid {keep.pid} (git)" in res.stdout, res.stdout
    assert res.returncode != 0 and wt.is_dir() and ref_lock.exists()
    ref_lock.unlink()
    ao("ao-preserve", "lk", cwd=repo)
    assert not wt.exists()


def test_a_lock_a_program_other_than_git_has_open_is_held_never_stale_nor_removed(
        repo, worktrees):
    """A libgit2 or JGit tool (here python) with a lock open holds it: named with its
    pid and name, never called stale, and git-ao's own ref locks stay while it does."""
    from tests.support import held_open, log_text
    wt = worktrees(repo, "lk")
    dirty(wt)
    common = repo / ".git"
    index_lock = common / "worktrees" / "lk" / "index.lock"
    hist = common / "refs" / "ao" / "history" / "lk.lock"
    ref_lock = common / "refs" / "ao" / "preserved" / "lk.lock"
    ref_lock.parent.mkdir(parents=True, exist_ok=True)
    for i, (lock, argv) in enumerate(((index_lock, ("ao-preserve", "lk")),
                                      (ref_lock, ("ao-preserve", "lk")),
                                      (hist, ("ao", "checkpoint", "lk")))):
        (wt / "more.txt").write_text(f"a state not saved yet {i}\n")
        with held_open(lock) as pid:
            res = ao(*argv, cwd=repo, rc=None, process=True)
            assert lock.exists(), (lock, res.stdout)
        assert f"{lock} is held by pid {pid} (python" in res.stdout, res.stdout
        assert "stale" not in res.stdout and wt.is_dir(), res.stdout
        assert "removed-stale-lock" not in log_text()
        lock.unlink()
    ao("ao-preserve", "lk", cwd=repo)
    assert not wt.exists()


def test_an_interrupted_restore_whose_index_lock_a_process_holds_is_not_set_aside(
        repo, worktrees):
    """Setting the worktree aside drops its index.lock: while a process has it open
    the restore is refused and touches nothing; once it is stale the rerun goes on."""
    from git_ao.store import trash
    from tests.support import held_open
    wt, before = _interrupted_after_add(repo, worktrees, "lh")
    lock = repo / ".git" / "worktrees" / "lh" / "index.lock"
    with held_open(lock) as pid:
        res = ao("ao-restore", cwd=repo, rc=1, process=True)
    assert f"{lock} is held by pid {pid} (python" in res.stdout, res.stdout
    assert lock.exists() and wt.is_dir()
    assert not [e for e in trash.entries(os.environ["AO_DATA_DIR"]) if e.stray]
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


def test_a_killed_git_aos_own_ref_lock_is_removed_and_the_rerun_converges(repo, worktrees):
    """A git-ao killed while it wrote a ref under refs/ao/ leaves that ref's lock: no
    process holds it, so the next run removes it (and logs it) and saves the
    session. Any other lock stays the user's: index.lock, a branch's, packed-refs."""
    from git_ao.git import lock as gitlock
    from tests.support import log_text
    wts = {sid: worktrees(repo, sid) for sid in ("one", "two")}
    for wt in wts.values():
        dirty(wt)
    common = repo / ".git"
    stale = common / "refs" / "ao" / "preserved" / "one.lock"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("")
    res = ao("ao-preserve", "--all", cwd=repo)
    assert not stale.exists() and not any(wt.exists() for wt in wts.values()), res.stdout
    assert "removed-stale-lock" in log_text() and str(stale) in log_text()
    # The history ref's lock, on a checkpoint (whose append failure is not fatal).
    ao("ao-restore", "one", cwd=repo)
    hist = common / "refs" / "ao" / "history" / "one.lock"
    hist.write_text("")
    (wts["one"] / "more.txt").write_text("more\n")
    res = ao("ao", "checkpoint", "one", cwd=repo)
    assert not hist.exists() and "not appended" not in res.stdout, res.stdout
    for other in (common / "worktrees" / "one" / "index.lock", common / "packed-refs.lock",
                  common / "refs" / "heads" / "main.lock"):
        other.write_text("")
        message = f"fatal: Unable to create '{other}': File exists."
        assert gitlock.clear_own_stale(message) is None and other.exists()
        assert "is stale" in gitlock.explain(message)
        other.unlink()


def _checkout_set_aside(repo, worktrees, sid, *, extra=None):
    """A restore rebuilding `sid` from its commit killed in its checkout: a saved
    file cut short and, with `extra`, a tracked file written with content the commit
    does not have (an edit) or an ignored file, neither of them what its checkout
    wrote. The rerun
    sets that worktree aside. Returns the stray trash entry."""
    from git_ao.store import trash
    wt, _before = _interrupted_after_add(repo, worktrees, sid)
    (wt / "README.md").write_bytes(b"hel")  # the kill cut the checkout of it short
    if extra:
        (wt / extra).write_text("not from the commit\n")
    ao("ao-restore", cwd=repo, rc=None)
    (entry,) = [e for e in trash.entries(os.environ["AO_DATA_DIR"]) if e.stray]
    assert entry.meta.interrupted_restore and entry.meta.checkout_trees
    return entry


def test_prune_deletes_what_restore_set_aside_from_its_own_interrupted_checkout(
        repo, worktrees):
    entry = _checkout_set_aside(repo, worktrees, "ck")
    # within the grace period it stays, and says so
    res = ao("ao-prune", cwd=repo)
    assert f"kept {entry.path}" in res.stdout and "--expire=now deletes it" in res.stdout
    res = ao("ao-prune", "--expire=now", cwd=repo)
    assert f"deleted {entry.path}" in res.stdout, res.stdout
    assert not os.path.lexists(entry.path)


def test_prune_keeps_a_set_aside_checkout_holding_anything_else_and_names_it(
        repo, worktrees):
    # An edit, and an ignored file too: a fallback restore moves the trash's ignored
    # files in, and the entry may hold the only copy of one.
    for sid, extra in (("cx", "src/app.py"), ("cy", "debug.log")):
        entry = _checkout_set_aside(repo, worktrees, sid, extra=extra)
        res = ao("ao-prune", "--expire=now", cwd=repo)
        line = [ln for ln in res.stdout.splitlines() if entry.path in ln]
        assert line and f"kept {entry.path}" in line[0] and extra in line[0], res.stdout
        assert os.path.exists(os.path.join(entry.worktree, extra))
        shutil.rmtree(entry.path)
        git("worktree", "prune", cwd=repo)


def _orphan_git(cwd):
    """A git waiting on its stdin in `cwd` whose parent has exited (so it is not a
    descendant of this process); returns (its pid, the pipe that ends it)."""
    import subprocess
    sh = subprocess.Popen(["sh", "-c", "exec 3<&0; git hash-object --stdin <&3 >/dev/null 3<&- & echo $!"],
                          cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = int(sh.stdout.readline())
    sh.wait()
    sh.stdout.close()
    return pid, sh.stdin


def test_a_lock_holder_is_a_live_git_of_someone_else_in_that_repository(repo, worktrees):
    """git-ao's own git running in the worktree at the moment of the check never holds
    the lock (this test's process stands for git-ao); a git in a repository nested in
    the worktree works on another repository's files; a git of someone else in the
    worktree may hold it, until it ends."""
    import subprocess

    import psutil

    from git_ao.git import lock as gitlock
    wt = worktrees(repo, "lk")
    lock = repo / ".git" / "worktrees" / "lk" / "index.lock"
    lock.write_text("")
    with subprocess.Popen(["git", "hash-object", "--stdin"], cwd=wt, stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL) as mine:
        try:
            assert gitlock.holders(str(lock), str(wt)) == []
            assert "is stale" in gitlock.describe(str(lock), str(wt))
        finally:
            mine.communicate(b"")
    git("init", "-q", "nested", cwd=wt)
    pid, pipe = _orphan_git(wt / "nested")
    try:
        assert gitlock.holders(str(lock), str(wt)) == []
    finally:
        pipe.close()
    pid, pipe = _orphan_git(wt)
    try:
        assert gitlock.holders(str(lock), str(wt)) == [pid]
    finally:
        pipe.close()
    try:
        psutil.Process(pid).wait(10)
    except psutil.NoSuchProcess:
        pass
    assert gitlock.holders(str(lock), str(wt)) == []


def test_the_admin_dir_a_killed_worktree_add_left_is_removed_by_the_rerun(repo, worktrees):
    import time

    from git_ao.store.database import Store
    wt = worktrees(repo, "k3")
    (wt / "work.txt").write_text("mine\n")
    ao("ao-preserve", "k3", cwd=repo)
    Store(os.environ["AO_DATA_DIR"]).mark_restore_started("k3")  # started, then killed
    time.sleep(0.01)
    common = git("rev-parse", "--git-common-dir", cwd=repo).strip()
    common = os.path.join(repo, common) if not os.path.isabs(common) else common
    left = os.path.join(common, "worktrees", "k3")
    os.makedirs(left)
    with open(os.path.join(left, "locked"), "w") as fh:
        fh.write("initializing\n")  # git's first write; killed before anything else
    foreign = os.path.join(common, "worktrees", "k3other")
    os.makedirs(foreign)
    with open(os.path.join(foreign, "locked"), "w") as fh:
        fh.write("initializing\n")  # not named for this path: left alone
    ao("ao-restore", "k3", cwd=repo)
    assert (wt / "work.txt").read_text() == "mine\n"
    assert (wt / ".git").read_text().strip().endswith("/worktrees/k3")
    assert os.path.isdir(foreign)
