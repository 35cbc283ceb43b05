"""Restore: the recorded path, the recorded branch, the work applied back."""

import json
import os
import shutil
import subprocess

import pytest

from tests.support import ao, ao_refs, commit_on, crash_env, dirty, git, ref_of, states
from tests.worktree_state import assert_restored, same_but_ignored, state


def test_moved_branch_without_conflict_applies_cleanly(repo, worktrees):
    wt = worktrees(repo, "moved")
    (wt / "src" / "app.py").write_text("print('mine')\n")
    ao("ao-preserve", "moved", cwd=repo)
    commit_on(repo, "moved", {"other.txt": "upstream\n"}, "upstream")
    ao("ao-restore", cwd=repo)
    assert (wt / "src" / "app.py").read_text() == "print('mine')\n"
    assert (wt / "other.txt").exists()
    assert ao_refs(repo, "refs/ao") == ""


def test_conflict_leaves_markers_keeps_ref_exit_3(repo, worktrees):
    wt = worktrees(repo, "conf")
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "conf", cwd=repo)
    commit_on(repo, "conf", {"README.md": "theirs\n"}, "theirs")
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "conflict" in res.stdout
    text = (wt / "README.md").read_text()
    assert "<<<<<<<" in text and "mine" in text and "theirs" in text
    assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/conf", cwd=repo).strip()
    # Live again, with work left in its ref: listed as needing attention.
    assert states(repo)["conf"] == "attention"


def test_stray_directory_is_refused_and_untouched(repo, worktrees):
    wt = worktrees(repo, "stray")
    ok = worktrees(repo, "fine")
    (wt / "f").write_text("x")
    (ok / "g").write_text("y")
    ao("ao-preserve", "--all", cwd=repo)
    wt.mkdir()
    (wt / "someone-elses").write_text("keep me")
    # older than the save: not an agent's write after it, so not set aside
    os.utime(wt / "someone-elses", (1_000_000, 1_000_000))
    res = ao("ao-restore", cwd=repo, rc=1)
    assert "stray" in res.stdout and "not a worktree" in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if "\tstray\t" in ln)
    assert line.count("pending") == 1, line  # the state said once, no advice to rerun
    assert (wt / "someone-elses").read_text() == "keep me"
    assert sorted(p.name for p in wt.iterdir()) == ["someone-elses"]
    assert (ok / "g").read_text() == "y"
    assert states(repo) == {"stray": "pending", "fine": "live"}
    (wt / "someone-elses").unlink()
    wt.rmdir()
    ao("ao-restore", cwd=repo)
    assert (wt / "f").read_text() == "x"


def test_branch_checked_out_elsewhere_refused_until_freed(repo, worktrees):
    wt = worktrees(repo, "busy")
    (wt / "f").write_text("x")
    ao("ao-preserve", "busy", cwd=repo)
    git("checkout", "-q", "busy", cwd=repo)
    res = ao("ao-restore", cwd=repo, rc=1)
    assert str(repo) in res.stdout and "busy" in res.stdout
    assert states(repo)["busy"] == "pending"
    git("checkout", "-q", "main", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "f").read_text() == "x"


def test_worktree_deleted_by_hand_is_readded(repo, worktrees):
    import shutil
    wt = worktrees(repo, "byhand")
    (wt / "committed").write_text("c")
    git("add", ".", cwd=wt)
    git("commit", "-qm", "c", cwd=wt)
    shutil.rmtree(wt)
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "committed").read_text() == "c"
    assert git("symbolic-ref", "--short", "HEAD", cwd=wt).strip() == "byhand"


def test_locked_worktree_is_captured_and_kept(repo, worktrees):
    wt = worktrees(repo, "locked")
    (wt / "f").write_text("x")
    git("worktree", "lock", "--reason", "on usb", wt, cwd=repo)
    res = ao("ao-preserve", "--all", cwd=repo, rc=1)
    assert "locked" in res.stdout
    assert (wt / "f").read_text() == "x"
    assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/locked", cwd=repo).strip()
    assert states(repo)["locked"] == "live"


