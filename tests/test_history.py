"""A session's history: every checkpoint and preserve appended under
refs/ao/history/<id>, listed by `git ao history`, any entry brought back by
`git ao-restore ID --at`, and the undo of that undone."""

from __future__ import annotations

import configparser
import contextlib
import json
import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support import add_submodule, ao, dirty, git, log_text
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
    assert "holds this state already" in res.stdout or "unchanged since" in res.stdout
    assert git("rev-parse", HIST + "agent", cwd=repo) == tip
    assert len(_entries(repo, "agent")) == 1


def test_a_clean_worktree_is_an_entry_too(repo, worktrees):
    wt = worktrees(repo, "agent")
    ao("ao", "checkpoint", "agent", cwd=repo)
    ao("ao", "checkpoint", "agent", cwd=repo)
    got = _entries(repo, "agent")
    assert len(got) == 1 and got[0]["changed"] == got[0]["untracked"] == 0
    assert git("stash", "show", got[0]["commit"], cwd=wt) == ""


def test_a_clean_checkpoint_that_adds_an_entry_says_so_and_why(repo, worktrees):
    """Clean against HEAD, yet another state than the newest entry (the first, a
    commit made, a branch switched to, changes reverted): the entry added is said,
    with why, never "nothing to save"."""
    wt = worktrees(repo, "agent")

    def said() -> str:
        out = ao("ao", "checkpoint", "agent", cwd=repo).stdout
        assert "nothing to save" not in out, out
        return out

    first = git("rev-parse", "HEAD", cwd=wt).strip()
    assert f"history entry 1 added for HEAD {first[:12]} on branch 'agent' (the first " \
        "entry of its history)" in said()
    (wt / "README.md").write_text("edited\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    git("checkout", "-q", "--", "README.md", cwd=wt)
    assert "(the entry before held 1 changed, 0 untracked)" in said()
    git("commit", "-q", "--allow-empty", "-m", "moved", cwd=wt)
    assert f"(the entry before was taken at {first[:12]})" in said()
    git("switch", "-q", "-c", "other", cwd=wt)
    assert "on branch 'other' (the entry before was taken on branch 'agent')" in said()
    assert len(_entries(repo, "agent")) == 5
    out = ao("ao", "checkpoint", "agent", cwd=repo).stdout
    # (either way of saying so: "nothing added" by the stat file, or "holds this
    # state already" by a capture, when the stat file is too new to trust)
    assert " added for HEAD" not in out and len(_entries(repo, "agent")) == 5, out


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


@pytest.mark.parametrize("where", ["branch-deleted", "detached", "checked-out-elsewhere"])
def test_restore_at_on_another_head_names_the_switch_that_works(repo, worktrees, where):
    """The refusal of a HEAD on another branch than the entry's names a command that
    works as things are: a deleted branch made again at the entry's HEAD, a
    detached entry's HEAD detached, a branch another worktree has freed first."""
    wt = _session(repo, worktrees)
    (wt / "notes.txt").write_text("the agent's notes\n")
    entry_head = git("rev-parse", "HEAD", cwd=wt).strip()
    if where == "detached":
        git("switch", "-q", "--detach", cwd=wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    git("stash", "-q", "-u", cwd=wt)
    git("switch", "-q", "-c", "other", cwd=wt)
    if where == "branch-deleted":
        git("branch", "-q", "-D", "agent", cwd=wt)
    elif where == "checked-out-elsewhere":
        git("worktree", "add", "-q", wt.parent / "holder", "agent", cwd=repo)
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1)
    said = res.stdout
    assert res.stdout.count("\n") == 1 and "git switch back" not in said, said
    if where == "branch-deleted":
        assert f"branch 'agent' is gone: git switch -c agent {entry_head[:12]}" in said, said
        git("switch", "-q", "-c", "agent", entry_head[:12], cwd=wt)
    elif where == "detached":
        assert f"git switch --detach {entry_head[:12]}, then" in said, said
        git("switch", "-q", "--detach", entry_head[:12], cwd=wt)
    else:
        assert f"branch 'agent' is checked out in {wt.parent / 'holder'}" in said, said
        git("switch", "-q", "--detach", cwd=wt.parent / "holder")
        git("switch", "-q", "agent", cwd=wt)
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert_restored(wanted, exact_state(wt))


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

    # The checkpoint's own git processes work in the worktree: report them, do not
    # refuse (a shutdown's --all would stop them, which only fails that checkpoint).
    ao("ao", "config", "set", "preserve.agents", "report", cwd=repo)
    t = threading.Thread(target=checkpoints)
    t.start()
    ao("ao-preserve", "agent", cwd=repo, process=True)
    t.join()
    assert not errors
    ao("ao-restore", cwd=repo)
    assert_restored(wanted, exact_state(wt))
    got = _entries(repo, "agent")
    assert got  # the first of them (a checkpoint or the preserve) appended the state
    # Every entry holds the one state the worktree had: nothing half-written.
    assert len({(e["commit"] and git("rev-parse", e["commit"] + "^{tree}", cwd=repo))
                 for e in got}) == 1
    assert "history-appended" in log_text()


def _three_entries(repo, worktrees):
    wt = _session(repo, worktrees)
    for i in range(3):
        (wt / "n.txt").write_text(f"{i}\n")
        ao("ao", "checkpoint", "agent", cwd=repo)
    return wt


def test_retention_keeps_the_newest_entries_and_never_the_newest_alone_lost(repo, worktrees):
    _three_entries(repo, worktrees)
    whole = _entries(repo, "agent")
    ao("ao-prune", cwd=repo)
    assert len(_entries(repo, "agent")) == 3  # no retention set: all kept
    ao("ao", "config", "set", "history.keep", "2", cwd=repo)
    res = ao("ao-prune", "-n", cwd=repo)
    tip = git("rev-parse", "refs/ao/history/agent", cwd=repo).strip()
    # The dry run names the tip it would drop from, as the real run names it.
    dry = next(ln for ln in res.stdout.splitlines() if ln.startswith("prune-history\t"))
    assert dry.endswith(f"would drop 1 of the 3 entries of refs/ao/history/agent, kept 2 "
                        f"(was {tip})"), dry
    assert len(_entries(repo, "agent")) == 3
    res = ao("ao-prune", cwd=repo)
    assert dry.replace("would drop", "dropped") in res.stdout, res.stdout
    got = _entries(repo, "agent")
    assert [e["commit"] for e in got] == [e["commit"] for e in whole[:2]]
    assert [e["time_ns"] for e in got] == [e["time_ns"] for e in whole[:2]]
    git("gc", "-q", "--prune=now", cwd=repo)
    for e in got:
        git("stash", "show", e["commit"], cwd=repo)
    ao("ao", "config", "unset", "history.keep", cwd=repo)
    ao("ao", "config", "set", "history.maxAge", "now", cwd=repo)
    ao("ao-prune", cwd=repo)
    assert [e["commit"] for e in _entries(repo, "agent")] == [whole[0]["commit"]]
    ao("ao", "config", "set", "history.maxAge", "30.days.ago", cwd=repo)
    ao("ao-prune", cwd=repo)
    assert len(_entries(repo, "agent")) == 1
    res = ao("ao", "config", "set", "history.keep", "0", cwd=repo, rc=None)
    assert res.returncode != 0


def test_show_reports_the_history_length_and_size(repo, worktrees):
    _three_entries(repo, worktrees)
    out = ao("ao", "show", "agent", cwd=repo).stdout
    assert "3 entries" in out
    doc = json.loads(ao("ao", "show", "agent", "--json", cwd=repo).stdout)
    assert doc["session"]["history"]["entries"] == 3
    assert doc["session"]["history"]["bytes"] > 0


def test_prune_force_deletes_the_history_too(repo, worktrees):
    _three_entries(repo, worktrees)
    time.sleep(0.1)
    ao("ao", "checkpoint", "agent", cwd=repo)  # leaves the stat file of the quick path
    stat_file = os.path.join(os.environ["AO_DATA_DIR"], "history-stat", "agent")
    assert os.path.exists(stat_file)
    res = ao("ao-prune", "--force", "agent", cwd=repo)
    assert not os.path.exists(stat_file)
    assert HIST + "agent" in res.stdout
    assert git("for-each-ref", HIST, cwd=repo) == ""


CONTRIB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "contrib")


def _hook(payload, cwd):
    return subprocess.run(["git", "ao", "checkpoint", "--hook-input", "--trigger", "hook"],
                          cwd=cwd, input=payload, capture_output=True, text=True, check=False)


def test_the_hook_form_exits_non_zero_when_the_checkpoint_is_refused(repo, worktrees, tmp_path):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    # An unborn branch: the checkpoint is refused, and the hook's status says so.
    git("checkout", "-q", "--orphan", "fresh", cwd=wt)
    (wt / "more.txt").write_text("more\n")
    res = _hook(json.dumps({"hook_event_name": "Stop", "cwd": str(wt)}), tmp_path)
    assert res.returncode == 1 and "refused" in res.stdout, res
    assert res.returncode != 2  # Claude Code would block the turn


@pytest.mark.parametrize("how", ["rebase", "unmerged paths", "bisect"])
def test_a_checkpoint_mid_rebase_or_of_unmerged_paths_is_skipped_not_failed(
        repo, worktrees, tmp_path, how):
    """A state the user works through on purpose, which no entry can hold (the
    conflict stages, the operation's files): the timer's and the hooks'
    checkpoints say they saved nothing (status nothing, exit 0), not a failure
    every five minutes; once it is over, the next one saves."""
    wt = worktrees(repo, "agent")
    admin = repo / ".git" / "worktrees" / "agent"
    if how == "bisect":
        git("bisect", "start", cwd=wt)
    else:
        (wt / "README.md").write_text("mine\n")
        git("commit", "-qam", "mine", cwd=wt)
        (repo / "README.md").write_text("theirs\n")
        git("commit", "-qam", "theirs", cwd=repo)
        git("rebase" if how == "rebase" else "merge", "main", cwd=wt, check=False)
        if how == "unmerged paths":  # the merge's own files gone: only the stages are left
            for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"):
                (admin / name).unlink(missing_ok=True)
    (wt / "notes.txt").write_text("the agent's notes\n")
    before = len(_entries(repo, "agent")) if git(
        "for-each-ref", HIST + "agent", cwd=repo) else 0
    what = {"rebase": "a rebase in progress", "bisect": "a bisect in progress"}.get(how, how)
    res = ao("ao", "checkpoint", "--all", "--trigger", "timer", "-q", cwd=repo)
    assert res.stdout == "" and res.stderr == ""
    res = _hook(json.dumps({"hook_event_name": "Stop", "cwd": str(wt)}), tmp_path)
    assert res.returncode == 0 and "checkpoint\tnothing\tagent\tskipped, nothing saved: " \
        f"{what} in '{wt}'" in res.stdout, res
    [r] = json.loads(ao("ao", "checkpoint", "agent", "--json", cwd=repo).stdout)["results"]
    assert (r["status"], r["in_progress"]) == ("nothing", what), r
    assert "the first checkpoint after it is finished or aborted saves" in r["message"]
    assert not git("for-each-ref", HIST + "agent", cwd=repo) or \
        len(_entries(repo, "agent")) == before
    assert "skipped-in-progress" in log_text()
    # a preserve, which would take the worktree away, still refuses it
    res = ao("ao-preserve", "agent", "--keep-worktree", cwd=repo, rc=1)
    assert "refused" in res.stdout
    if how == "bisect":
        git("bisect", "reset", cwd=wt)
    elif how == "rebase":
        git("rebase", "--abort", cwd=wt)
    else:
        git("add", "README.md", cwd=wt)
    ao("ao", "checkpoint", "--all", "--trigger", "timer", "-q", cwd=repo)
    entries = _entries(repo, "agent")
    assert entries[0]["trigger"] == "timer"
    assert git("show", f"{entries[0]['commit']}^3:notes.txt", cwd=repo) == "the agent's notes\n"


_OPERATIONS = {
    "rebase": ("a rebase", "git rebase --abort"),
    "merge": ("a merge", "git merge --abort"),
    "cherry-pick": ("a cherry-pick", "git cherry-pick --abort"),
    "revert": ("a revert", "git revert --abort"),
    "am": ("an am", "git am --abort"),
    "bisect": ("a bisect", "git bisect reset"),
}


