"""What git-ao says of a pending session whose preserve ref is gone is true: an
interrupted restore is named as such (its rerun the fix), the git gc advice
comes only when nothing else keeps the commit, and when the saved commit is
gone too, the trash copy (which holds the whole worktree) is named, restore
puts it back as its dry run says, and forget claims to keep only what is there."""

from __future__ import annotations

import json
import shutil

from tests.support import ao, crash_env, git, sessions_by_id

REF = "refs/ao/preserved/"


def _move_branch(repo, branch):
    """A commit on `branch` made from the main repository: the trash copy no longer
    fits, so a restore checks the worktree out again and applies the work."""
    tree = git("rev-parse", f"{branch}^{{tree}}", cwd=repo).strip()
    tip = git("commit-tree", "-p", branch, "-m", "moved", tree, cwd=repo).strip()
    git("update-ref", f"refs/heads/{branch}", tip, cwd=repo)


def _hints(repo, sid):
    """The hint lines of list and show, and doctor's line, of session `sid`."""
    listed = ao("ao", "list", cwd=repo).stderr
    shown = ao("ao", "show", sid, cwd=repo, rc=None).stderr
    doctor = [ln for ln in ao("ao", "doctor", cwd=repo, rc=None).stdout.splitlines()
              if f"{sid}:" in ln]
    return listed, shown, "\n".join(doctor)


def test_a_restore_killed_right_after_it_deleted_the_ref_is_named_with_its_rerun(
        repo, worktrees):
    wt = worktrees(repo, "k1")
    (wt / "work.txt").write_text("work\n")
    ao("ao-preserve", "k1", cwd=repo)
    _move_branch(repo, "k1")
    ao("ao-restore", "k1", cwd=repo, rc=None, env=crash_env("restore:after-ref-delete"))
    assert git("rev-parse", "-q", "--verify", REF + "k1", cwd=repo, check=False).strip() == ""
    assert sessions_by_id(repo)["k1"]["state"] == "pending"
    for said in _hints(repo, "k1"):
        assert "a restore started" in said and "did not finish" in said, said
        assert "git ao-restore k1 finishes it" in said, said
        assert "by hand" not in said and "fetch --prune" not in said, said
        assert "keeping the commit from git gc" not in said, said
    res = ao("ao-restore", "k1", cwd=repo)
    assert res.stdout.startswith("restore\tok\tk1\trestored at"), res.stdout
    assert (wt / "work.txt").read_text() == "work\n"
    assert ao("ao", "list", cwd=repo).stderr == ""


def test_a_deleted_ref_whose_commit_the_history_keeps_gives_no_gc_advice(repo, worktrees):
    wt = worktrees(repo, "d1")
    (wt / "work.txt").write_text("work\n")
    ao("ao-preserve", "d1", cwd=repo)
    commit = git("rev-parse", REF + "d1", cwd=repo).strip()
    git("update-ref", "-d", REF + "d1", cwd=repo)
    for said in _hints(repo, "d1"):
        assert f"its ref {REF}d1 was deleted" in said, said
        assert "refs/ao/history/d1, the session's history, keeps it from git gc" in said, said
        assert "puts the ref back" not in said, said
    # Nothing keeps it but the record: then putting the ref back is the advice.
    git("update-ref", "-d", "refs/ao/history/d1", cwd=repo)
    for said in _hints(repo, "d1"):
        assert f"git update-ref {REF}d1 {commit} puts the ref back" in said, said
        assert "a restore started" not in said, said


def test_a_ref_moved_off_the_saved_commit_is_said_so_and_never_put_back(repo, worktrees):
    """A preserve ref that holds another commit now was moved, not deleted: putting
    it back would drop what it holds, so the advice keeps the saved commit under a
    name of its own."""
    wt = worktrees(repo, "m1")
    (wt / "work.txt").write_text("work\n")
    ao("ao-preserve", "m1", cwd=repo)
    commit = git("rev-parse", REF + "m1", cwd=repo).strip()
    other = git("commit-tree", "-m", "someone else's", "HEAD^{tree}", cwd=repo).strip()
    git("update-ref", REF + "m1", other, cwd=repo)
    git("update-ref", "-d", "refs/ao/history/m1", cwd=repo)
    for said in _hints(repo, "m1"):
        assert f"its ref {REF}m1 now holds {other}" in said, said
        assert "was deleted" not in said and "puts the ref back" not in said, said
        assert f"git branch ao-saved-m1 {commit}" in said, said