def test_keep_worktree_is_a_checkpoint(repo, worktrees):
    wt = worktrees(repo, "ckpt")
    (wt / "f").write_text("x")
    ao("ao-preserve", "--keep-worktree", "ckpt", cwd=repo)
    assert (wt / "f").exists()
    assert states(repo)["ckpt"] == "live"
    assert "nothing to restore" in ao("ao-restore", cwd=repo).stderr


def test_crash_after_save_before_removal_is_recognised(repo, worktrees):
    wt = worktrees(repo, "crash")
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "crash", cwd=repo, rc=None, env={"GIT_AO_CRASH_AT": "preserve:after-db"})
    assert wt.exists()
    assert states(repo)["crash"] == "pending"
    res = ao("ao-restore", cwd=repo)
    assert "already held" in res.stdout
    assert same_but_ignored(before, state(wt))
    assert ao_refs(repo, "refs/ao") == ""


@pytest.mark.parametrize("later", [False, True])
def test_a_worktree_a_preserve_killed_before_the_move_left_is_reused_without_alarm(
        repo, worktrees, later):
    """Killed before the move: the worktree, its ignored files too, is still in
    place. The restore reuses it, dry run and real run: the ignored files are not
    said lost, and a worktree holding the save (and changes made since, which the
    preserve run again names) is no "other changes" to stash apply onto."""
    wt = worktrees(repo, "killed")
    (wt / "README.md").write_text("the agent's edit\n")
    (wt / "notes.txt").write_text("its notes\n")
    (wt / "build").mkdir()
    (wt / "build" / "out.o").write_text("ignored\n")
    (wt / ".gitignore").write_text("build/\n")
    ao("ao-preserve", "killed", cwd=repo, rc=None, env=crash_env("preserve:after-db"))
    assert states(repo)["killed"] == "pending" and wt.is_dir()
    if later:
        (wt / "more.txt").write_text("written after the save\n")
        res = ao("ao-preserve", "killed", cwd=repo, rc=1)
        assert "git ao-restore reuses it" in res.stdout, res.stdout
    dry = ao("ao-restore", "-n", "killed", cwd=repo)
    assert "no trash copy left" not in dry.stdout, dry.stdout
    res = ao("ao-restore", "--json", "killed", cwd=repo)
    [r] = json.loads(res.stdout)["results"]
    assert r["status"] == "ok", r
    assert "already held the preserved work" in r["message"], r
    assert "no trash copy left" not in r["message"] and "environment_lost" not in r, r
    assert "stash apply" not in r["message"], r
    if later:
        assert r["changed_since"] == ["more.txt"], r
        assert "more.txt" in r["message"], r
    assert (wt / "build" / "out.o").read_text() == "ignored\n"
    assert (wt / "notes.txt").read_text() == "its notes\n"
    assert ao_refs(repo, "refs/ao/preserved") == ""


def test_preserve_without_id_registers_current_worktree(repo, tmp_path):
    wt = tmp_path / "wt-unregistered"
    git("worktree", "add", "-q", "-b", "unreg", wt, cwd=repo)
    (wt / "f").write_text("x")
    ao("ao-preserve", cwd=wt)
    assert not wt.exists()
    assert states(repo) == {"wt-unregistered": "pending"}
    ao("ao-restore", cwd=repo)
    assert (wt / "f").read_text() == "x"


def test_untracked_path_tracked_on_moved_branch_blocks_apply(repo, worktrees):
    wt = worktrees(repo, "clash")
    (wt / "newfile").write_text("mine\n")
    ao("ao-preserve", "clash", cwd=repo)
    commit_on(repo, "clash", {"newfile": "theirs\n"})
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "newfile" in res.stdout
    assert (wt / "newfile").read_text() == "theirs\n"
    assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/clash", cwd=repo).strip()


def test_checkpoint_survives_a_worktree_deleted_by_hand(repo, worktrees):
    # The checkpoint is the last known work: a preserve that finds the directory
    # gone records it, and restore applies it (it once said "nothing was saved").
    import shutil
    wt = worktrees(repo, "ck")
    (wt / "README.md").write_text("precious\n")
    ao("ao-preserve", "--keep-worktree", "ck", cwd=repo)
    shutil.rmtree(wt)
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "README.md").read_text() == "precious\n"


