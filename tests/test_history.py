"""A session's history: every checkpoint and preserve appended under
refs/ao/history/<id>, listed by `git ao history`, any entry brought back by
`git ao-restore ID --at`, and the undo of that undone."""

from __future__ import annotations

import json
import os
import threading

from tests.support import ao, dirty, git, log_text
from tests.worktree_state import assert_restored, exact_state

HIST = "refs/ao/history/"


def _entries(cwd, sid):
    return json.loads(ao("ao", "history", sid, "--json", cwd=cwd).stdout)["entries"]


def _read(path):
    with open(path, "rb") as fh:
        return fh.read()


def _session(repo, worktrees, name="agent"):
    wt = worktrees(repo, name)
    dirty(wt)
    return wt


def test_checkpoints_are_kept_newest_first_each_read_by_git_stash_show(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "later.txt").write_text("later\n")
    ao("ao-preserve", "--keep-worktree", "agent", cwd=repo)
    ao("ao", "checkpoint", "--trigger", "hook", cwd=wt)
    (wt / "src" / "app.py").write_text("print('third')\n")
    ao("ao", "checkpoint", "--all", "--trigger", "timer", cwd=repo)
    got = _entries(repo, "agent")
    assert [e["number"] for e in got] == [1, 2, 3]
    assert [e["trigger"] for e in got] == ["timer", "checkpoint", "checkpoint"]
    assert got[1]["untracked"] == got[2]["untracked"] + 1
    for e in got:
        shown = git("stash", "show", "--include-untracked", "--name-only", e["commit"], cwd=repo)
        assert "README.md" in shown
    assert "later.txt" in git("stash", "show", "--include-untracked", "--name-only",
                              got[1]["commit"], cwd=repo)
    plain = ao("ao", "history", "agent", cwd=repo).stdout.splitlines()
    assert len(plain) == 3 and plain[0].split("\t")[:3][2] == "timer"
    assert got[0]["commit"] in plain[0]


