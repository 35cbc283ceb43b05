"""Exactness of both restore paths: index flags, intent-to-add entries, sparse
patterns and permission bits come back as they were, whether the directory is
put back from the trash or checked out again and the save applied (the slow
path, forced by `checkout_path_only`). The states are git's own test recipes
(t1092-sparse-checkout-compatibility, t2203-add-intent, t3903-stash)."""

from __future__ import annotations

import os

import pytest

from tests.support import ao, git, ref_of
from tests.trash_helpers import checkout_path_only
from tests.worktree_state import assert_restored, exact_state

PATHS = ("trash", "checkout")


def _round_trip(repo, wt, sid, how):
    """Preserve and restore `sid` the way `how` names; the whole state must come back."""
    before = exact_state(wt)
    ao("ao-preserve", sid, cwd=repo)
    assert not wt.exists()
    if how == "checkout":
        checkout_path_only()
    res = ao("ao-restore", sid, cwd=repo)
    assert ("from the trash" in res.stdout) == (how == "trash"), res.stdout
    assert_restored(before, exact_state(wt))
    assert ref_of(repo, sid) is None
    return res


# ---------------------------------------------------------------- intent-to-add


@pytest.mark.parametrize("how", PATHS)
def test_intent_to_add_over_a_staged_deletion(repo, worktrees, how):
    # t2203 'intent to add': `git rm`, the file written again, `git add -N`
    wt = worktrees(repo, "itadel")
    git("rm", "-q", "README.md", cwd=wt)
    (wt / "README.md").write_text("hello\n")  # as committed: still a deletion and an add
    (wt / "file").write_text("file\n")
    (wt / "elif").write_text("elif\n")
    git("add", "-N", "file", cwd=wt)
    git("add", "elif", cwd=wt)
    git("add", "-N", "README.md", cwd=wt)
    assert git("status", "--porcelain", "-uno", cwd=wt).splitlines() == [
        "DA README.md", "A  elif", " A file"]
    _round_trip(repo, wt, "itadel", how)


@pytest.mark.parametrize("how", PATHS)
def test_intent_to_add_whose_file_is_gone(repo, worktrees, how):
    # An intent-to-add entry is in neither tree once its file is deleted; status
    # shows it as a deleted empty blob, like a committed empty file deleted.
    wt = worktrees(repo, "itagone")
    (wt / "empty").write_text("")
    git("add", "empty", cwd=wt)
    git("commit", "-qm", "an empty file", cwd=wt)
    for rel in ("gone", "deep/er/gone"):
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text("soon gone\n")
        git("add", "-N", rel, cwd=wt)
        os.unlink(wt / rel)
    os.rmdir(wt / "deep" / "er")
    os.unlink(wt / "empty")
    git("rm", "-q", "--cached", "README.md", cwd=wt)
    git("add", "-N", "README.md", cwd=wt)
    os.unlink(wt / "README.md")
    _round_trip(repo, wt, "itagone", how)