def test_ref_kept_after_a_conflict_stays_listed(repo, worktrees):
    wt = worktrees(repo, "kept")
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "kept", cwd=repo)
    commit_on(repo, "kept", {"README.md": "theirs\n"}, "theirs")
    ao("ao-restore", cwd=repo, rc=3)
    rec = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"][0]
    assert rec["state"] == "attention"
    assert rec["preserve_ref"] == "refs/ao/preserved/kept" and rec["preserved_commit"]
    # named, it says what still waits; the run at boot (nothing pending) stays quiet
    res = ao("ao-restore", "kept", cwd=repo, rc=3)
    ref = "refs/ao/preserved/kept"
    assert res.stdout == (f"restore\tattention\tkept\tlive, nothing pending; {ref} still holds "
                          "work its last restore could not put back (git stash show -p "
                          f"--include-untracked {ref}); take what you need of it, then git ao "
                          "resolve kept\n")
    ao("ao-restore", cwd=repo)


def test_every_restore_that_keeps_work_in_its_ref_names_the_command_that_finishes(
        repo, worktrees):
    """A conflict, and an apply into a worktree left with other changes: the line
    names git ao resolve, which then ends the attention."""
    wt = worktrees(repo, "cf")
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "cf", cwd=repo)
    commit_on(repo, "cf", {"README.md": "theirs\n"}, "theirs")
    res = ao("ao-restore", cwd=repo, rc=3)
    assert res.stdout.rstrip("\n").endswith(
        "; resolve the conflicts and git add the files, then git ao resolve cf"), res.stdout
    (wt / "README.md").write_text("both\n")
    git("add", "README.md", cwd=wt)
    ao("ao", "resolve", "cf", cwd=repo)
    assert states(repo)["cf"] == "live"
    other = worktrees(repo, "busy")
    (other / "notes.txt").write_text("saved\n")
    ao("ao-preserve", "busy", cwd=repo)
    git("worktree", "add", "-q", other, "busy", cwd=repo)  # the path taken again, by hand
    (other / "mine.txt").write_text("the user's\n")
    res = ao("ao-restore", "busy", cwd=repo, rc=3)
    assert "has other changes" in res.stdout and res.stdout.rstrip("\n").endswith(
        "; take what you need of it, then git ao resolve busy"), res.stdout