def test_an_unchanged_checkpoint_adds_nothing(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    tip = git("rev-parse", HIST + "agent", cwd=repo)
    res = ao("ao", "checkpoint", "agent", cwd=wt)
    assert "holds this state already" in res.stdout
    assert git("rev-parse", HIST + "agent", cwd=repo) == tip
    assert len(_entries(repo, "agent")) == 1


def test_a_clean_worktree_is_an_entry_too(repo, worktrees):
    wt = worktrees(repo, "agent")
    ao("ao", "checkpoint", "agent", cwd=repo)
    ao("ao", "checkpoint", "agent", cwd=repo)
    got = _entries(repo, "agent")
    assert len(got) == 1 and got[0]["changed"] == got[0]["untracked"] == 0
    assert git("stash", "show", got[0]["commit"], cwd=wt) == ""


def test_a_checkpoint_leaves_the_index_alone_and_runs_while_it_is_locked(repo, worktrees):
    wt = _session(repo, worktrees)
    admin = git("rev-parse", "--git-dir", cwd=wt).strip()
    index = os.path.join(admin, "index")
    st, data = os.stat(index), _read(index)
    lock = os.path.join(admin, "index.lock")
    with open(lock, "wb") as fh:
        fh.write(b"another git command holds this")
    before = exact_state(wt)  # ls-files and status never write the index
    ao("ao", "checkpoint", "agent", cwd=repo)
    assert len(_entries(repo, "agent")) == 1
    assert _read(lock) == b"another git command holds this"
    os.unlink(lock)
    after = os.stat(index)
    assert (after.st_mtime_ns, after.st_ino, _read(index)) == (
        st.st_mtime_ns, st.st_ino, data)
    assert exact_state(wt) == before


def test_the_history_survives_shutdown_boot_gc_and_prune(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "more.txt").write_text("more\n")
    before = exact_state(wt)
    ao("ao-preserve", "--all", cwd=repo)
    assert not wt.exists()
    ao("ao-restore", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    ao("ao-prune", cwd=repo)
    got = _entries(repo, "agent")
    assert [e["trigger"] for e in got] == ["preserve", "checkpoint"]
    for e in got:
        git("cat-file", "-e", e["commit"], cwd=repo)
    assert_restored(before, exact_state(wt))


def _destroy(wt):
    """What an agent does to its own work: reset --hard, clean -fd, a file cut short."""
    git("reset", "-q", "--hard", cwd=wt)
    git("clean", "-q", "-fd", cwd=wt)
    (wt / "README.md").write_text("hel")
    (wt / "stray.txt").write_text("the agent's mess\n")


def test_work_destroyed_and_pruned_by_gc_comes_back_exactly_and_the_undo_is_undone(
        repo, worktrees):
    wt = _session(repo, worktrees)
    os.chmod(wt / "src" / "app.py", 0o600)
    (wt / "empty-dir").mkdir()
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    _destroy(wt)
    git("gc", "-q", "--prune=now", cwd=repo)
    wiped = exact_state(wt)
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert "undoes it" in res.stdout, res.stdout
    assert_restored(wanted, exact_state(wt))
    assert (wt / "debug.log").exists()  # ignored: untouched
    got = _entries(repo, "agent")
    assert [e["trigger"] for e in got] == ["restore", "checkpoint"]
    # The undo of the undo: the wiped state comes back, by commit this time.
    ao("ao-restore", "agent", "--at", got[0]["commit"][:10], cwd=repo)
    assert_restored(wiped, exact_state(wt))
    ao("ao-restore", "--at", got[1]["entry"], cwd=wt)
    assert_restored(wanted, exact_state(wt))
    assert ao("ao", "list", "--json", cwd=repo).stdout.count('"live"') == 1


def test_restore_at_an_older_entry_after_the_branch_moved(repo, worktrees):
    wt = worktrees(repo, "agent")
    (wt / "notes.txt").write_text("first\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    (wt / "notes.txt").unlink()
    (wt / "README.md").write_text("committed later\n")
    git("commit", "-qam", "agent commits", cwd=wt)
    (wt / "new.txt").write_text("x\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    later = exact_state(wt)
    ao("ao-restore", "agent", "--at", "2", cwd=repo)
    assert_restored(wanted, exact_state(wt))
    # The state replaced was the newest entry already: nothing was added, and
    # entry 1 is still the later checkpoint.
    assert len(_entries(repo, "agent")) == 2
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert_restored(later, exact_state(wt))


def test_restore_at_refuses_another_branch_and_a_locked_index_in_one_line(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    admin = git("rev-parse", "--git-dir", cwd=wt).strip()
    open(os.path.join(admin, "index.lock"), "w").close()
    before = exact_state(wt)
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1)
    assert "locked" in res.stdout and res.stdout.count("\n") == 1, res.stdout
    os.unlink(os.path.join(admin, "index.lock"))
    git("stash", "-q", "-u", cwd=wt)
    git("switch", "-q", "-c", "elsewhere", cwd=wt)
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1)
    assert "another branch" not in res.stdout and "branch 'elsewhere'" in res.stdout, res.stdout
    assert res.stdout.count("\n") == 1
    git("switch", "-q", "agent", cwd=wt)
    git("stash", "pop", "-q", "--index", cwd=wt)
    assert exact_state(wt)["files"] == before["files"]
    for bad in ("9", "zzzz"):
        res = ao("ao-restore", "agent", "--at", bad, cwd=repo, rc=1)
        assert "git ao history agent" in res.stdout


def test_a_checkpoint_racing_a_preserve_loses_nothing(repo, worktrees):
    wt = _session(repo, worktrees)
    wanted = exact_state(wt)
    errors = []

    def checkpoints():
        for _ in range(5):
            res = ao("ao", "checkpoint", "agent", cwd=repo, rc=None, process=True)
            if res.returncode not in (0, 1):
                errors.append(res)

    t = threading.Thread(target=checkpoints)
    t.start()
    ao("ao-preserve", "agent", cwd=repo, process=True)
    t.join()
    assert not errors
    ao("ao-restore", cwd=repo)
    assert_restored(wanted, exact_state(wt))
    got = _entries(repo, "agent")
    assert "preserve" in [e["trigger"] for e in got]
    # Every entry holds the one state the worktree had: nothing half-written.
    assert len({(e["commit"] and git("rev-parse", e["commit"] + "^{tree}", cwd=repo))
                 for e in got}) == 1
    assert "history-appended" in log_text()