@pytest.mark.parametrize("how", sorted(_OPERATIONS))
def test_restore_at_during_an_operation_names_it_and_what_ends_it(repo, worktrees, how):
    """--at in the middle of a rebase (HEAD detached), a merge, a cherry-pick, a revert,
    an am or a bisect says which is in progress and how to end it, as a checkpoint
    and a preserve do, never a switch git refuses then; once it is over, --at runs."""
    wt = worktrees(repo, "agent")
    (wt / "README.md").write_text("mine\n")
    git("commit", "-qam", "mine", cwd=wt)
    (wt / "README.md").write_text("mine again\n")
    git("commit", "-qam", "mine again", cwd=wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (repo / "README.md").write_text("theirs\n")
    git("commit", "-qam", "theirs", cwd=repo)
    if how == "rebase":
        git("-c", "sequence.editor=sed -i 1s/pick/edit/", "rebase", "-q", "-i", "HEAD~2", cwd=wt)
    elif how == "am":
        patch = git("format-patch", "-1", "--stdout", "main", cwd=repo) + "\n"
        git("am", "-q", cwd=wt, input=patch.encode(), check=False)
    elif how == "bisect":
        git("bisect", "start", "HEAD", "HEAD~2", cwd=wt)
    else:
        what = {"merge": ["merge", "main"], "cherry-pick": ["cherry-pick", "main"],
                "revert": ["revert", "--no-edit", "HEAD~1"]}[how]
        git(*what, cwd=wt, check=False)
    what, abort = _OPERATIONS[how]
    for extra in (["-n"], []):
        res = ao("ao-restore", "agent", "--at", "1", *extra, cwd=repo, rc=1)
        assert f"{what} is in progress in '{wt}'; finish it or abort it ({abort}" in res.stdout \
            and "then run it again (nothing changed)" in res.stdout, res.stdout
        assert "git switch" not in res.stdout, res.stdout
    res = ao("ao-preserve", "agent", cwd=repo, rc=1)
    assert f"{what} is in progress" in res.stdout and abort in res.stdout, res.stdout
    git(*abort.split()[1:], cwd=wt)
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert "\tok\t" in res.stdout or "\tnothing\t" in res.stdout, res.stdout


def test_the_claude_code_hook_checkpoints_the_worktree_its_json_names(repo, worktrees, tmp_path):
    wt = _session(repo, worktrees)
    with open(os.path.join(CONTRIB, "claude-code-hooks.json")) as fh:
        hooks = json.load(fh)["hooks"]
    commands = {h["command"] for event in ("Stop", "PostToolUse") for m in hooks[event]
                for h in m["hooks"]}
    assert commands == {"git ao checkpoint --hook-input --trigger hook -q"}
    payload = json.dumps({"session_id": "abc", "hook_event_name": "Stop", "cwd": str(wt / "src"),
                          "transcript_path": "/dev/null", "stop_hook_active": False})
    res = _hook(payload, tmp_path)
    assert res.returncode == 0, res.stderr
    assert [e["trigger"] for e in _entries(repo, "agent")] == ["hook"]
    # Never a failed turn: not JSON, or a directory in no worktree.
    for bad in ("not json", json.dumps({"cwd": str(tmp_path)})):
        res = _hook(bad, tmp_path)
        assert res.returncode == 0, res.stderr
    assert len(_entries(repo, "agent")) == 1


def test_hook_input_that_names_no_directory_is_nothing_to_do_even_inside_a_worktree(
        repo, worktrees):
    wt = _session(repo, worktrees)
    (wt / "work.txt").write_text("work\n")
    for bad in ("not json", "[1, 2]", '"a string"', json.dumps({"cwd": 5}),
                json.dumps({"cwd": ""}), json.dumps({"cwd": None}), "[" * 100_000,
                '{"a": ' * 100_000):
        res = _hook(bad, wt)
        assert res.returncode == 0 and "nothing to do" in res.stdout, (bad, res)
    assert _entries(repo, "agent") == []
    # No input, or an object without "cwd": the hook runs where the agent works.
    for none in ("", json.dumps({"hook_event_name": "Stop"})):
        res = _hook(none, wt)
        assert res.returncode == 0, res
    assert [e["trigger"] for e in _entries(repo, "agent")] == ["hook"]


def test_the_timer_units_run_a_timer_checkpoint_of_every_session(repo, worktrees):
    wt = _session(repo, worktrees)
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.read(os.path.join(CONTRIB, "git-ao-checkpoint.service"))
    argv = shlex.split(cp["Service"]["ExecStart"])
    assert argv == ["git", "ao", "checkpoint", "--all", "--trigger", "timer", "-q"]
    tm = configparser.ConfigParser(strict=False, interpolation=None)
    tm.read(os.path.join(CONTRIB, "git-ao-checkpoint.timer"))
    assert tm["Timer"]["OnUnitActiveSec"] == "5min"
    with open(os.path.join(CONTRIB, "dev.git-ao.checkpoint.plist"), "rb") as fh:
        plist = plistlib.load(fh)
    assert plist["ProgramArguments"] == argv and plist["StartInterval"] == 300
    res = subprocess.run(argv, cwd="/", capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stdout == "", res
    assert [e["trigger"] for e in _entries(repo, "agent")] == ["timer"]
    assert wt.exists()
    if shutil.which("systemd-analyze"):
        res = subprocess.run(["systemd-analyze", "verify", "--man=no",
                              os.path.join(CONTRIB, "git-ao-checkpoint.timer"),
                              os.path.join(CONTRIB, "git-ao-checkpoint.service")],
                             capture_output=True, text=True, timeout=60, check=False)
        assert "git-ao-checkpoint" not in res.stderr, res.stderr


def test_pushing_the_session_pushes_its_history(repo, worktrees, tmp_path):
    plain = tmp_path / "plain.git"
    git("init", "-q", "--bare", plain, cwd=tmp_path)
    git("remote", "add", "plain", plain, cwd=repo)
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "more.txt").write_text("more\n")
    ao("ao-preserve", "agent", "--push", "plain", cwd=repo)
    local = git("rev-parse", HIST + "agent", cwd=repo)
    assert git("rev-parse", HIST + "agent", cwd=plain) == local
    saves = [e["commit"] for e in _entries(repo, "agent")]
    assert len(saves) == 2
    for c in saves:  # every save and all it needs is there (rev-list fails on a missing one)
        git("rev-list", "--objects", c, cwd=plain)


def _checkpoint_json(repo):
    res = ao("ao", "checkpoint", "agent", "--json", cwd=repo)
    return json.loads(res.stdout)["results"][0]


def _each_change_is_seen(repo, changes):
    """After each of `changes`, a checkpoint is a full one (not answered unchanged),
    and once the stat file is written again the next is answered unchanged."""
    for n, change in enumerate(changes):
        change()
        assert "unchanged" not in _checkpoint_json(repo), n  # seen, a full checkpoint
        time.sleep(0.1)
        _checkpoint_json(repo)  # records the stat file again
        assert _checkpoint_json(repo).get("unchanged") is True, n


def test_an_unchanged_checkpoint_is_proven_from_stat_data_and_every_change_is_seen(
        repo, worktrees):
    wt = _session(repo, worktrees)
    time.sleep(0.1)  # out of the racy window: the stat file is written
    assert "unchanged" not in _checkpoint_json(repo)
    assert _checkpoint_json(repo).get("unchanged") is True
    (wt / "build" / "more.o").write_bytes(b"ignored")  # inside an ignored directory
    assert _checkpoint_json(repo).get("unchanged") is True
    changes = [
        lambda: (wt / "src" / "app.py").write_text("print('CHANGED')\n"),  # same size
        lambda: (wt / "new dir" / "deep" / "another.txt").write_text("untracked\n"),
        lambda: git("add", "src/app.py", cwd=wt),
        lambda: os.chmod(wt / "README.md", 0o600),
        lambda: (wt / "empty").mkdir(),
        lambda: git("commit", "-qm", "agent commits", cwd=wt),
        lambda: (wt / "notes.log").write_text("ignored\n"),  # an ignored file: its dir changed
    ]
    _each_change_is_seen(repo, changes)
    got = _entries(repo, "agent")
    assert len(got) == 1 + len(changes) - 1  # the ignored file changed no state
    wanted = exact_state(wt)
    _destroy(wt)
    assert "unchanged" not in _checkpoint_json(repo)
    ao("ao-restore", "agent", "--at", "2", cwd=repo)
    assert_restored(wanted, exact_state(wt))


def _stat_doc(sid="agent"):
    import marshal
    with open(os.path.join(os.environ["AO_DATA_DIR"], "history-stat", sid), "rb") as fh:
        return marshal.load(fh)


def _kept_index(sid="agent"):
    return Path(os.environ["AO_DATA_DIR"]) / "history-index" / sid


def test_the_tracked_files_are_compared_by_git_against_the_checkpoints_index(repo, worktrees):
    """The stat file leaves the tracked files to `git diff-files` on W's index, kept
    beside it; git compares ctime whatever the repository's config says, so a
    chmod, or a rewrite whose mtime was set back, is still a change."""
    wt = _session(repo, worktrees)
    git("config", "core.trustctime", "false", cwd=wt)
    git("config", "core.checkStat", "minimal", cwd=wt)
    time.sleep(1.1)  # files written in the walk's second are compared here (below)
    ao("ao", "checkpoint", "agent", cwd=repo)
    assert _checkpoint_json(repo).get("unchanged") is True
    names = _stat_doc()["names"].split(b"\0")
    assert b"README.md" not in names and b"src/app.py" not in names and b"src" in names
    assert b"bin.dat" in names  # untracked: compared by its stat data here
    assert _kept_index().is_file()

    def set_back(rel, text):
        st = os.stat(wt / rel)
        (wt / rel).write_text(text)
        os.utime(wt / rel, ns=(st.st_atime_ns, st.st_mtime_ns))

    changes = [lambda: os.chmod(wt / "README.md", 0o600),
               lambda: set_back("src/app.py", "print('SET BACK')\n"),
               lambda: (wt / "README.md").unlink(),
               lambda: os.symlink("elsewhere", wt / "README.md"),
               lambda: set_back("bin.dat", "x" * 300)]
    _each_change_is_seen(repo, changes)


def test_the_quick_checks_git_diff_files_is_traced_with_v(repo, worktrees):
    wt = worktrees(repo, "agent")
    time.sleep(1.1)
    ao("ao", "checkpoint", "agent", cwd=repo)
    assert _kept_index().is_file()
    res = ao("ao", "checkpoint", "agent", "-v", cwd=repo)
    assert "unchanged since" in res.stdout, res.stdout
    assert "diff-files --quiet" in res.stderr, res.stderr
    del wt


def _signed_now(wt):
    """The walk's signatures of `wt` as a checkpoint takes them, and the git dir."""
    from git_ao.fs import walk
    from git_ao.save import unchanged
    untracked = [p for p in git("ls-files", "-z", "--others", "--exclude-standard",
                                cwd=wt).split("\0") if p]
    ignored = [p for p in git("ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                              "--directory", cwd=wt).split("\0") if p]
    signed = unchanged.signatures(str(wt), walk.walk(str(wt)), ignored, untracked)
    assert signed is not None
    return signed, git("rev-parse", "--absolute-git-dir", cwd=wt).strip()


def _refreshed_index(wt, git_dir):
    """The bytes of a copy of the index whose stat data git refreshed, as the
    checkpoint's status refreshes its own copy."""
    copy = wt.parent / "refreshed-index"
    shutil.copy(os.path.join(git_dir, "index"), copy)
    git("update-index", "-q", "--refresh", cwd=wt, env={"GIT_INDEX_FILE": str(copy)})
    return copy.read_bytes()


def _record(wt, signed, git_dir, index):
    from git_ao.git import query
    from git_ao.save import unchanged
    common = os.path.dirname(os.path.dirname(git_dir))
    conf = query.config_map(str(wt))
    return unchanged.record(os.environ["AO_DATA_DIR"], "agent", str(wt), git_dir, common,
                            "agent", signed, conf, unchanged.delegate(signed, index, conf))


def test_git_is_left_only_the_files_whose_stat_data_it_holds_from_an_earlier_second(
        repo, worktrees):
    """git compares times to the second: a file written in the second the walk
    began, or whose stat data in the index is not the walk's (it changed after the
    walk read it), is compared by this process, which sees the nanoseconds."""
    from git_ao.save import unchanged
    wt = worktrees(repo, "agent")
    (wt / "notes.txt").write_text("untracked\n")
    time.sleep(1.1)
    time.sleep(1 - time.time() % 1 + 0.05)  # early in a second
    (wt / "src" / "app.py").write_text("print('staged in this second')\n")
    git("add", "src/app.py", cwd=wt)
    time.sleep(0.06)  # out of the racy window, in the same second
    signed, git_dir = _signed_now(wt)
    assert "src/app.py" in signed.tracked and "notes.txt" in signed.names
    os.chmod(wt / "README.md", 0o600)  # after the walk read it
    assert _record(wt, signed, git_dir, _refreshed_index(wt, git_dir))
    names = _stat_doc()["names"].split(b"\0")
    assert b"README.md" in names and b"src/app.py" in names and b"notes.txt" in names
    assert b"run.sh" not in names and _kept_index().is_file()
    data = os.environ["AO_DATA_DIR"]
    assert not unchanged.unchanged(data, "agent", str(wt))  # README changed since the walk
    os.chmod(wt / "README.md", 0o644)
    time.sleep(1.1)
    signed, git_dir = _signed_now(wt)
    assert _record(wt, signed, git_dir, _refreshed_index(wt, git_dir))
    assert unchanged.unchanged(data, "agent", str(wt))
    st = os.stat(wt / "run.sh")
    (wt / "run.sh").write_text((wt / "run.sh").read_text().upper())  # same size
    os.utime(wt / "run.sh", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not unchanged.unchanged(data, "agent", str(wt))  # git saw the ctime


def test_an_index_flag_or_an_index_it_cannot_read_keeps_no_index(repo, worktrees):
    """Files an assume-unchanged bit hides from git, or an index this process cannot
    read: it compares every path itself."""
    from git_ao.save import unchanged
    wt = worktrees(repo, "agent")
    (wt / "notes.txt").write_text("untracked\n")
    git("update-index", "--assume-unchanged", "README.md", cwd=wt)
    time.sleep(1.1)
    ao("ao", "checkpoint", "agent", cwd=repo)
    assert _checkpoint_json(repo).get("unchanged") is True
    assert "index" not in _stat_doc() and not _kept_index().exists()
    assert b"README.md" in _stat_doc()["names"].split(b"\0")
    (wt / "README.md").write_text("changed under the bit\n")
    assert "unchanged" not in _checkpoint_json(repo)
    git("update-index", "--no-assume-unchanged", "README.md", cwd=wt)
    git("checkout", "--", "README.md", cwd=wt)  # the index and the worktree agree again
    time.sleep(1.1)
    signed, git_dir = _signed_now(wt)
    index = _read(os.path.join(git_dir, "index"))
    for unreadable in (index[:100], b"DIRC" + (9).to_bytes(4, "big") + index[8:]):
        assert _record(wt, signed, git_dir, unreadable)
        assert "index" not in _stat_doc() and not _kept_index().exists()
        assert b"README.md" in _stat_doc()["names"].split(b"\0")
    assert _record(wt, signed, git_dir, index)
    assert "index" in _stat_doc() and _kept_index().exists()
    assert b"README.md" not in _stat_doc()["names"].split(b"\0")
    assert unchanged.unchanged(os.environ["AO_DATA_DIR"], "agent", str(wt))
    # A walk that found no tracked file (an index of gitlinks alone): nothing to leave.
    nothing = unchanged.Signed(signed.names, signed.sigs, [], b"", signed.started)
    assert unchanged.delegate(nothing, index, {}) is None


def test_the_stat_comparison_shared_among_processes_sees_a_change_in_any_share(
        repo, worktrees, monkeypatch):
    from git_ao.save import unchanged
    wt = _session(repo, worktrees)
    for i in range(40):
        (wt / f"many{i:02}.txt").write_text(f"{i}\n")
    time.sleep(0.1)
    ao("ao", "checkpoint", "agent", cwd=repo)
    assert _checkpoint_json(repo).get("unchanged") is True
    data = os.environ["AO_DATA_DIR"]
    monkeypatch.setattr(unchanged, "_SPLIT_FROM", 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)  # four shares: three in children
    assert unchanged.unchanged(data, "agent", str(wt))
    with monkeypatch.context() as m:  # no fork: this process compares every share
        m.setattr(os, "fork", lambda: (_ for _ in ()).throw(OSError(11, "no fork")))
        assert unchanged.unchanged(data, "agent", str(wt))
    stat_file = os.path.join(data, "history-stat", "agent")
    with open(stat_file, "rb") as fh:
        kept = fh.read()
    import marshal
    doc = marshal.loads(kept)
    for sigs in (doc["sigs"][:-3], b"", doc["sigs"][:-8]):  # torn, empty, one short
        with open(stat_file, "wb") as fh:
            fh.write(marshal.dumps(dict(doc, sigs=sigs)))
        assert not unchanged.unchanged(data, "agent", str(wt))
    with open(stat_file, "wb") as fh:
        fh.write(kept)
    assert unchanged.unchanged(data, "agent", str(wt))
    for name in ("many00.txt", "many20.txt", "many39.txt"):  # first, middle, last share
        st = os.stat(wt / name)
        (wt / name).write_text("X\n")  # same size, new times
        assert not unchanged.unchanged(data, "agent", str(wt)), name
        (wt / name).unlink()
        assert not unchanged.unchanged(data, "agent", str(wt)), name
        (wt / name).write_text("Y\n")
        os.utime(wt / name, ns=(st.st_atime_ns, st.st_mtime_ns))  # ctime still tells
        assert not unchanged.unchanged(data, "agent", str(wt)), name


def test_a_change_the_stat_data_cannot_see_is_saved_once_the_stat_file_is_old(
        repo, worktrees):
    # A write through a shared mapping into a dirty page sets no file time: here
    # the stat file is made to hold the changed file's stat data, as such a write
    # leaves it. The proof holds for TRUSTED_NS only; then the worktree is read.
    import marshal

    from git_ao.save import unchanged
    wt = _session(repo, worktrees)
    (wt / "mapped.bin").write_bytes(b"BBBB")
    time.sleep(0.1)
    ao("ao", "checkpoint", "agent", cwd=repo)
    assert _checkpoint_json(repo).get("unchanged") is True
    (wt / "mapped.bin").write_bytes(b"CCCC")
    stat_file = os.path.join(os.environ["AO_DATA_DIR"], "history-stat", "agent")
    with open(stat_file, "rb") as fh:
        doc = marshal.load(fh)
    names = doc["names"].split(b"\0")
    sigs = memoryview(doc["sigs"]).cast("q").tolist()
    k = names.index(b"mapped.bin")
    st = os.lstat(wt / "mapped.bin")
    sigs[4 * k:4 * k + 4] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    for age in (0, unchanged.TRUSTED_NS + 1):
        from array import array
        doc = dict(doc, sigs=array("q", sigs).tobytes(), at=time.time_ns() - age)
        with open(stat_file, "wb") as fh:
            fh.write(marshal.dumps(doc))
        got = _checkpoint_json(repo)
        assert bool(got.get("unchanged")) is (age == 0), (age, got)
    entries = _entries(repo, "agent")
    newest = git("show", f"{entries[0]['commit']}^3:mapped.bin", cwd=repo)
    assert newest == "CCCC" and len(entries) == 2


def test_the_quick_entry_point_answers_an_unchanged_checkpoint_and_passes_changes_on(
        repo, worktrees):
    wt = _session(repo, worktrees)
    time.sleep(0.1)
    ao("ao", "checkpoint", "agent", cwd=repo)
    log = log_text()
    payload = json.dumps({"hook_event_name": "Stop", "cwd": str(wt / "src")})
    for argv in (["agent", "-q"], ["-q", "--trigger", "timer"], ["--hook-input", "-q"]):
        res = subprocess.run(["git", "ao", "checkpoint", *argv], cwd=wt, input=payload,
                             capture_output=True, text=True, check=False)
        assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), (argv, res)
    assert log_text() == log  # answered before anything ran: nothing logged
    assert len(_entries(repo, "agent")) == 1
    (wt / "src" / "app.py").write_text("print('CHANGED')\n")
    res = subprocess.run(["git", "ao", "checkpoint", "--hook-input", "--trigger", "hook", "-q"],
                         cwd="/", input=payload, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res
    got = _entries(repo, "agent")
    assert [e["trigger"] for e in got] == ["hook", "checkpoint"]
    # Whatever the quick path does not know goes to the full command line.
    res = subprocess.run(["git", "ao", "checkpoint", "agent", "-q", "--bogus"], cwd=wt,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 129 and "bogus" in res.stderr


def test_a_checkpoint_with_something_to_save_compares_the_stat_data_once(repo, worktrees):
    # The entry point's quick check found the change; the checkpoint it then runs
    # does not stat every path again for the same answer.
    wt = _session(repo, worktrees)
    time.sleep(0.1)
    ao("ao", "checkpoint", "agent", cwd=repo)
    assert _checkpoint_json(repo).get("unchanged") is True
    (wt / "src" / "app.py").write_text("print('CHANGED')\n")
    script = ("import atexit, sys\n"
              "from git_ao.save import unchanged\n"
              "calls = []\n"
              "real = unchanged._same_shared\n"
              "unchanged._same_shared = lambda *a: calls.append(1) or real(*a)\n"
              "atexit.register(lambda: sys.stderr.write(f'compared {len(calls)}\\n'))\n"
              "sys.argv = ['git-ao', 'checkpoint', 'agent', '-q']\n"
              "from git_ao.cli.entry import ao\n"
              "ao()\n")
    res = subprocess.run([sys.executable, "-c", script], cwd=wt, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res
    assert "compared 1\n" in res.stderr, res.stderr
    assert [e["trigger"] for e in _entries(repo, "agent")] == ["checkpoint", "checkpoint"]


@pytest.mark.parametrize("lossy", ["crlf", "filemode"])
def test_a_file_that_would_not_come_back_byte_for_byte_leaves_the_rest_checkpointed(
        repo, worktrees, lossy):
    # One such file refuses a preserve (it keeps the worktree); a checkpoint saves
    # the rest of the work with it as git checks it out, and names it.
    wt = worktrees(repo, "agent")

    def lossy_file():
        if lossy == "crlf":
            (wt / "fixture.txt").write_bytes(b"line\r\n")
        else:
            (wt / "fixture.txt").write_text("#!/bin/sh\n")
            os.chmod(wt / "fixture.txt", 0o755)

    if lossy == "crlf":
        (wt / ".gitattributes").write_text("* text=auto\n")
    else:
        git("config", "core.fileMode", "false", cwd=wt)
    lossy_file()
    (wt / "README.md").write_text("important edit\n")
    (wt / "module.py").write_text("new module\n")
    res = ao("ao", "checkpoint", "agent", "--json", cwd=repo)
    got = json.loads(res.stdout)["results"][0]
    assert got["status"] == "ok" and got["inexact"] == ["fixture.txt"], got
    assert "fixture.txt" in got["warning"] and "not byte for byte" in got["warning"]
    _destroy(wt)
    git("clean", "-q", "-fdx", cwd=wt)
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert (wt / "README.md").read_text() == "important edit\n"
    assert (wt / "module.py").read_text() == "new module\n"
    assert (wt / "fixture.txt").exists()
    lossy_file()
    ao("ao-preserve", "agent", cwd=repo, rc=1)  # the worktree stays: nothing is lost
    assert wt.is_dir()


@pytest.mark.parametrize("way", ["untracked", "tracked", "tracked, smudge works",
                                 "tracked, assume-unchanged", "tracked, unmodified"])
def test_a_required_filter_that_fails_on_one_file_leaves_the_rest_checkpointed(
        repo, worktrees, way):
    # A `required` filter whose clean command fails stops git update-index and git
    # add at that file ("fatal: f.dat: clean filter 'broken' failed"), and with no
    # smudge command git checkout-index too, even of a file not modified: every
    # checkpoint failed. A checkpoint now saves the rest and names the file; a
    # preserve keeps the worktree and says why, as its dry run does; --at, which
    # must record the state it replaces whole, refuses before anything changes.
    wt = worktrees(repo, "agent")
    tracked = way.startswith("tracked")
    mine = "committed\n" if way.endswith("unmodified") else "the agent's\n"
    if tracked:
        (wt / "f.dat").write_text("committed\n")
        git("add", "f.dat", cwd=wt)
        git("commit", "-q", "-m", "f.dat", cwd=wt)
        if way.endswith("assume-unchanged"):
            git("update-index", "--assume-unchanged", "f.dat", cwd=wt)
    git("config", "filter.broken.clean", "false", cwd=wt)
    git("config", "filter.broken.required", "true", cwd=wt)
    if way.endswith("smudge works"):
        git("config", "filter.broken.smudge", "cat", cwd=wt)
    (wt / ".gitattributes").write_text("*.dat filter=broken\n")
    (wt / "f.dat").write_text(mine)
    (wt / "README.md").write_text("important edit\n")
    (wt / "module.py").write_text("new module\n")
    got = json.loads(ao("ao", "checkpoint", "agent", "--json", cwd=repo).stdout)["results"][0]
    assert got["status"] == "ok" and got["filter_failed"] == ["f.dat"], got
    assert "required filter (broken) failed on" in got["warning"] and "f.dat" in got["warning"]
    save = got["preserved_commit"]
    assert git("show", f"{save}:README.md", cwd=repo) == "important edit\n"
    untracked = git("ls-tree", "-r", "--name-only", f"{save}^3", cwd=repo).split()
    assert untracked == [".gitattributes", "module.py"], untracked
    if tracked:  # as the index holds it
        assert git("cat-file", "blob", f"{save}:f.dat", cwd=repo) == "committed\n"
    res = ao("ao-preserve", "agent", "--keep-worktree", cwd=repo)
    assert "required filter (broken) failed on" in res.stdout, res.stdout
    dry = ao("ao-preserve", "agent", "-n", cwd=repo, rc=1).stdout
    real = ao("ao-preserve", "agent", cwd=repo, rc=1).stdout
    reason = f"{wt / 'f.dat'}: the required filter 'broken' failed on it"
    assert reason in real and dry.split("keep the worktree: ", 1)[1] == \
        real.split("worktree kept: ", 1)[1], (dry, real)
    # (git status itself stops at a racily clean f.dat: the files are compared.)
    before = {p: p.read_bytes() for p in wt.rglob("*") if p.is_file() and ".git" not in p.parts}
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1)
    assert "f.dat' cannot be saved: the required filter 'broken'" in res.stdout, res.stdout
    assert {p: p.read_bytes() for p in wt.rglob("*")
            if p.is_file() and ".git" not in p.parts} == before
    # Mended, the filter runs again at the next checkpoint (no stat proof passes it
    # by), and the file is saved.
    git("config", "filter.broken.clean", "cat", cwd=wt)
    git("config", "filter.broken.smudge", "cat", cwd=wt)
    got = json.loads(ao("ao", "checkpoint", "agent", "--json", cwd=repo).stdout)["results"][0]
    assert "filter_failed" not in got, got
    where = f"{got['preserved_commit']}:f.dat" if tracked else f"{got['preserved_commit']}^3:f.dat"
    assert git("cat-file", "blob", where, cwd=repo) == mine


def _warned(wt, kind):
    """Give the worktree `wt` something a checkpoint saves only in part, of `kind`;
    returns the words its warning says."""
    if kind == "filter_failed":
        (wt / "f.dat").write_text("committed\n")
        git("add", "f.dat", cwd=wt)
        git("commit", "-q", "-m", "f.dat", cwd=wt)
        git("config", "filter.broken.clean", "false", cwd=wt)
        git("config", "filter.broken.required", "true", cwd=wt)
        git("config", "filter.broken.smudge", "cat", cwd=wt)
        (wt / ".gitattributes").write_text("*.dat filter=broken\n")
        (wt / "f.dat").write_text("the agent's\n")
        (wt / "new.dat").write_text("the agent's too\n")
        return "2 path(s) a required filter (broken) failed on"
    if kind == "inexact":
        (wt / ".gitattributes").write_text("* text=auto\n")
        (wt / "win.txt").write_bytes(b"line\r\n")
        return "1 path(s) saved as git checks them out, not byte for byte"
    if kind == "unstorable":
        (wt / "GIT~1").write_text("precious\n")
        return "1 untracked path(s) whose names git will not store are in no save"
    if kind == "submodules_left_out":
        _submodules_with_own_work(wt)
        return ("2 submodule(s) saved only as the commit each has checked out, their own "
                "state left out of the save: lib (uncommitted changes), "
                "lib2 (commits or stashes on no remote)")
    git("init", "-q", str(wt / "dep"), cwd=wt)
    return "1 nested repository or worktree path(s) left out of the save: dep/"


def _submodules_with_own_work(wt):
    """Give the worktree `wt` two submodules, committed there: 'lib' with uncommitted
    changes, 'lib2' with a commit no remote has checked out."""
    for name in ("lib", "lib2"):
        add_submodule(wt, wt.parent.parent / f"{name}-src", name)
    git("commit", "-qm", "submodules", cwd=wt)
    (wt / "lib" / "l.txt").write_text("edited inside the submodule\n")
    (wt / "lib" / "new.txt").write_text("untracked inside the submodule\n")
    (wt / "lib2" / "l.txt").write_text("committed there only\n")
    git("commit", "-qam", "local only", cwd=wt / "lib2")


_WARNED = ["filter_failed", "inexact", "unstorable", "left_out", "submodules_left_out"]


@pytest.mark.parametrize("kind", _WARNED)
def test_quiet_checkpoints_still_warn_of_what_they_did_not_save(repo, worktrees, kind):
    # -q prints nothing on standard output, and on standard error the records of
    # sessions refused, failed or needing attention and the warnings: a checkpoint
    # that saved ok with a warning printed nothing at all, as the timer's and the
    # agent hook's checkpoints run it.
    wt = worktrees(repo, "agent")
    said = _warned(wt, kind)
    (wt / "README.md").write_text("important edit\n")
    for argv, process in ((["ao", "checkpoint", "-q"], True),
                          (["ao-preserve", "--keep-worktree", "-q"], False),
                          (["ao", "checkpoint", "--all", "--trigger", "timer", "-q"], False)):
        (wt / "README.md").write_text(f"edited for {argv[0]}\n")
        res = ao(*argv, cwd=wt, process=process)
        lines = res.stderr.splitlines()
        assert res.stdout == "" and len(lines) == 1, (argv, res.stdout, res.stderr)
        assert lines[0].startswith(f"warning: agent: {said}"), (argv, lines)
    (wt / "README.md").write_text("edited once more\n")
    loud = ao("ao", "checkpoint", cwd=wt).stdout
    assert f"warning: {said}" in loud, loud


@pytest.mark.parametrize("kind", _WARNED)
def test_a_checkpoint_dry_run_counts_and_warns_as_the_real_run(repo, worktrees, kind):
    # The dry run said "would checkpoint: N changed, M untracked, 0 ignored" and no
    # more, counting a file a required filter failed on as a saved change.
    wt = worktrees(repo, "agent")
    said = _warned(wt, kind)
    (wt / "README.md").write_text("important edit\n")
    for argv in (["ao", "checkpoint"], ["ao-preserve", "--keep-worktree"]):
        dry = json.loads(ao(*argv, "-n", "--json", cwd=wt).stdout)["results"][0]
        quiet = ao(*argv, "-n", "-q", cwd=wt)
        assert quiet.stdout == "" and said in quiet.stderr, quiet
        got = json.loads(ao(*argv, "--json", cwd=wt).stdout)["results"][0]
        counts = f"{got['changed']} changed, {got['untracked']} untracked"
        assert dry["message"].startswith(f"would checkpoint: {counts}, "), (dry, got)
        assert dry["warning"] == got["warning"] and said in dry["warning"], (dry, got)
        assert dry["message"].endswith(f"; {got['warning']}"), dry
        assert dry.get(kind) == got[kind], (dry, got)
        (wt / "README.md").write_text("edited again\n")
    if kind == "filter_failed":
        # Saved as the index holds it: f.dat's change is no saved change.
        assert got["changed"] == 1 and got["untracked"] == 1, got


@pytest.mark.parametrize("under", ["sub", ".claude/worktrees/sub"])
def test_a_session_nested_in_another_leaves_the_outer_ones_checkpoints_alone(
        repo, worktrees, under):
    outer = worktrees(repo, "outer")
    (outer / ".gitignore").write_text(".claude/\n")
    inner = outer / under
    git("worktree", "add", "-q", "-b", "sub", inner, cwd=repo)
    ao("ao", "add", inner, "--id", "sub", cwd=repo)
    (outer / "outer.txt").write_text("outer work\n")
    (inner / "inner.txt").write_text("inner work\n")
    for sid in ("outer", "sub"):
        got = json.loads(ao("ao", "checkpoint", sid, "--json", cwd=repo).stdout)["results"][0]
        assert got["status"] == "ok", got
    # Each save holds its own worktree's work only.
    for sid, mine, other in (("outer", "outer.txt", "inner.txt"), ("sub", "inner.txt",
                                                                    "outer.txt")):
        save = _entries(repo, sid)[0]["commit"]
        files = git("ls-tree", "-r", "--name-only", f"{save}^3", cwd=repo).split()
        assert mine in files and not [f for f in files if f.endswith(other)], (sid, files)
    assert (inner / "inner.txt").read_text() == "inner work\n"
    if under == "sub":  # not ignored: --at of the outer one names the inner session
        ao("ao", "checkpoint", "outer", cwd=repo)
        res = ao("ao-restore", "outer", "--at", "1", cwd=repo, rc=1)
        assert "session 'sub' lives in" in res.stdout and "git ao add" not in res.stdout, \
            res.stdout


def test_files_whose_names_git_will_not_store_are_named_and_never_removed(repo, worktrees):
    # git status lists GIT~1 and .git. as untracked, but update-index skips them
    # (exit 0): a checkpoint names them, --at leaves them, a preserve keeps the
    # worktree, and its dry run says so.
    wt = worktrees(repo, "agent")
    (wt / "GIT~1").write_text("precious\n")
    (wt / "dd").mkdir()
    (wt / "dd" / ".git.").write_text("precious too\n")
    (wt / "mine.txt").write_text("mine\n")
    got = json.loads(ao("ao", "checkpoint", "agent", "--json", cwd=repo).stdout)["results"][0]
    assert got["unstorable"] == ["GIT~1", "dd/.git."] and got["untracked"] == 1, got
    assert "will not store" in got["warning"]
    (wt / "later.txt").write_text("later\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    for n in ("2", "1"):  # back to the first entry, then its undo
        res = ao("ao-restore", "agent", "--at", n, cwd=repo)
        assert "whose names git will not store, left in place" in res.stdout, res.stdout
        assert (wt / "GIT~1").read_text() == "precious\n"
        assert (wt / "dd" / ".git.").read_text() == "precious too\n"
    assert (wt / "later.txt").exists()
    for extra in (["-n"], []):
        res = ao("ao-preserve", "agent", *extra, cwd=repo, rc=1)
        assert "GIT~1" in res.stdout and wt.is_dir(), (extra, res.stdout)


def test_a_quiet_restore_at_warns_of_what_it_leaves_in_place(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "GIT~1").write_text("precious\n")
    (wt / "README.md").write_text("edited since\n")
    res = ao("ao-restore", "agent", "--at", "1", "-q", cwd=repo)
    assert res.stdout == "" and res.stderr == (
        "warning: agent: GIT~1, whose names git will not store, left in place\n"), res.stderr
    assert (wt / "GIT~1").read_text() == "precious\n"


@pytest.mark.parametrize("name", ["GIT~1::$DATA", ".git::$INDEX_ALLOCATION", ".git:x",
                                  ".git\\x", "d/.git:z", ".GIT.. "])
def test_every_name_git_will_not_store_keeps_the_worktree_dry_run_and_real_alike(
        repo, worktrees, name):
    wt = worktrees(repo, "agent")
    (wt / name).parent.mkdir(parents=True, exist_ok=True)
    (wt / name).write_text("precious\n")
    (wt / "x.txt").write_text("saved\n")
    runs = [ao("ao-preserve", "agent", *extra, cwd=repo, rc=1).stdout for extra in (["-n"], [])]
    for out in runs:
        assert "a name git refuses to store" in out and "1 untracked" in out, out
    assert (wt / name).read_text() == "precious\n"


def test_dry_runs_judge_a_file_that_would_not_come_back_as_the_real_runs_do(
        repo, worktrees):
    wt = worktrees(repo, "agent")
    (wt / ".gitattributes").write_text("* text=auto\n")
    git("add", ".gitattributes", cwd=wt)
    git("commit", "-q", "-m", "attributes", cwd=wt)
    (wt / "a.txt").write_text("one\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "a.txt").write_text("two\n")
    (wt / "win.txt").write_bytes(b"line\r\n")
    for argv in (["ao-restore", "agent", "--at", "1"], ["ao-preserve", "agent"]):
        dry = ao(*argv, "-n", cwd=repo, rc=1).stdout
        real = ao(*argv, cwd=repo, rc=1).stdout
        assert "win.txt" in dry and "byte for byte" in dry, (argv, dry)
        if argv[0] == "ao-restore":
            assert dry.split("\t")[1:] == real.split("\t")[1:], (dry, real)
            # A refusal by design: a checkpoint saves such a file as git checks it
            # out, as it stays; --at would replace it, and no undo give it back.
            assert "--at replaces such files" in real and "no undo could give their " \
                "bytes back (nothing changed)" in real, real
        else:  # the rest is saved, and the worktree kept for the same reason
            assert dry.split("keep the worktree: ", 1)[1] == \
                real.split("worktree kept: ", 1)[1], (dry, real)
    assert (wt / "win.txt").read_bytes() == b"line\r\n" and wt.is_dir()


def test_a_repository_nested_in_the_worktree_is_left_out_of_a_checkpoint_and_named(
        repo, worktrees, tmp_path):
    # An agent cloned a dependency to read it: the checkpoint saves the session's
    # own work and names what it left out; a preserve still judges the clone.
    wt = worktrees(repo, "agent")
    (wt / "mine.txt").write_text("my work\n")
    git("clone", "-q", str(repo), str(wt / "dep"), cwd=tmp_path)
    got = json.loads(ao("ao", "checkpoint", "agent", "--json", cwd=repo).stdout)["results"][0]
    assert got["status"] == "ok" and got["left_out"] == ["dep/"], got
    assert "left out of the save: dep/" in got["warning"]
    save = _entries(repo, "agent")[0]["commit"]
    files = git("ls-tree", "-r", "--name-only", f"{save}^3", cwd=repo).split()
    assert files == ["mine.txt"], files


@pytest.mark.parametrize("again", ["changed-while-read", "objects-pruned"])
def test_a_checkpoint_read_again_still_leaves_a_nested_repository_out(
        repo, worktrees, tmp_path, again):
    # A capture reads the worktree again when a file changed under git's reads, and
    # captures again when a gc pruned its objects before its ref held them: each
    # such reading leaves the nested clone out as the first did, not refuses it.
    from git_ao.context import Context
    from git_ao.errors import GitError
    from git_ao.preserve import workflow
    from git_ao.save import capture
    from git_ao.store.database import Store
    wt = worktrees(repo, "agent")
    (wt / "mine.txt").write_text("my work\n")
    git("clone", "-q", str(repo), str(wt / "dep"), cwd=tmp_path)
    once = capture._capture_once if again == "changed-while-read" else capture.capture
    calls: list[int] = []

    def first_fails(*args, **kw):
        calls.append(1)
        if len(calls) == 1 and again == "changed-while-read":
            raise GitError(["add"], 128, "error: short read while indexing mine.txt")
        cap = once(*args, **kw)
        if len(calls) == 1:
            git("gc", "-q", "--prune=now", cwd=repo)
        return cap

    name = "_capture_once" if again == "changed-while-read" else "capture"
    setattr(capture, name, first_fails)
    try:
        out = workflow.preserve_one(Context(Store()), "agent", True)
    finally:
        setattr(capture, name, once)
    assert out.status == "ok", out.message
    assert len(calls) >= 2
    save = _entries(repo, "agent")[0]["commit"]
    files = git("ls-tree", "-r", "--name-only", f"{save}^3", cwd=repo).split()
    assert files == ["mine.txt"], files


def test_a_checkpoint_saves_the_worktree_around_submodules_with_their_own_work(
        repo, worktrees):
    # A submodule with uncommitted changes, or with commits no remote has, refused the
    # checkpoint whole: the rest of the worktree had no entry. Every trigger saves it
    # now, naming the submodules; a preserve, which removes the worktree, refuses.
    wt = worktrees(repo, "agent")
    _submodules_with_own_work(wt)
    lib2 = git("rev-parse", "HEAD", cwd=wt / "lib2").strip()
    payload = json.dumps({"hook_event_name": "Stop", "cwd": str(wt)})
    runs = [(["ao", "checkpoint"], None), (["ao", "checkpoint", "-q"], None),
            (["ao-preserve", "--keep-worktree", "-q"], None),
            (["ao", "checkpoint", "--all", "--trigger", "timer", "-q"], None),
            (["ao", "checkpoint", "--hook-input", "--trigger", "hook", "-q"], payload)]
    for n, (argv, stdin) in enumerate(runs):
        (wt / "top.txt").write_text(f"top {n}\n")
        res = subprocess.run(["git", *argv], cwd=wt, input=stdin, capture_output=True,
                             text=True, check=False)
        assert res.returncode == 0, (argv, res)
        said = res.stdout if argv == ["ao", "checkpoint"] else res.stderr
        assert "submodule(s) saved only as the commit each has checked out" in said, (argv, res)
        assert "lib (uncommitted changes)" in said and "push them first" not in said, said
        save = _entries(repo, "agent")[0]["commit"]
        assert git("show", f"{save}^3:top.txt", cwd=repo) == f"top {n}\n", argv
        # The submodules are saved as the commits they have checked out.
        assert git("rev-parse", f"{save}:lib2", cwd=repo).strip() == lib2
    assert [e["trigger"] for e in _entries(repo, "agent")][:2] == ["hook", "timer"]
    for extra in (["-n"], []):
        res = ao("ao-preserve", "agent", *extra, cwd=repo, rc=1)
        assert "has uncommitted changes" in res.stdout and wt.is_dir(), (extra, res.stdout)
    assert (wt / "lib" / "new.txt").exists() and (wt / "top.txt").exists()


def _nest(wt, rel, kind, repo, make_repo, tmp_path):
    """Make a repository nested untracked at `rel` in the worktree `wt` (a clone, a
    `git init` directory, a linked worktree of another repository), with work of
    its own: a change, an untracked file, an ignored one."""
    where = wt / rel
    where.parent.mkdir(parents=True, exist_ok=True)
    if kind == "clone":
        git("clone", "-q", "--no-hardlinks", str(repo), str(where), cwd=tmp_path)
    elif kind == "init":
        git("init", "-q", str(where), cwd=tmp_path)
        (where / "lib.c").write_text("int x;\n")
        git("add", "lib.c", cwd=where)
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "lib",
            cwd=where)
    else:
        other = make_repo()
        git("worktree", "add", "-q", "-b", "nested", str(where), cwd=other)
    (where / "README.md").write_text("the nested repository's own edit\n")
    (where / "scratch.txt").write_text("its untracked file\n")
    (where / "x.log").write_text("its ignored file\n")


def _snapshot(top):
    """Every path under `top` (its .git too) with its stat data and bytes: a write,
    a removal or a move inside it shows."""
    out = {}
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            full = os.path.join(root, name)
            st = os.lstat(full)
            data = _read(full) if os.path.isfile(full) and not os.path.islink(full) else None
            out[os.path.relpath(full, top)] = (st.st_mode, st.st_ino, st.st_mtime_ns,
                                               st.st_ctime_ns, data)
    st = os.lstat(top)
    out["."] = (st.st_mode, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, None)
    return out


def _without(state, rel):
    """`exact_state` with the nested repository at `rel` and the directories that
    hold it left out (what an entry taken without it cannot hold)."""
    b = rel.encode()
    holders = {rel.rsplit("/", i)[0] for i in range(1, rel.count("/") + 1)}

    def keep(p):
        p = p if isinstance(p, bytes) else p.encode()
        return not (p == b or p.startswith(b + b"/"))

    out = dict(state)
    out["status"] = [r for r in state["status"] if not r.endswith(b"? " + b + b"/")
                     and r != b"? " + b + b"/"]
    out["files"] = {p: v for p, v in state["files"].items() if keep(p)}
    out["directories"] = [d for d in state["directories"] if keep(d) and d not in holders]
    return out


@pytest.mark.parametrize("kind,rel", [("clone", "dep"), ("init", "dep"),
                                      ("worktree", "dep"), ("clone", "new/deeper/dep"),
                                      ("clone", "build/dep"), ("init", "src/dep")])
def test_restore_at_leaves_a_nested_repository_alone_and_its_undo_works(
        repo, worktrees, make_repo, tmp_path, kind, rel):
    # An agent cloned a dependency (or ran git init, or added a worktree of another
    # repository) and then destroyed the rest of its work: --at records the current
    # state without the nested repository, named as a checkpoint names it, brings
    # the entry back around it, never writing inside it, and its undo works too.
    wt = _session(repo, worktrees)
    (wt / "mine.txt").write_text("my work\n")
    # An intent-to-add entry: the proof of the result reads the worktree again.
    (wt / "planned.txt").write_text("planned\n")
    git("add", "-N", "planned.txt", cwd=wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = _without(exact_state(wt), rel)
    _nest(wt, rel, kind, repo, make_repo, tmp_path)
    _destroy(wt)
    wiped = exact_state(wt)
    nested = _snapshot(wt / rel)
    ignored = rel.startswith("build/")  # inside an ignored directory: no nested repo to name
    said = f"1 nested repository or worktree path(s) left out of the save: {rel}/"
    dry = _restore_json(repo, "agent", "--at", "1", "-n")
    assert dry["status"] == "ok", dry
    if ignored:
        assert "left_out" not in dry, dry
    else:
        assert dry["left_out"] == [f"{rel}/"] and said in dry["warning"], dry
    assert len(_entries(repo, "agent")) == 1
    doc = _restore_json(repo, "agent", "--at", "1")
    assert doc["status"] == "ok", doc
    assert doc.get("left_out") == dry.get("left_out") and doc.get("warning") == \
        dry.get("warning"), (dry, doc)
    assert _snapshot(wt / rel) == nested
    assert_restored(wanted, _without(exact_state(wt), rel))
    # The state replaced, recorded first, leaves the nested repository out.
    files = git("ls-tree", "-r", "--name-only", f"{doc['replaced']}^3", cwd=repo).split()
    assert "stray.txt" in files and not [f for f in files if f.startswith(rel + "/")], files
    back = _restore_json(repo, "agent", "--at", doc["replaced"][:12])
    assert back["status"] == "ok", back
    assert _snapshot(wt / rel) == nested
    assert_restored(wiped, exact_state(wt))


@pytest.mark.parametrize("had", ["tracked-file", "tracked-dir", "untracked-file",
                                 "untracked-dir", "file-above", "empty-dir-inside"])
def test_restore_at_refuses_an_entry_that_writes_where_a_nested_repository_is(
        repo, worktrees, tmp_path, had):
    # The entry has something at the nested repository's path, inside it, or a
    # file where its directory is: bringing it back would write there, so --at
    # and its dry run refuse alike, in one line naming the path, and nothing changes.
    wt = _session(repo, worktrees)
    rel = {"tracked-dir": "src", "file-above": "top/dep"}.get(had, "dep")
    top = rel.split("/")[0]
    if had == "tracked-file":
        (wt / "dep").write_text("tracked\n")
        git("add", "dep", cwd=wt)
        git("commit", "-q", "-m", "dep", cwd=wt)
    elif had == "untracked-file" or had == "file-above":
        (wt / top).write_text("untracked\n")
    elif had == "untracked-dir":
        (wt / "dep").mkdir()
        (wt / "dep" / "notes.txt").write_text("untracked\n")
    elif had == "empty-dir-inside":
        (wt / "dep" / "sub").mkdir(parents=True)
    ao("ao", "checkpoint", "agent", cwd=repo)
    if had in ("tracked-file", "tracked-dir"):
        git("rm", "-q", "-r", "-f", top, cwd=wt)
    else:
        shutil.rmtree(wt / top) if (wt / top).is_dir() else (wt / top).unlink()
    git("init", "-q", str(wt / rel), cwd=tmp_path)
    (wt / rel / "work.txt").write_text("the clone's work\n")
    (wt / "stray.txt").write_text("the agent's mess\n")
    before, nested = exact_state(wt), _snapshot(wt / rel)
    tip = git("rev-parse", HIST + "agent", cwd=repo)
    for extra in (["-n"], []):
        res = ao("ao-restore", "agent", "--at", "1", *extra, cwd=repo, rc=1)
        lines = res.stdout.strip().splitlines()
        assert len(lines) == 1 and f"{rel}/" in lines[0], (extra, res.stdout)
        assert "nested repository" in lines[0] and "move it away" in lines[0], lines
        assert "(nothing changed)" in lines[0], lines
    assert git("rev-parse", HIST + "agent", cwd=repo) == tip
    assert _snapshot(wt / rel) == nested
    assert_restored(before, exact_state(wt))


def _files_outside(wt, skip=("lib", "lib2")):
    """{path: bytes} of the worktree's files, outside .git and the submodules `skip`."""
    out = {}
    for root, dirs, files in os.walk(wt):
        rel = os.path.relpath(root, wt)
        dirs[:] = [d for d in dirs if d != ".git" and (rel != "." or d not in skip)]
        for name in files:
            if name != ".git" or rel != ".":
                full = os.path.join(root, name)
                out[os.path.relpath(full, wt)] = None if os.path.islink(full) else _read(full)
    return out


def test_restore_at_leaves_a_submodules_own_work_alone_and_its_undo_works(repo, worktrees):
    # A submodule with uncommitted changes (lib), or with a commit no remote has
    # checked out (lib2), refused --at whole: the current state could not be recorded
    # first. Now it is recorded as a checkpoint records it, the submodules saved as
    # the commits they have checked out and named, and left exactly as they are: the
    # entry has those commits there, so the run and its undo go on.
    wt = worktrees(repo, "agent")
    _submodules_with_own_work(wt)
    (wt / "mine.txt").write_text("my work\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = _files_outside(wt)
    _destroy(wt)
    wiped = _files_outside(wt)
    subs = {name: _snapshot(wt / name) for name in ("lib", "lib2")}
    said = ("2 submodule(s) saved only as the commit each has checked out, their own "
            "state left out of the save and left as it is: lib (uncommitted changes), "
            "lib2 (commits or stashes on no remote)")
    dry = _restore_json(repo, "agent", "--at", "1", "-n")
    assert dry["status"] == "ok" and said in dry["warning"], dry
    assert dry["submodules_left_out"] == ["lib", "lib2"], dry
    assert len(_entries(repo, "agent")) == 1
    doc = _restore_json(repo, "agent", "--at", "1")
    assert doc["status"] == "ok", doc
    assert doc["warning"] == dry["warning"] and doc["submodules_left_out"] == ["lib", "lib2"]
    assert {n: _snapshot(wt / n) for n in subs} == subs
    assert _files_outside(wt) == wanted
    files = git("ls-tree", "-r", "--name-only", f"{doc['replaced']}^3", cwd=repo).split()
    assert files == ["stray.txt"], files
    back = _restore_json(repo, "agent", "--at", doc["replaced"][:12])
    assert back["status"] == "ok", back
    assert {n: _snapshot(wt / n) for n in subs} == subs
    assert _files_outside(wt) == wiped
    assert (wt / "lib" / "new.txt").read_text() == "untracked inside the submodule\n"


@pytest.mark.parametrize("which", ["lib", "lib2"])
def test_restore_at_refuses_an_entry_with_another_commit_where_a_submodule_has_own_work(
        repo, worktrees, which):
    # The entry has another commit at the submodule's path than the one it has checked
    # out, and --at never touches inside it: refused in one line naming the fix, the
    # dry run alike, and nothing changes.
    wt = worktrees(repo, "agent")
    _submodules_with_own_work(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    old = git("rev-parse", "HEAD", cwd=wt / which).strip()
    (wt / which / "more.txt").write_text("more\n")
    git("add", "more.txt", cwd=wt / which)
    git("commit", "-qm", "more", cwd=wt / which)
    (wt / "stray.txt").write_text("the agent's mess\n")
    before, subs = _files_outside(wt), {n: _snapshot(wt / n) for n in ("lib", "lib2")}
    tip = git("rev-parse", HIST + "agent", cwd=repo)
    for extra in (["-n"], []):
        res = ao("ao-restore", "agent", "--at", "1", *extra, cwd=repo, rc=1)
        lines = res.stdout.strip().splitlines()
        assert len(lines) == 1 and f"submodule '{which}'" in lines[0], (extra, res.stdout)
        assert f"git -C {which} checkout {old[:12]}" in lines[0], lines
        assert "(nothing changed)" in lines[0] and "cannot be recorded" not in lines[0], lines
    assert git("rev-parse", HIST + "agent", cwd=repo) == tip
    assert {n: _snapshot(wt / n) for n in subs} == subs and _files_outside(wt) == before


def test_a_preserve_refusing_a_submodules_uncommitted_changes_names_the_fix(
        repo, worktrees):
    # The preserve removes the worktree, so it still refuses; its line, and doctor's,
    # names what to do about it.
    wt = worktrees(repo, "agent")
    _submodules_with_own_work(wt)
    res = ao("ao-preserve", "agent", "-n", cwd=repo, rc=1)
    assert "has uncommitted changes" in res.stdout, res.stdout
    assert "commit them inside it and push them first" in res.stdout, res.stdout
    doc = ao("ao", "doctor", cwd=repo, rc=None).stdout
    assert "commit them inside it and push them first" in doc, doc


def test_a_preserve_still_refuses_a_nested_repository_and_keeps_the_worktree(
        repo, worktrees, tmp_path):
    # The preserve removes the worktree, and a nested clone's files are in no save:
    # its dry run and its real run refuse, as before --at left such clones alone.
    wt = worktrees(repo, "agent")
    (wt / "mine.txt").write_text("my work\n")
    git("clone", "-q", str(repo), str(wt / "dep"), cwd=tmp_path)
    for extra in (["-n"], []):
        res = ao("ao-preserve", "agent", *extra, cwd=repo, rc=1)
        assert "untracked nested repository" in res.stdout and "dep/" in res.stdout, res.stdout
    assert wt.is_dir() and (wt / "mine.txt").exists() and (wt / "dep" / ".git").is_dir()
    assert not _entries(repo, "agent")


def test_a_checkpoint_of_intent_to_add_type_changes_and_deletions_comes_back_exactly(
        repo, worktrees):
    wt = worktrees(repo, "agent")
    (wt / "planned.txt").write_text("planned\n")
    git("add", "-N", "planned.txt", cwd=wt)
    (wt / "src" / "util.py").unlink()
    os.symlink("README.md", wt / "src" / "util.py")  # a file become a symlink
    (wt / "data.bin").unlink()
    os.chmod(wt / "run.sh", 0o755)
    (wt / "README.md").write_text("staged\n")
    git("add", "README.md", cwd=wt)
    (wt / "README.md").write_text("staged\nthen more\n")
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    _destroy(wt)
    ao("ao-restore", "agent", "--at", "2" if len(_entries(repo, "agent")) > 1 else "1",
       cwd=repo)
    assert_restored(wanted, exact_state(wt))


def _doctor_silent_on(repo, wt):
    res = ao("ao", "doctor", cwd=repo, rc=None)
    assert str(wt) not in res.stdout and "agent" not in res.stdout, res.stdout


@pytest.mark.parametrize("content", ["", "planned\n"])
@pytest.mark.parametrize("soft", [False, True])
def test_restore_at_takes_the_entrys_index_over_an_intent_to_add_entry(
        repo, worktrees, content, soft):
    """An agent undoes the commit that added a file and marks it intent-to-add: --at
    back to the entry of that commit leaves no intent-to-add mark where the entry's
    index has the file (`git reset --hard` keeps it on an entry whose blob is the
    tree's: an empty file), and the state it replaced comes back by its undo."""
    wt = worktrees(repo, "agent")
    (wt / "e").write_text(content)
    git("add", "e", cwd=wt)
    git("commit", "-qm", "add e", cwd=wt)
    if soft:  # and one more commit, which the soft reset undoes with it
        (wt / "README.md").write_text("more\n")
        git("commit", "-qam", "more", cwd=wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    entry = _entries(repo, "agent")[0]["commit"]
    git("reset", "-q", "--soft" if soft else "--mixed", "HEAD~2" if soft else "HEAD~1", cwd=wt)
    if soft:
        git("rm", "-q", "--cached", "e", cwd=wt)
    git("add", "-N", "e", cwd=wt)
    replaced = exact_state(wt)
    r = _restore_json(repo, "agent", "--at", entry)
    assert r["status"] == "ok", r
    assert_restored(wanted, exact_state(wt))
    assert git("status", "--porcelain", cwd=wt) == ""
    # Every later save works, and the undo the outcome names brings the state back.
    ao("ao", "checkpoint", "agent", cwd=repo)
    r = _restore_json(repo, "agent", "--at", r["replaced"])
    assert r["status"] == "ok", r
    assert_restored(replaced, exact_state(wt))
    for extra in (["-n"], []):
        res = ao("ao-preserve", "agent", *extra, cwd=repo)
        assert res.stdout.startswith("preserve\tok\t"), res.stdout
        if extra:
            _doctor_silent_on(repo, wt)
    ao("ao-restore", "agent", cwd=repo)
    assert_restored(replaced, exact_state(wt))


@pytest.mark.parametrize("then", ["empty", "written", "removed", "soft reset", "soft reset, removed",
                                  "in a directory"])
def test_an_intent_to_add_entry_a_hard_reset_kept_is_saved_as_it_is(repo, worktrees, then):
    """`git reset --hard` (or `git read-tree`) keeps an intent-to-add entry whose blob
    is the tree's (an empty file), with a cache tree naming it: `git status` shows
    it deleted from the index, `git write-tree` gives HEAD's tree. A checkpoint, a
    preserve and its dry run and doctor take it as status does, and it comes back
    as it was."""
    wt = worktrees(repo, "agent")
    e = "d/e" if then == "in a directory" else "e"
    (wt / "d").mkdir()
    (wt / e).write_text("")
    git("add", e, cwd=wt)
    git("commit", "-qm", "add empty e", cwd=wt)
    git("rm", "-q", "--cached", e, cwd=wt)
    git("add", "-N", e, cwd=wt)
    git("reset", "-q", "--hard", cwd=wt)
    if then.startswith("soft reset"):
        git("reset", "-q", "--soft", "HEAD~1", cwd=wt)
    if then == "written":
        (wt / "e").write_text("later\n")
    if then.endswith("removed"):
        (wt / "e").unlink()
    wanted = exact_state(wt)
    res = ao("ao", "checkpoint", "agent", cwd=repo)
    assert "\tok\t" in res.stdout, res.stdout
    entry = _entries(repo, "agent")[0]["commit"]
    res = ao("ao-preserve", "-n", "agent", cwd=repo)
    assert res.stdout.startswith("preserve\tok\tagent\twould preserve and remove: 1 changed"), \
        res.stdout
    _doctor_silent_on(repo, wt)
    ao("ao-preserve", "agent", cwd=repo)
    ao("ao-restore", "agent", cwd=repo)
    assert_restored(wanted, exact_state(wt))
    # The checkpoint's entry holds it too: --at from a clean worktree brings it back.
    git("reset", "-q", "--hard", "HEAD", cwd=wt)
    git("rm", "-q", "--cached", "--ignore-unmatch", e, cwd=wt)
    (wt / e).unlink(missing_ok=True)
    git("reset", "-q", "--hard", "HEAD", cwd=wt)
    assert _restore_json(repo, "agent", "--at", entry)["status"] == "ok"
    got = exact_state(wt)
    if then == "in a directory":
        # There git status reads the cache tree too and shows the path as new
        # (" A"); the entry makes the index git's status shows at the top: the
        # path deleted from the index, marked intent-to-add.
        assert wanted["status"][0].startswith(b"1 .A ") and got["status"][0].startswith(b"1 DA ")
        got["status"] = wanted["status"]
    assert_restored(wanted, got)


def _restore_json(cwd, *args, rc=0):
    res = ao("ao-restore", *args, "--json", cwd=cwd, rc=rc)
    return json.loads(res.stdout)["results"][0]


def test_a_restore_at_that_changes_nothing_adds_no_entry_and_shifts_no_number(
        repo, worktrees):
    wt = worktrees(repo, "agent")
    (wt / "n.txt").write_text("old\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    (wt / "n.txt").write_text("new\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    ao("ao-restore", "agent", "--at", "2", cwd=repo)
    assert_restored(wanted, exact_state(wt))
    whole = _entries(repo, "agent")
    tip = git("rev-parse", HIST + "agent", cwd=repo)
    # A script running --at 2 once more: nothing to change, so nothing added, and
    # entry 2 still names the same state for the next run.
    for _ in range(2):
        res = ao("ao-restore", "agent", "--at", "2", cwd=repo)
        assert git("rev-parse", HIST + "agent", cwd=repo) == tip
        assert "already holds entry 2" in res.stdout and "no entry" in res.stdout, res.stdout
    # Its dry run says so too, not that it would record and bring the entry.
    dry = ao("ao-restore", "agent", "--at", "2", "-n", cwd=repo).stdout
    assert dry.startswith("restore\tnothing\tagent\t") and "already holds entry 2" in dry, dry
    assert _entries(repo, "agent") == whole
    doc = _restore_json(repo, "agent", "--at", whole[1]["commit"][:12])
    assert doc["status"] == "nothing" and doc["history_entry"] is None
    assert doc["entry_number"] == 2
    assert _entries(repo, "agent") == whole
    assert_restored(wanted, exact_state(wt))


def test_a_repeated_restore_at_changes_nothing_after_an_ignore_rule_and_its_undo(
        repo, worktrees):
    # The agent ignores an untracked file, --at brings back an entry from before the
    # rule, and --at its undo brings the rule back: the worktree holds that entry, and
    # --at it once more changes nothing and adds nothing, though what it leaves alone
    # by design (the ignored file, its bits counted in no entry) may differ.
    wt = worktrees(repo, "agent")
    (wt / "new.txt").write_text("new\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    with open(wt / ".gitignore", "a") as fh:
        fh.write("new.txt\n")
    os.chmod(wt / "new.txt", 0o600)
    for n in range(8):  # ignored files with other bits than the rest
        (wt / f"debug{n}.log").write_text("ignored\n")
        os.chmod(wt / f"debug{n}.log", 0o600)
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    first = _restore_json(repo, "agent", "--at", "2")
    assert first["status"] == "ok", first
    undo = first["replaced"][:12]
    doc = _restore_json(repo, "agent", "--at", undo)
    assert doc["status"] == "ok", doc
    for n in range(8):
        os.chmod(wt / f"debug{n}.log", 0o644)  # ignored: --at never touches it
    tip = git("rev-parse", HIST + "agent", cwd=repo)
    for _ in range(2):
        dry = ao("ao-restore", "agent", "--at", undo, "-n", cwd=repo).stdout
        assert dry.startswith("restore\tnothing\tagent\t") and "already holds" in dry, dry
        res = ao("ao-restore", "agent", "--at", undo, cwd=repo).stdout
        assert res.startswith("restore\tnothing\tagent\t"), res
        assert git("rev-parse", HIST + "agent", cwd=repo) == tip
    assert (wt / "new.txt").read_text() == "new\n"
    assert {k: v for k, v in wanted.items() if k != "modes"} == \
        {k: v for k, v in exact_state(wt).items() if k != "modes"}


def test_restore_at_is_no_no_op_when_only_the_bits_of_a_file_it_restores_differ(
        repo, worktrees):
    # The other way: a tracked file's bits differ from the entry's, which --at puts
    # back, so the worktree does not hold the entry.
    wt = worktrees(repo, "agent")
    (wt / "n.txt").write_text("n\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    os.chmod(wt / "README.md", 0o600)
    dry = ao("ao-restore", "agent", "--at", "1", "-n", cwd=repo).stdout
    assert dry.startswith("restore\tok\tagent\t") and "would record" in dry, dry
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert os.stat(wt / "README.md").st_mode & 0o777 == 0o644


def test_restore_at_says_the_numbers_as_they_are_after_the_run(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    saved = _entries(repo, "agent")[0]
    _destroy(wt)
    doc = _restore_json(repo, "agent", "--at", "1")
    got = _entries(repo, "agent")
    assert [e["commit"] for e in got][1] == saved["commit"]
    replaced = got[0]
    assert (doc["entry_number"], doc["preserved_commit"]) == (2, saved["commit"])
    assert (doc["replaced_number"], doc["replaced"]) == (1, replaced["commit"])
    msg = doc["message"]
    assert f"is at entry 2 ({saved['commit'][:12]})" in msg, msg
    assert f"replaced is entry 1 ({replaced['commit'][:12]})" in msg, msg
    assert "entry 1 (" + saved["commit"][:12] not in msg
    assert f"git ao-restore agent --at {replaced['commit'][:12]} undoes it" in msg


def test_the_undo_restore_at_prints_still_works_after_retention_rewrites_the_history(
        repo, worktrees):
    wt = _session(repo, worktrees)
    for i in range(5):
        (wt / "f.txt").write_text(f"v{i}\n")
        ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "f.txt").write_text("latest\n")
    wanted = exact_state(wt)
    doc = _restore_json(repo, "agent", "--at", "3")
    undo = doc["message"].rsplit("--at ", 1)[1].split()[0]
    ao("ao", "config", "set", "history.keep", "2", cwd=repo)
    try:
        ao("ao-prune", cwd=repo)
    finally:
        ao("ao", "config", "unset", "history.keep", cwd=repo)
    assert len(_entries(repo, "agent")) == 2
    _restore_json(repo, "agent", "--at", undo)
    assert_restored(wanted, exact_state(wt))


def test_restore_at_says_the_branch_moved_and_where_the_commits_it_left_are(
        repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    start = git("rev-parse", "HEAD", cwd=wt).strip()
    git("stash", "-q", "-u", cwd=wt)
    (wt / "README.md").write_text("the agent's commit\n")
    git("commit", "-qam", "agent commits after the entry", cwd=wt)
    mine = git("rev-parse", "HEAD", cwd=wt).strip()
    res = ao("ao-restore", "agent", "--at", "1", "-n", cwd=repo)
    assert f"move branch 'agent' from {mine[:12]} to {start[:12]}" in res.stdout, res.stdout
    doc = _restore_json(repo, "agent", "--at", "1")
    assert_restored(wanted, exact_state(wt))
    msg = doc["message"]
    assert f"branch 'agent' moved from {mine[:12]} to {start[:12]}" in msg, msg
    assert "1 commit on no branch" in msg and "entry 1 of the history" in msg, msg
    assert f"git branch rescue {mine[:12]}" in msg, msg
    assert doc["branch_moved"] == {"branch": "agent", "from": mine, "to": start,
                                   "left": 1, "kept_by": doc["replaced"]}
    assert git("rev-parse", "agent", cwd=repo).strip() == start
    git("branch", "rescue", mine[:12], cwd=repo)
    assert git("rev-parse", "rescue", cwd=repo).strip() == mine
    # Back where it was: the branch moves forward, leaving nothing behind.
    doc = _restore_json(repo, "agent", "--at", doc["replaced"][:12])
    assert doc["branch_moved"]["left"] == 0 and "on no branch" not in doc["message"]
    assert git("rev-parse", "agent", cwd=repo).strip() == mine
    # No move, no word of one.
    doc = _restore_json(repo, "agent", "--at", doc["preserved_commit"][:12])
    assert doc["status"] == "nothing" and "branch_moved" not in doc


def test_restore_at_calls_a_stale_index_lock_stale_with_the_rm_that_clears_it(
        repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    admin = git("rev-parse", "--absolute-git-dir", cwd=wt).strip()
    lock = os.path.join(admin, "index.lock")
    open(lock, "w").close()
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1)
    assert f"{lock} is stale (no process holds it" in res.stdout, res.stdout
    assert f"rm {lock}" in res.stdout and "is running there" not in res.stdout
    assert len(_entries(repo, "agent")) == 1
    os.unlink(lock)


def test_restore_at_calls_an_index_lock_a_program_has_open_held_never_stale(
        repo, worktrees):
    """A process that is not git (a libgit2 or JGit tool) with index.lock open holds
    it: named with its pid and name, and no `rm` is offered."""
    from tests.support import held_open
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    lock = os.path.join(git("rev-parse", "--absolute-git-dir", cwd=wt).strip(), "index.lock")
    with held_open(lock) as pid:
        res = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1, process=True)
    assert f"{lock} is held by pid {pid} (python" in res.stdout, res.stdout
    assert "stale" not in res.stdout and "rm " not in res.stdout, res.stdout
    assert len(_entries(repo, "agent")) == 1
    os.unlink(lock)


def test_history_with_no_id_lists_the_current_worktrees_session(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    got = json.loads(ao("ao", "history", "--json", cwd=wt / "src").stdout)
    assert got["id"] == "agent" and len(got["entries"]) == 1
    assert ao("ao", "history", cwd=wt).stdout == ao("ao", "history", "agent", cwd=repo).stdout
    res = ao("ao", "history", cwd=repo, rc=None)
    assert res.returncode != 0 and "name the session" in res.stderr, res


def test_a_stale_lock_on_the_history_ref_is_removed_or_called_stale(repo, worktrees):
    """No process holds it: a killed git-ao's own. A checkpoint, a preserve that keeps
    the worktree and restore --at remove it (logged) and go on; a git failure that
    ends the whole command (not one session's outcome) names it stale."""
    wt = _three_entries(repo, worktrees)
    common = git("rev-parse", "--absolute-git-dir", cwd=repo).strip()
    lock = os.path.join(common, "refs", "ao", "history", "agent.lock")
    n = 3
    for i, argv in enumerate((["ao", "checkpoint", "agent"],
                              ["ao-preserve", "--keep-worktree", "agent"])):
        open(lock, "w").close()
        (wt / "n.txt").write_text(f"after the lock {i}\n")
        res = ao(*argv, cwd=repo)
        assert "not appended to the history" not in res.stdout, res.stdout
        assert not os.path.exists(lock)
        n += 1
        assert len(_entries(repo, "agent")) == n
    open(lock, "w").close()
    (wt / "n.txt").write_text("the state restore --at replaces\n")
    ao("ao-restore", "agent", "--at", "2", cwd=repo)
    assert not os.path.exists(lock) and len(_entries(repo, "agent")) == n + 1
    assert "removed-stale-lock" in log_text() and lock in log_text()
    open(lock, "w").close()
    res = ao("ao-prune", "--force", "agent", cwd=repo, rc=1)
    assert "agent.lock is stale (no process holds it" in res.stderr, res.stderr
    os.unlink(lock)


def test_restore_at_on_a_detached_head_says_it_moved_and_what_it_left(repo, worktrees):
    wt = worktrees(repo, "agent")
    git("switch", "-q", "--detach", cwd=wt)
    start = git("rev-parse", "HEAD", cwd=wt).strip()
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "README.md").write_text("detached work\n")
    git("commit", "-qam", "a commit on the detached HEAD", cwd=wt)
    mine = git("rev-parse", "HEAD", cwd=wt).strip()
    doc = _restore_json(repo, "agent", "--at", "1")
    assert git("rev-parse", "HEAD", cwd=wt).strip() == start
    assert f"the detached HEAD moved from {mine[:12]} to {start[:12]}" in doc["message"]
    assert doc["branch_moved"]["branch"] is None and doc["branch_moved"]["left"] == 1
    assert git("cat-file", "-t", mine, cwd=repo).strip() == "commit"


def test_a_checkpoint_of_a_held_state_names_the_entry_that_holds_it(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    top = _entries(repo, "agent")[0]
    # Same content written again: the stat data differs, so the full path runs.
    app = wt / "src" / "app.py"
    app.write_text(app.read_text())
    res = ao("ao", "checkpoint", "agent", cwd=wt)
    assert len(_entries(repo, "agent")) == 1
    ref = git("rev-parse", "refs/ao/preserved/agent", cwd=repo).strip()
    out = res.stdout
    assert f"history entry 1 ({top['commit'][:12]}) holds this state already" in out, out
    assert "newest entry" not in out and f"saved in {ref[:12]}" not in out, out
    assert f"refs/ao/preserved/agent at {ref[:12]}" in out, out


@pytest.mark.parametrize("how", ["bind-untracked", "bind-tracked", "tmpfs"])
def test_restore_at_never_removes_across_a_mount_of_any_kind(repo, worktrees, tmp_path, how):
    from tests.support import bind_mount, tmpfs
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "later.txt").write_text("later\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("not the worktree's\n")
    if how == "bind-tracked":  # over a tracked directory: a hard reset would write in it
        target = wt / "src"
        assert git("ls-files", "src", cwd=wt).strip()
        for f in (wt / "src").iterdir():
            shutil.copy2(f, outside / f.name)
    else:
        target = wt / "shared"
    mount = bind_mount(outside, target) if how.startswith("bind") else tmpfs(target)
    with mount:
        if how == "tmpfs":
            (target / "precious.txt").write_text("not the worktree's\n")
        before = {p.name: p.read_bytes() for p in target.iterdir()}
        heads = git("rev-parse", "HEAD", cwd=wt), len(_entries(repo, "agent"))
        dry = ao("ao-restore", "agent", "--at", "2", "-n", cwd=repo, rc=1)
        assert "mount" in dry.stdout + dry.stderr  # the dry run says what the real one will
        res = ao("ao-restore", "agent", "--at", "2", cwd=repo, rc=1)
        assert "mount" in res.stdout + res.stderr
        assert {p.name: p.read_bytes() for p in target.iterdir()} == before
        assert (git("rev-parse", "HEAD", cwd=wt), len(_entries(repo, "agent"))) == heads
    assert (outside / "precious.txt").read_text() == "not the worktree's\n"


def test_a_restore_into_the_worktree_left_in_place_never_removes_across_a_mount(
        repo, worktrees, tmp_path):
    from tests.support import bind_mount, crash_env
    wt = worktrees(repo, "kept")
    tracked = git("ls-files", cwd=wt).split()
    victim = next(p for p in tracked if "/" in p)
    folder = victim.rsplit("/", 1)[0]
    (wt / victim).unlink()  # the agent's work deletes a tracked file
    (wt / "new.txt").write_text("new\n")
    ao("ao-preserve", "kept", cwd=repo, env=crash_env("preserve:after-db"), rc=None)
    assert wt.exists()  # recorded, not yet taken away
    git("reset", "-q", "--hard", cwd=wt)
    git("clean", "-q", "-fd", cwd=wt)
    outside = tmp_path / "outside"
    shutil.copytree(wt / folder, outside)
    with bind_mount(outside, wt / folder):
        res = ao("ao-restore", "kept", cwd=repo, rc=None)
        assert "mount" in res.stdout + res.stderr, res.stdout + res.stderr
    assert (outside / victim.rsplit("/", 1)[1]).exists()


def test_restore_at_refuses_while_a_process_works_in_the_worktree(repo, worktrees):
    """What a live agent writes between the capture and the reset would be in no
    entry: a process working there (its cwd, an open file) refuses the run."""
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    _destroy(wt)
    before = exact_state(wt)
    for how in ({"cwd": wt}, {"cwd": repo, "args": f"open('{wt}/held.log', 'a')"}):
        code = f"import time\nf = {how.get('args', 'None')}\nprint('up', flush=True)\n" \
            "time.sleep(60)"
        agent = subprocess.Popen([sys.executable, "-c", code], cwd=how["cwd"],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert agent.stdout is not None and agent.stdout.readline() == "up\n"
            doc = _restore_json(repo, "agent", "--at", "1", rc=1)
        finally:
            agent.kill()
            agent.wait()
            assert agent.stdout is not None
            agent.stdout.close()
        assert doc["status"] == "refused" and f"pid {agent.pid} (" in doc["message"]
        assert "stop them first (nothing changed)" in doc["message"]
        (wt / "held.log").unlink(missing_ok=True)
        assert exact_state(wt) == before and len(_entries(repo, "agent")) == 1


def test_restore_at_refuses_when_the_worktree_is_written_while_it_is_recorded(
        repo, worktrees):
    """A writer no process scan ties to the worktree (its cwd elsewhere, each write
    a fresh open): a write after the walk refuses the run before the reset, and
    every line it wrote is in the worktree or in an entry."""
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    _destroy(wt)
    stop = threading.Event()
    written = []

    def write():
        while not stop.is_set():
            with open(wt / "log.txt", "a") as fh:
                fh.write(f"line {len(written)}\n")
            written.append(1)
            time.sleep(0.001)
    asked = _entries(repo, "agent")[0]  # what --at 1 names before the run
    writer = threading.Thread(target=write)
    writer.start()
    try:
        time.sleep(0.05)
        doc = _restore_json(repo, "agent", "--at", "1", rc=1)
    finally:
        stop.set()
        writer.join()
    assert "still writing" in doc["message"], doc["message"]
    # The refusal appended the state it recorded: --at 1 now names that one, so
    # the retry it gives names the entry asked for by its commit.
    retry = re.search(r"git ao-restore agent --at (\w+) \(entry (\d) now\)", doc["message"])
    assert retry and asked["commit"].startswith(retry[1]) and retry[2] == "2", doc["message"]
    assert _entries(repo, "agent")[1]["entry"] == asked["entry"]
    writes = len(written)
    found = set((wt / "log.txt").read_text().splitlines())
    for e in _entries(repo, "agent"):
        res = subprocess.run(["git", "show", f"{e['commit']}^3:log.txt"], cwd=wt,
                             capture_output=True, text=True, check=False)
        found.update(res.stdout.splitlines())
    assert found == {f"line {i}" for i in range(writes)}
    assert _restore_json(repo, "agent", "--at", retry[1])["entry"] == asked["entry"]


def test_restore_at_leaves_files_ignored_before_and_the_undo_keeps_them(repo, worktrees):
    """An agent ignores dist/ and builds; going back to an entry whose rules do
    not ignore it leaves dist/ as it is, and so does the undo, whose rules do."""
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    rules = (wt / ".gitignore").read_text() if (wt / ".gitignore").exists() else ""
    (wt / ".gitignore").write_text(rules + "dist/\n")
    (wt / "dist").mkdir()
    (wt / "dist" / "out.bin").write_bytes(b"artefact")
    ino = os.lstat(wt / "dist" / "out.bin").st_ino
    doc = _restore_json(repo, "agent", "--at", "1")
    assert doc["status"] == "ok" and doc["left_in_place"] == ["dist/out.bin"], doc
    assert "dist/" not in ((wt / ".gitignore").read_text() if (wt / ".gitignore").exists() else "")
    undo = doc["message"].rsplit("--at ", 1)[1].split()[0]
    doc = _restore_json(repo, "agent", "--at", undo)
    assert doc["status"] == "ok", doc
    assert (wt / ".gitignore").read_text() == rules + "dist/\n"
    assert os.lstat(wt / "dist" / "out.bin").st_ino == ino  # never removed


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_restore_at_rewrites_a_file_an_index_flag_hides(repo, worktrees, flag):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    git("update-index", flag, "README.md", cwd=wt)
    (wt / "README.md").write_text("the agent's edit\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    doc = _restore_json(repo, "agent", "--at", "2")
    assert doc["status"] == "ok", doc
    assert_restored(wanted, exact_state(wt))
    doc = _restore_json(repo, "agent", "--at", "1")  # the undo: flag and edit back
    assert (wt / "README.md").read_text() == "the agent's edit\n"
    assert git("ls-files", "-v", "README.md", cwd=wt)[0] in "Sh"


def _checkpoint_then_lost(repo, worktrees):
    """A checkpoint whose preserve ref a routine prune drops (its work is in the
    worktree), then the worktree removed with plain git: only the history holds it."""
    wt = worktrees(repo, "lost")
    (wt / "README.md").write_text("work\n")
    (wt / "notes.txt").write_text("notes\n")
    ao("ao", "checkpoint", "-q", cwd=wt)
    ao("ao-prune", cwd=repo)
    assert git("for-each-ref", "refs/ao/preserved/", cwd=repo) == ""
    git("worktree", "remove", "--force", str(wt), cwd=repo)
    return wt, _entries(repo, "lost")[0]["time"]


def test_nothing_saved_names_the_newest_history_entry_and_the_command_that_brings_it(
        repo, worktrees):
    """Every outcome that says nothing was saved for a session whose history holds
    work names the newest entry's time and `git ao-restore ID --at 1`: the hints of
    list and doctor for the worktree gone, the preserve that finds it gone, the
    restore and its dry run; that command then brings the work back."""
    wt, when = _checkpoint_then_lost(repo, worktrees)
    at = "git ao-restore lost --at 1 brings it back"
    for args in (("ao", "list"), ("ao", "doctor")):
        res = ao(*args, cwd=repo, rc=None)
        assert f"({when}, checkpoint: 1 changed, 1 untracked)" in res.stderr + res.stdout, args
        assert f"after those, {at}" in res.stderr + res.stdout, args
    for args in (("ao-preserve", "lost", "-n"), ("ao-preserve", "lost"),
                 ("ao-restore", "lost", "-n")):
        out = ao(*args, cwd=repo).stdout
        assert "nothing was saved" in out and f"({when}, checkpoint:" in out, args
        assert f"after git ao-restore lost, {at}" in out, args
    out = ao("ao-restore", "lost", cwd=repo).stdout
    assert f"(nothing was saved); its newest history entry ({when}, checkpoint: 1 changed, " \
        f"1 untracked) holds work: {at}" in out
    assert not (wt / "notes.txt").exists()
    ao("ao-restore", "lost", "--at", "1", cwd=repo)
    assert (wt / "notes.txt").read_text() == "notes\n"


def test_nothing_saved_of_a_clean_session_names_no_entry_and_reads_no_history_ref(
        repo, worktrees):
    """A clean worktree's entries hold no work: the outcome stays as it was. A
    session with no history ref costs no git process for it."""
    wt = worktrees(repo, "clean")
    ao("ao", "checkpoint", "-q", cwd=wt)
    git("worktree", "remove", str(wt), cwd=repo)
    assert ao("ao-preserve", "clean", cwd=repo).stdout.endswith("restore re-adds it\n")
    assert ao("ao-restore", "clean", cwd=repo).stdout.endswith("(nothing was saved)\n")
    wt2 = worktrees(repo, "never")
    git("worktree", "remove", str(wt2), cwd=repo)
    res = ao("ao-preserve", "never", "-v", cwd=repo)
    assert res.stdout.endswith("restore re-adds it\n")
    res2 = ao("ao-restore", "never", "-v", cwd=repo)
    assert res2.stdout.endswith("(nothing was saved)\n")
    assert HIST not in res.stderr + res2.stderr


def test_no_history_on_an_unborn_branch_says_make_a_first_commit(repo, worktrees):
    """A checkpoint refuses an unborn branch, so what says there is no history yet
    (the hint of `git ao history`, the refusal of `--at`) asks for a first commit
    before it, never for the checkpoint alone."""
    wt = worktrees(repo, "unborn")
    git("checkout", "-q", "--orphan", "fresh", cwd=wt)
    ao("ao", "checkpoint", "unborn", cwd=wt, rc=1)
    first = f"its branch has no commit yet: make a first commit in {wt}, then git ao " \
        "checkpoint unborn takes one"
    assert ao("ao", "history", "unborn", cwd=repo).stderr == f"hint: no history yet: {first}\n"
    out = ao("ao-restore", "unborn", "--at", "1", cwd=wt, rc=1).stdout
    assert f"has no history yet ({first})" in out
    born = worktrees(repo, "born")
    assert ao("ao", "history", "born", cwd=born).stderr == \
        "hint: no history yet: git ao checkpoint born takes one\n"


def test_restore_at_refuses_a_background_job_of_the_same_script(repo, worktrees, tmp_path):
    """A job a script started in the background has git-ao's parent and process
    group, but is no part of its pipeline: it is a process working in the worktree."""
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "new.txt").write_text("more\n")
    script = tmp_path / "run.sh"
    script.write_text(f"(cd '{wt}' && exec sleep 30) &\nP=$!\nsleep 0.3\n"
                      "git ao-restore agent --at 1 | cat\nrc=${PIPESTATUS[0]}\n"
                      "kill $P\nexit $rc\n")
    res = subprocess.run(["bash", str(script)], cwd=repo, capture_output=True, text=True,
                         check=False)
    assert res.returncode == 1 and "processes work in" in res.stdout, res
    assert (wt / "new.txt").read_text() == "more\n"
    # The pipeline's own commands are not: cat sits in the worktree too.
    res = subprocess.run(["bash", "-c", "git ao-restore agent --at 1 | (cd . && cat)"],
                         cwd=wt, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res


@pytest.mark.parametrize("line", [
    "{ git ao-restore agent --at 1 $DRY; echo done; } 2>&1 | (cd . && cat)",
    "r() { git ao-restore \"$@\"; }; r agent --at 1 $DRY | (cd . && tee /dev/null)",
    "( git ao-restore agent --at 1 $DRY ) | (cd . && cat) | (cd . && cat)",
])
def test_restore_at_from_a_group_or_function_in_a_pipeline_runs_beside_its_own_pipeline(
        repo, worktrees, line):
    # The pipeline's other commands sit in the worktree too: they read git-ao's
    # output, and are no process working there.
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "new.txt").write_text("more\n")
    for dry in ("-n", ""):
        res = subprocess.run(["bash", "-c", f"set -o pipefail; {line}"], cwd=wt,
                             env=dict(os.environ, DRY=dry), capture_output=True, text=True,
                             check=False)
        assert res.returncode == 0 and "refused" not in res.stdout, (dry, res)
    assert not (wt / "new.txt").exists()


def test_restore_at_refuses_when_its_output_is_a_file_in_the_worktree(repo, worktrees):
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "notes.txt").write_text("mine\n")
    res = subprocess.run(["bash", "-c", "git ao-restore agent --at 1 >> notes.txt"], cwd=wt,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 1 and (wt / "notes.txt").read_text().startswith("mine\n")
    assert "standard output of this command is 'notes.txt'" in (wt / "notes.txt").read_text()


def test_restore_at_refuses_an_entry_file_where_an_ignored_file_lies_now(repo, worktrees):
    wt = _session(repo, worktrees)
    (wt / "x.out").write_text("x1\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "ignore-logs").mkdir()
    git("config", "core.excludesFile", str(wt / "ignore-logs" / "rules"), cwd=wt)
    (wt / "ignore-logs" / "rules").write_text("*.out\nignore-logs/\n")
    (wt / "x.out").write_text("x2\n")
    before = exact_state(wt)
    doc = _restore_json(repo, "agent", "--at", "1", rc=1)
    assert "x.out of entry 1 would land on a file ignored here" in doc["message"], doc
    assert exact_state(wt) == before and (wt / "x.out").read_text() == "x2\n"


_HOLDS = "dd of entry 1 would land on a directory here that holds "
_UNSTORABLE = ", whose name git will not store"
# way: (the entry's file, what stands on it now, the rule that ignores it, said)
_IN_THE_WAY = {
    "unstorable": ("dd", "dd/.git.", "", _HOLDS + "dd/.git." + _UNSTORABLE),
    "ignored": ("dd", "dd/x.log", "", _HOLDS + "dd/x.log, ignored"),
    "reset": ("dd", "dd/.git.", "", _HOLDS + "dd/.git." + _UNSTORABLE),
    "ignored-file": ("notes/today.txt", "notes", "notes\n",
                     "entry 1 has a directory at notes, a file ignored here"),
    "ignored-dir": ("gen/a.txt", "gen/a.txt", "gen/\n",
                    "gen/a.txt of entry 1 would land on a file ignored here"),
}


@pytest.mark.parametrize("way", sorted(_IN_THE_WAY))
def test_restore_at_refuses_what_it_leaves_in_place_on_an_entry_path_dry_run_and_real_alike(
        repo, worktrees, tmp_path, way):
    # --at leaves ignored files and names git will not store where they are. One on
    # a path the entry writes (in a directory where the entry has a file, or a file
    # where it has a directory) stopped the apply part way (exit 3), or the reset
    # ("reset": the file is on the entry's HEAD) deleted it with its directory,
    # while the dry run said ok: both runs refuse now, naming it, before anything
    # changes.
    wt = worktrees(repo, "agent")
    mine, there, rule, said = _IN_THE_WAY[way]
    top = mine.split("/")[0]
    (wt / mine).parent.mkdir(exist_ok=True)
    (wt / mine).write_text("the entry's\n")
    if way == "reset":
        git("add", mine, cwd=wt)
        git("commit", "-q", "-m", mine, cwd=wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "README.md").write_text("edited since\n")
    if way == "reset":
        git("rm", "-q", mine, cwd=wt)
    elif (wt / top).is_dir():
        shutil.rmtree(wt / top)
    else:
        (wt / top).unlink()
    excludes = repo / ".git" / "info" / "exclude"
    rules = excludes.read_text()
    excludes.write_text(rules + rule)
    (wt / there).parent.mkdir(exist_ok=True)
    (wt / there).write_text("mine\n")
    before, count = exact_state(wt), len(_entries(repo, "agent"))
    dry = ao("ao-restore", "agent", "--at", "1", "-n", cwd=repo, rc=1).stdout
    real = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1).stdout
    assert said in real and "move it away first (nothing changed)" in real, real
    assert dry.split("\t")[1:] == real.split("\t")[1:], (dry, real)
    assert exact_state(wt) == before and (wt / there).read_text() == "mine\n"
    assert len(_entries(repo, "agent")) == count  # a refusal adds nothing
    # Done as it says, the run goes through (under the entry's ignore rules).
    os.rename(wt / top, tmp_path / "moved-away")
    excludes.write_text(rules)
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert (wt / mine).read_text() == "the entry's\n"


_UNSEEN_IGNORED = ("cache of entry 1 would land on a directory here that holds cache/obj.o, "
                   "ignored")
_UNSEEN = ("cache of entry 1 would land on a directory here that holds cache/obj.o, which "
           "git status does not show")


@pytest.mark.parametrize("way", ["on a tracked file", "on a tracked symbolic link",
                                 "on a skip-worktree file", "on a gitlink"])
def test_restore_at_refuses_what_git_status_does_not_show_on_an_entry_path(
        repo, worktrees, tmp_path, way):
    # A tracked file deleted and an ignored directory made in its place: `git status
    # --ignored=matching` lists neither the directory nor what it holds, as it never
    # enters a directory where the index has a gitlink. --at took them for nothing
    # in the way, and the reset onto the entry's file deleted the directory with
    # them, the dry run saying ok too. Both runs refuse now, before anything changes.
    wt = worktrees(repo, "agent")
    if way.endswith("symbolic link"):
        os.symlink("README.md", wt / "cache")
    else:
        (wt / "cache").write_text("tracked\n")
    git("add", "cache", cwd=wt)
    git("commit", "-q", "-m", "cache", cwd=wt)
    (wt / "README.md").write_text("edited\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    said = _UNSEEN_IGNORED
    if way.endswith("gitlink"):
        git("rm", "-q", "cache", cwd=wt)
        head = git("rev-parse", "HEAD", cwd=wt).strip()
        git("update-index", "--add", "--cacheinfo", f"160000,{head},cache", cwd=wt)
        git("commit", "-q", "-m", "a gitlink", cwd=wt)
        said = _UNSEEN
    else:
        if way.endswith("skip-worktree file"):
            git("update-index", "--skip-worktree", "cache", cwd=wt)
        os.unlink(wt / "cache")
        with open(repo / ".git" / "info" / "exclude", "a") as fh:
            fh.write("cache/\n")
    (wt / "cache").mkdir()
    (wt / "cache" / "obj.o").write_text("precious\n")
    before, count = exact_state(wt), len(_entries(repo, "agent"))
    dry = ao("ao-restore", "agent", "--at", "1", "-n", cwd=repo, rc=1).stdout
    real = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=1).stdout
    assert said in real and "move it away first (nothing changed)" in real, real
    assert dry.split("\t")[1:] == real.split("\t")[1:], (dry, real)
    assert (wt / "cache" / "obj.o").read_text() == "precious\n"
    assert exact_state(wt) == before and len(_entries(repo, "agent")) == count
    os.rename(wt / "cache", tmp_path / "moved-away")
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert os.path.lexists(wt / "cache") and (wt / "README.md").read_text() == "edited\n"


def test_restore_at_leaves_a_directory_where_the_entry_has_a_gitlink_as_it_is(repo, worktrees):
    # git checks a gitlink out into the directory standing there: what an
    # uninitialised submodule's directory holds is in nobody's way.
    wt = worktrees(repo, "agent")
    head = git("rev-parse", "HEAD", cwd=wt).strip()
    git("update-index", "--add", "--cacheinfo", f"160000,{head},sub", cwd=wt)
    git("commit", "-q", "-m", "a gitlink", cwd=wt)
    (wt / "sub").mkdir(exist_ok=True)
    (wt / "sub" / "notes").write_text("mine\n")
    (wt / "README.md").write_text("edited\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "README.md").write_text("edited again\n")
    doc = _restore_json(repo, "agent", "--at", "1")
    assert doc["status"] == "ok", doc
    assert (wt / "sub" / "notes").read_text() == "mine\n"
    assert (wt / "README.md").read_text() == "edited\n"


def test_restore_at_dry_run_names_what_it_would_leave_in_place_as_the_real_run(
        repo, worktrees):
    # The dry run left out the files --at leaves in place that the entry does not
    # hold: ignored before and not under the entry's rules, or named as git will not
    # store. -q prints them as warnings, both runs.
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / ".gitignore").write_text("dist/\n")
    (wt / "dist").mkdir()
    (wt / "dist" / "out.bin").write_bytes(b"artefact")
    (wt / "GIT~1").write_text("precious\n")
    (wt / "README.md").write_text("edited since\n")
    dry = _restore_json(repo, "agent", "--at", "1", "-n")
    quiet = ao("ao-restore", "agent", "--at", "1", "-n", "-q", cwd=repo)
    real = _restore_json(repo, "agent", "--at", "1")
    assert real["left_in_place"] == ["dist/out.bin"] and real["unstorable"] == ["GIT~1"], real
    for key in ("left_in_place", "unstorable", "warning"):
        assert dry[key] == real[key], (key, dry, real)
    tail = real["message"].split("(", 1)[1].split(")", 1)[1].split("; the state it", 1)[0]
    assert "GIT~1, whose names git will not store, left in place" in tail, real
    assert dry["message"].endswith(tail), (dry, real)
    assert quiet.stdout == "" and quiet.stderr.splitlines() == [
        f"warning: agent: {w.removeprefix('warning: ')}" for w in real["warning"].split("; ")]
    assert (wt / "dist" / "out.bin").read_bytes() == b"artefact"
    assert (wt / "GIT~1").read_text() == "precious\n"


def test_restore_at_leaves_what_git_status_does_not_show_where_the_entry_writes_nothing(
        repo, worktrees):
    # An ignored directory where the index has a file the entry does not have: the
    # reset leaves it (git cannot unlink a directory as a file), and so does --at,
    # naming it as every file ignored before that the entry does not ignore.
    wt = worktrees(repo, "agent")
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "cache").write_text("tracked\n")
    git("add", "cache", cwd=wt)
    git("commit", "-q", "-m", "cache", cwd=wt)
    os.unlink(wt / "cache")
    (wt / ".gitignore").write_text("cache/\n")
    (wt / "cache").mkdir()
    (wt / "cache" / "obj.o").write_text("precious\n")
    doc = _restore_json(repo, "agent", "--at", "1")
    assert doc["status"] == "ok" and doc["left_in_place"] == ["cache/obj.o"], doc
    assert (wt / "cache" / "obj.o").read_text() == "precious\n"


@contextlib.contextmanager
def _immutable(path):
    """`path` made immutable (chattr +i: not even root may add or remove a name in
    a directory so marked) until the block ends."""
    if os.geteuid() != 0 or not shutil.which("chattr"):
        pytest.skip("needs root and chattr")
    if subprocess.run(["chattr", "+i", path], check=False, capture_output=True).returncode:
        pytest.skip("this file system has no immutable flag")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", path], check=False)


def _mark_of(sid):
    return Path(os.environ["AO_DATA_DIR"]) / "restore-at" / sid


@pytest.mark.parametrize("nested", [False, True])
def test_restore_at_stopped_before_the_worktree_changed_says_so(repo, worktrees, tmp_path,
                                                                nested):
    # An immutable directory holding a file the reset rewrites: git reset fails and
    # the outcome was git's words alone. It says now that the worktree did not
    # change and which entry holds its state, and leaves no mark behind; a nested
    # repository, left out of that state, does not change that.
    wt = worktrees(repo, "agent")
    if nested:
        git("init", "-q", str(wt / "dep"), cwd=tmp_path)
    (wt / "ro").mkdir()
    (wt / "ro" / "f1").write_text("1\n")
    git("add", "ro", cwd=wt)
    git("commit", "-q", "-m", "ro", cwd=wt)
    (wt / "ro" / "f1").write_text("2\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "ro" / "f1").write_text("3\n")
    before = exact_state(wt)
    with _immutable(wt / "ro"):
        doc = _restore_json(repo, "agent", "--at", "1", rc=1)
    save = _entries(repo, "agent")[0]["commit"]
    assert doc["status"] == "failed" and "Operation not permitted" in doc["message"], doc
    assert (f"nothing in the worktree changed: its state is entry 1 ({save[:12]}) of the "
            "history, recorded first; fix the cause and run the command again") in \
        doc["message"], doc
    assert exact_state(wt) == before and not _mark_of("agent").exists()
    ao("ao-restore", "agent", "--at", "2", cwd=repo)
    assert (wt / "ro" / "f1").read_text() == "2\n"


def _entry_then_file_in_ro(repo, worktrees):
    """A session "agent" whose entry 1 has data "2" and an empty ro/; the worktree
    then has data "3" and the untracked ro/u (ro/ to be made immutable)."""
    wt = worktrees(repo, "agent")
    (wt / "ro").mkdir()
    (wt / "data").write_text("2\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    (wt / "data").write_text("3\n")
    (wt / "ro" / "u").write_text("new\n")
    return wt


def test_restore_at_stopped_part_way_names_the_entry_that_undoes_it(repo, worktrees):
    # An untracked file in an immutable directory: the reset and the apply are done
    # when its removal fails ("failed  Operation not permitted: .../ro/u" and no
    # more). The outcome names the entry that holds the state before the run and
    # the command that brings it back; the mark makes a rerun add no entry for the
    # half-done state, and only for it: a change made by hand since is appended.
    wt = _entry_then_file_in_ro(repo, worktrees)
    with _immutable(wt / "ro"):
        doc = _restore_json(repo, "agent", "--at", "1", rc=1)
    entries = _entries(repo, "agent")
    undo = entries[0]["commit"]
    assert entries[0]["trigger"] == "restore" and doc["status"] == "failed", (entries, doc)
    assert f"Operation not permitted: {wt / 'ro' / 'u'}" in doc["message"], doc
    assert (f"the worktree is part way to entry 2 ({entries[1]['commit'][:12]}): its state "
            f"before the run is entry 1 ({undo[:12]}) of the history, recorded first; fix "
            f"the cause, then git ao-restore agent --at {undo[:12]} brings that state "
            "back") in doc["message"], doc
    assert (wt / "data").read_text() == "2\n" and _mark_of("agent").exists()
    (wt / "notes.txt").write_text("written by hand since\n")
    doc = _restore_json(repo, "agent", "--at", undo)
    assert doc["status"] == "ok", doc
    assert (wt / "data").read_text() == "3\n" and (wt / "ro" / "u").read_text() == "new\n"
    assert not (wt / "notes.txt").exists() and not _mark_of("agent").exists()
    now = _entries(repo, "agent")
    assert len(now) == len(entries) + 1, now  # the state with the change by hand
    assert git("show", f"{now[0]['commit']}^3:notes.txt", cwd=repo) == \
        "written by hand since\n"


def test_restore_at_rerun_after_a_stop_part_way_adds_no_entry_for_it(repo, worktrees):
    wt = _entry_then_file_in_ro(repo, worktrees)
    with _immutable(wt / "ro"):
        _restore_json(repo, "agent", "--at", "1", rc=1)
    count = len(_entries(repo, "agent"))
    doc = _restore_json(repo, "agent", "--at", "2")
    assert doc["status"] == "ok" and len(_entries(repo, "agent")) == count, doc
    assert (wt / "data").read_text() == "2\n" and not (wt / "ro" / "u").exists()


def test_a_save_the_history_lists_twice_names_the_newest_of_its_entries(repo, worktrees):
    """Two entries may hold one save (the same trees, other private state, in the
    same second): the commit `git ao history` prints for them is taken."""
    wt = _session(repo, worktrees)
    (wt / "emptydir").mkdir()
    ao("ao", "checkpoint", "agent", cwd=repo)
    for _ in range(5):
        (wt / "emptydir").rmdir()
        ao("ao", "checkpoint", "agent", cwd=repo)
        got = _entries(repo, "agent")
        if got[0]["commit"] == got[1]["commit"]:
            break
        (wt / "emptydir").mkdir()
    else:
        pytest.skip("no two checkpoints within one second here")
    doc = _restore_json(repo, "agent", "--at", got[0]["commit"])
    assert doc["status"] == "nothing" and doc["entry"] == got[0]["entry"], doc


def test_a_rules_file_under_an_ignore_rule_and_an_included_config_are_watched(
        repo, worktrees, tmp_path):
    """git reads a cache directory's own '.gitignore' of '*' (ignored by itself) and
    every config file include.path names: an edit in place to either changes what
    is untracked, and the unchanged checkpoint must see it."""
    wt = _session(repo, worktrees)
    (wt / "cache").mkdir()
    (wt / "cache" / ".gitignore").write_text("*\n")
    (wt / "cache" / "keep.txt").write_text("keep\n")
    (wt / "untracked.txt").write_text("u\n")
    absolute, relative = tmp_path / "included.cfg", "included-here.cfg"
    common = git("rev-parse", "--git-common-dir", cwd=wt).strip()
    common = os.path.join(str(wt), common) if not os.path.isabs(common) else common
    here = Path(common) / relative
    absolute.write_text("")
    here.write_text("")
    git("config", "--add", "include.path", str(absolute), cwd=repo)
    git("config", "--add", "include.path", relative, cwd=repo)
    excludes = tmp_path / "excludes"
    excludes.write_text("untracked.txt\n")
    edits = [
        lambda: (wt / "cache" / ".gitignore").write_text("*\n!keep.txt\n"),  # same inode
        lambda: absolute.write_text(f"[core]\n\texcludesFile = {excludes}\n"),
        lambda: absolute.write_text(""),
        lambda: here.write_text(f"[core]\n\texcludesFile = {excludes}\n"),
    ]
    time.sleep(0.1)
    _checkpoint_json(repo)
    assert _checkpoint_json(repo).get("unchanged") is True
    _each_change_is_seen(repo, edits)


def test_a_file_git_reads_that_changes_while_a_checkpoint_runs_records_no_stat_file(
        repo, worktrees):
    """The capture may read the index, HEAD or a ref before an agent's git command
    replaces it and the stat file is written after: a change since the walk began
    means the next checkpoint takes the full path."""
    from git_ao.fs import walk
    from git_ao.git import query
    from git_ao.save import unchanged
    wt = _session(repo, worktrees)
    time.sleep(0.1)
    data = os.environ["AO_DATA_DIR"]
    git_dir = git("rev-parse", "--absolute-git-dir", cwd=wt).strip()
    common = os.path.dirname(os.path.dirname(git_dir))
    conf = query.config_map(str(wt))
    ignored = [p for p in git("ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                              "--directory", cwd=wt).split("\0") if p]

    def record() -> bool:
        return unchanged.record(data, "agent", str(wt), git_dir, common, "agent", signed, conf)

    walked = walk.walk(str(wt))
    signed = unchanged.signatures(str(wt), walked, ignored)
    assert signed is not None
    assert record()
    for change in (lambda: git("update-index", "--chmod=+x", "README.md", cwd=wt),
                   lambda: git("commit", "-qm", "the agent commits meanwhile", cwd=wt)):
        time.sleep(0.1)
        walked = walk.walk(str(wt))
        signed = unchanged.signatures(str(wt), walked, ignored)
        assert signed is not None
        change()  # after the walk began, before the stat file is written
        assert not record()


@pytest.mark.parametrize("target", ["elsewhere", "other", "/"])
def test_a_tracked_directory_replaced_by_a_symbolic_link_is_checkpointed_and_undone(
        repo, worktrees, target):
    """`git update-index --remove` stops at a path below a symbolic link ("beyond a
    symbolic link"): a checkpoint reading again only what status saw change must
    take such paths as the deletions they are, wherever the link points."""
    wt = worktrees(repo, "agent")
    ao("ao", "checkpoint", "agent", cwd=repo)  # the next one reads only what changed
    (wt / "other").mkdir()
    (wt / "other" / "app.py").write_text("print('hi')\n")  # the same name and bytes
    shutil.rmtree(wt / "src")
    os.symlink(target, wt / "src")
    wanted = exact_state(wt)
    res = ao("ao", "checkpoint", "agent", cwd=repo)
    assert "2 changed, 2 untracked" in res.stdout, res.stdout
    _destroy(wt)
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert_restored(wanted, exact_state(wt))
    ao("ao-restore", "agent", "--at", "1", cwd=repo)  # the undo
    assert (wt / "src").is_dir() and not (wt / "src").is_symlink()


def _chmod_all(wt, file_bits, dir_bits):
    """chmod every file and directory of `wt` but .git, ignored ones too."""
    for root, dirs, files in os.walk(wt):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), file_bits)
        for name in dirs:
            os.chmod(os.path.join(root, name), dir_bits)
    os.chmod(wt, dir_bits)


def test_restore_at_gives_back_bits_a_chmod_changed_and_leaves_ignored_ones(repo, worktrees):
    """A chmod changes no content: the reset keeps the file, and every directory, with
    the bits the agent gave it. Each takes the entry's bits again, whether the entry
    records them (off its base: a 0700 directory, a setuid file) or they are its
    base's; ignored paths keep theirs, and the undo gives the chmod back."""
    wt = _session(repo, worktrees)
    os.chmod(wt / "src", 0o700)
    os.chmod(wt / "run.sh", 0o4755)
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    _chmod_all(wt, 0o600, 0o711)
    chmodded = exact_state(wt)
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    got = exact_state(wt)
    ignored = {b"debug.log", b"build/out.o"}
    assert {p: got["modes"][p] for p in ignored} == {p: "0o600" for p in ignored}
    assert got["dir_modes"][b"build"] == "0o711"
    for key in ("modes", "dir_modes"):
        for p in (*ignored, b"build"):
            wanted[key].pop(p, None)
            got[key].pop(p, None)
    assert_restored(wanted, got)
    ao("ao-restore", "agent", "--at", "1", cwd=repo)  # the undo
    assert_restored(chmodded, exact_state(wt))


@pytest.mark.parametrize("kept, rule", [("scratch.tmp", "*.tmp"), ("notes/a.txt", "notes/"),
                                        ("tool", "tool")])
def test_restore_at_writes_over_an_ignored_file_that_holds_the_entrys_own_bytes(
        repo, worktrees, kept, rule):
    """An untracked file that a later rule ignores: --at to the entry before the rule
    meets it ignored with the entry's own bytes, and --at to the entry after leaves
    it (its rules ignore it), so the undo meets it so too. Written over, it loses
    nothing: neither run is refused, and each brings its entry back exactly."""
    wt = _session(repo, worktrees)
    (wt / kept).parent.mkdir(exist_ok=True)
    (wt / kept).write_text("kept as it was\n")
    os.chmod(wt / kept, 0o750)
    ao("ao", "checkpoint", "agent", cwd=repo)
    before_rule = exact_state(wt)
    with open(wt / ".gitignore", "a") as fh:
        fh.write(rule + "\n")
    (wt / "later.txt").write_text("later\n")
    ao("ao", "checkpoint", "agent", cwd=repo)
    after_rule = exact_state(wt)
    dry = _restore_json(repo, "agent", "--at", "2", "-n")
    assert dry["status"] == "ok" and "left_in_place" not in dry, dry
    doc = _restore_json(repo, "agent", "--at", "2")
    assert doc["status"] == "ok" and "left_in_place" not in doc, doc
    assert_restored(before_rule, exact_state(wt))
    ao("ao-restore", "agent", "--at", "1", cwd=repo)  # the undo leaves it, ignored
    assert_restored(after_rule, exact_state(wt))
    ao("ao-restore", "agent", "--at", "1", cwd=repo)  # and its undo meets it again
    assert_restored(before_rule, exact_state(wt))


@pytest.mark.parametrize("dry", [False, True])
def test_restore_at_on_an_orphan_branch_names_the_switch_back_not_a_commit(
        repo, worktrees, dry):
    """`git checkout --orphan` moves HEAD to a branch with no commit yet: a HEAD on
    another branch, refused as one with the switch that works (a commit there, the
    advice for an unborn branch, would only make it a branch with a commit)."""
    wt = _session(repo, worktrees)
    ao("ao", "checkpoint", "agent", cwd=repo)
    wanted = exact_state(wt)
    git("checkout", "-q", "--orphan", "scratch", cwd=wt)
    git("rm", "-rfq", ".", cwd=wt)
    (wt / "fresh.txt").write_text("started over\n")
    res = ao("ao-restore", "agent", "--at", "1", *(["-n"] if dry else []), cwd=repo, rc=1)
    assert "HEAD is on branch 'scratch' (no commit yet), entry 1 was taken on branch " \
        "'agent': git switch agent, then run it again (nothing changed)" in res.stdout, res.stdout
    git("switch", "-q", "agent", cwd=wt)
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert_restored(wanted, exact_state(wt))