def test_nothing_pending_names_live_sessions_whose_worktree_is_gone(repo, worktrees):
    # A worktree that is a mount point is kept live at shutdown; the reboot clears
    # the tmpfs, and nothing is pending. The command that brings it back is named.
    gone = worktrees(repo, "gone")
    worktrees(repo, "here")
    shutil.rmtree(gone)
    gone.mkdir()  # an empty mount point made again at boot
    res = ao("ao-restore", "-q", cwd=repo, rc=3)  # the boot's quiet run says it too
    assert res.stdout == "" and res.stderr == (f"restore\tattention\tgone\tlive, but its worktree {gone} is empty "
                          "(a tmpfs cleared by a reboot?): git ao-preserve gone records that, "
                          "then git ao-restore re-creates it from its branch\n")
    ao("ao-preserve", "gone", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (gone / "README.md").exists()


def test_attention_names_every_path_not_as_saved(repo, worktrees):
    """A restore rebuilt from the commit whose proof fails (here a smudge filter set
    after the save rewrites what the apply writes) names each path that is not as
    saved, not just that something differs."""
    from tests.trash_helpers import checkout_path_only
    (repo / ".gitattributes").write_text("*.txt filter=up\n")
    for name in ("a.txt", "b.txt", "c.txt"):
        (repo / name).write_text("ABC\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "filtered", cwd=repo)
    git("config", "filter.up.clean", "cat", cwd=repo)
    git("config", "filter.up.smudge", "cat", cwd=repo)
    wt = worktrees(repo, "named")
    (wt / "a.txt").write_text("abc\n")
    (wt / "b.txt").write_text("abd\n")
    ao("ao-preserve", "named", cwd=repo)
    checkout_path_only()
    git("config", "filter.up.smudge", "tr a-z A-Z", cwd=repo)
    res = ao("ao-restore", "named", cwd=repo, rc=None)
    assert "does not hold exactly the saved work: 2 path(s) are not as saved: a.txt (" \
        in res.stdout, res.stdout
    assert "b.txt (" in res.stdout and "c.txt" not in res.stdout
    assert ref_of(repo, "named")  # the work stays in the ref


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symbolic_link_at_the_path_is_named_so_and_left(repo, worktrees, tmp_path, dangling):
    wt = worktrees(repo, "linked")
    (wt / "f").write_text("x")
    ao("ao-preserve", "linked", cwd=repo)
    target = tmp_path / ("nowhere" if dangling else "elsewhere")
    if not dangling:
        target.mkdir()
        (target / "theirs").write_text("keep\n")
    os.symlink(target, wt)
    res = ao("ao-restore", "linked", cwd=repo, rc=1)
    line = next(ln for ln in res.stdout.splitlines() if "\tlinked\t" in ln)
    assert "symbolic link" in line and line.count("pending") == 1, line
    assert os.path.islink(wt)
    if not dangling:
        assert sorted(os.listdir(target)) == ["theirs"]


def test_a_checkpointed_session_whose_worktree_and_branch_were_deleted_comes_back(
        repo, worktrees):
    # The agent's tool removed its worktree and deleted its branch; the checkpoint's
    # save still has the HEAD it was taken on, where restore makes the branch again.
    from tests.worktree_state import assert_restored, exact_state
    wt = worktrees(repo, "gone")
    (wt / "new.txt").write_text("work\n")
    (wt / "README.md").write_text("edited\n")
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "gone", cwd=repo)
    git("worktree", "remove", "--force", wt, cwd=repo)
    git("branch", "-q", "-D", "gone", cwd=repo)
    ao("ao-preserve", "gone", cwd=repo)
    dry = ao("ao-restore", "gone", "-n", cwd=repo)
    assert "would re-create" in dry.stdout, dry.stdout
    ao("ao-restore", "gone", cwd=repo)
    assert_restored(wanted, exact_state(wt))


def test_a_dry_run_refuses_a_worktree_whose_branch_and_every_save_are_gone(
        repo, worktrees):
    wt = worktrees(repo, "bare")
    git("worktree", "remove", "--force", wt, cwd=repo)
    git("branch", "-q", "-D", "bare", cwd=repo)
    ao("ao-preserve", "bare", cwd=repo)
    for extra in (["-n"], []):
        res = ao("ao-restore", "bare", *extra, cwd=repo, rc=1)
        assert "branch 'bare' is gone and no commit was saved" in res.stdout, (extra, res)


def test_a_worktree_deleted_with_staged_work_a_checkpoint_holds_is_recorded_and_restored(
        repo, worktrees):
    # The index left in the registration is the one the checkpoint saved: recording
    # the worktree as gone loses nothing, and restore brings the staged work back.
    from tests.worktree_state import assert_restored, exact_state
    wt = worktrees(repo, "rm")
    (wt / "README.md").write_text("staged\n")
    git("add", "README.md", cwd=wt)
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "rm", cwd=repo)
    shutil.rmtree(wt)
    res = ao("ao-preserve", "rm", cwd=repo)
    assert "already gone" in res.stdout, res.stdout
    ao("ao-restore", "rm", cwd=repo)
    assert_restored(wanted, exact_state(wt))


def test_a_worktree_deleted_with_staged_work_no_save_holds_is_refused(repo, worktrees):
    wt = worktrees(repo, "mv")
    (wt / "README.md").write_text("staged\n")
    git("add", "README.md", cwd=wt)
    shutil.rmtree(wt)
    res = ao("ao-preserve", "mv", cwd=repo, rc=1)
    assert "still holds staged work" in res.stdout, res.stdout


@pytest.mark.parametrize("killed", ["preserve:after-db", "restore:after-worktree-add",
                                    "restore:during-apply"])