def _gone(repo, worktrees, sid):
    """A session preserved with an edit and an untracked file, whose preserve ref and
    history were deleted and the commit pruned: the trash copy alone holds it."""
    wt = worktrees(repo, sid)
    (wt / "README.md").write_text("edit\n")
    (wt / "untracked.txt").write_text("new\n")
    ao("ao-preserve", sid, cwd=repo)
    git("update-ref", "-d", REF + sid, cwd=repo)
    git("update-ref", "-d", f"refs/ao/history/{sid}", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    return wt


def test_a_gone_commit_names_the_trash_copy_and_restore_puts_it_back_as_its_dry_run_says(
        repo, worktrees):
    wt = _gone(repo, worktrees, "w")
    copy = json.loads(ao("ao", "show", "w", "--json", cwd=repo, rc=1).stdout)[
        "session"]["trash"][0]["path"]
    for said in _hints(repo, "w"):
        assert f"the trash copy {copy} holds the worktree as preserve took it" in said, said
        assert "cannot be restored" not in said, said
    forget = ao("ao", "forget", "-n", "--force", "w", cwd=repo).stdout
    assert f"kept: the trash copy {copy}" in forget and REF not in forget, forget
    dry = ao("ao-restore", "-n", "w", cwd=repo).stdout
    assert dry.startswith("restore\tok\tw\twould put the worktree back at"), dry
    assert "is gone, so the copy would not be compared with the save" in dry, dry
    res = ao("ao-restore", "w", cwd=repo)
    assert res.stdout.startswith(f"restore\tok\tw\trestored at {wt} from the trash"), res.stdout
    assert "could not be compared with the save" in res.stdout, res.stdout
    assert (wt / "README.md").read_text() == "edit\n"
    assert (wt / "untracked.txt").read_text() == "new\n"
    assert git("status", "--porcelain", cwd=wt) == " M README.md\n?? untracked.txt\n"


def test_a_gone_commit_with_the_branch_moved_checks_out_again_naming_the_copy(
        repo, worktrees):
    """The trash copy cannot be put back (the branch moved): the dry run and the real
    run both say the work does not come back and name the copy, which prune keeps."""
    _gone(repo, worktrees, "m")
    _move_branch(repo, "m")
    # The dry run's status and exit status are the real run's: attention, 3.
    dry = ao("ao-restore", "-n", "m", cwd=repo, rc=3).stdout
    assert dry.startswith("restore\tattention\tm\t"), dry
    assert "by a checkout without the work (its saved commit" in dry, dry
    assert "holds the worktree as preserve took it" in dry and "may conflict" not in dry, dry
    res = ao("ao-restore", "m", cwd=repo, rc=3)
    assert "is gone; the worktree is back at" in res.stdout, res.stdout
    assert "holds the worktree as preserve took it, untracked files included" in res.stdout
    assert "cannot be compared" not in res.stdout, res.stdout
    pruned = ao("ao-prune", "-n", cwd=repo).stdout
    assert "holds the session's work, whose saved commit was gone" in pruned, pruned
    # Back, but its work is only in the trash copy: attention, named by list, show
    # and doctor, until the copy is removed.
    copy = json.loads(ao("ao", "show", "m", "--json", cwd=repo).stdout)[
        "session"]["trash"][0]["path"]
    assert sessions_by_id(repo)["m"]["state"] == "attention"
    assert json.loads(ao("ao", "show", "m", "--json", cwd=repo).stdout)[
        "session"]["state"] == "attention"
    for said in _hints(repo, "m"):
        assert f"the trash copy {copy} holds the worktree as preserve took it" in said, said
    shutil.rmtree(copy.rsplit("/", 1)[0])
    assert sessions_by_id(repo)["m"]["state"] == "live"
    assert not any(_hints(repo, "m"))


def test_forget_names_only_the_refs_that_are_there(repo, worktrees):
    wt = worktrees(repo, "f")
    (wt / "work.txt").write_text("work\n")
    ao("ao-preserve", "f", cwd=repo)
    git("update-ref", "-d", REF + "f", cwd=repo)
    dry = ao("ao", "forget", "-n", "--force", "f", cwd=repo).stdout
    res = ao("ao", "forget", "--force", "f", cwd=repo).stdout
    for line in (dry, res):
        assert "kept: refs/ao/history/f, the trash copy " in line, line
        assert REF + "f" not in line, line