def test_the_worktree_a_killed_run_left_at_a_pending_path_stays_that_sessions(
        repo, worktrees, killed):
    """A preserve killed before its removal, or a restore killed after it made the
    worktree, leaves the pending session's own worktree at its path: a hook's
    checkpoint or `git ao add` there registers no second session, and the rerun
    finishes the job."""
    wt = worktrees(repo, "p2")
    dirty(wt)
    before = state(wt)
    if killed.startswith("preserve"):
        ao("ao-preserve", "p2", cwd=repo, rc=None, env=crash_env(killed))
    else:
        ao("ao-preserve", "p2", cwd=repo)
        ao("ao-restore", "p2", cwd=repo, rc=None, env=crash_env(killed))
    assert wt.is_dir()
    res = ao("ao", "add", str(wt), "--id", "p2b", cwd=repo, rc=1)
    assert "already belongs to session 'p2'" in res.stdout + res.stderr, res
    payload = json.dumps({"hook_event_name": "Stop", "cwd": str(wt)})
    subprocess.run(["git", "ao", "checkpoint", "--hook-input", "-q"], cwd=wt, input=payload,
                   text=True, capture_output=True, check=False)
    assert [s["id"] for s in json.loads(ao("ao", "list", "--json", cwd=repo).stdout)[
        "sessions"]] == ["p2"]
    if killed.startswith("preserve"):
        ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", "p2", cwd=repo, rc=None)
    assert_restored(before, state(wt))


def test_two_saves_of_one_path_bring_back_the_newer_only(repo, worktrees):
    """A worktree made by hand at a pending save's path, registered and preserved
    too: two pending saves of one path. A restore of both brings back the newer
    (in any order, at any -j) and refuses the older, naming it: nothing of one is
    ever applied into the other's worktree."""
    wt = worktrees(repo, "q1")
    (wt / "old.txt").write_text("the first session's\n")
    ao("ao-preserve", "q1", cwd=repo)
    git("worktree", "add", "-q", str(wt), "q1", cwd=repo)
    (wt / "new.txt").write_text("the second session's\n")
    ao("ao", "add", str(wt), "--id", "q2", cwd=repo)
    ao("ao-preserve", "q2", cwd=repo)
    for args in (("-n",), ("-j", "2")):
        res = ao("ao-restore", *args, cwd=repo, rc=1)
        assert "'q2''s, saved since" in res.stdout and "q1" in res.stdout, res.stdout
    assert (wt / "new.txt").is_file() and not (wt / "old.txt").exists()
    ao("ao-preserve", "q2", cwd=repo)
    ao("ao-restore", "q1", cwd=repo)
    assert (wt / "old.txt").is_file() and not (wt / "new.txt").exists()


def test_a_new_worktree_at_a_pending_path_is_its_own_session(repo, ao_env, worktrees):
    """`git worktree add` by hand at a pending session's path: registering it is not
    refused (a live session holds it; the save waits beside it), and the save's restore
    is refused without touching it; a worktree no session holds at that path is reused,
    and no message claims an interrupted restore."""
    wt = worktrees(repo, "p1")
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "p1", cwd=repo)
    git("worktree", "add", "-q", str(wt), "p1", cwd=repo)
    (wt / "mine.txt").write_text("mine\n")
    res = ao("ao", "add", str(wt), "--id", "p1b", cwd=repo)
    assert "registered" in res.stdout, res.stdout
    for args in (("-n",), ()):
        res = ao("ao-restore", "p1", *args, cwd=repo, rc=1)
        assert "is now session 'p1b''s worktree" in res.stdout, res.stdout
    doctor = ao("ao", "doctor", cwd=repo, rc=None).stdout
    assert "p1: pending, but" in doctor and "is now session 'p1b''s worktree" in doctor, doctor
    assert (wt / "mine.txt").read_text() == "mine\n"
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", "p1", cwd=repo)
    assert_restored(before, state(wt))
    # Unregistered this time: reused as before, and said as it is.
    ao("ao-preserve", "p1", cwd=repo)
    ao("ao", "forget", "--force", "p1b", cwd=repo)
    git("worktree", "add", "-q", str(wt), "p1", cwd=repo)
    res = ao("ao-restore", "p1", cwd=repo, rc=None)
    assert "interrupted restore" not in res.stdout, res.stdout
