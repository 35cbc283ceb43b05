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


# ---------------------------------------------------------------- sparse checkouts


def _t1092_repo(repo):
    """The branches of t1092's setup that its reset tests use, on top of `repo`'s
    first commit: base, update-folder1, update-folder2, update-deep, rename-base
    and rename-out-to-out. The main worktree is left on main."""
    files = {"a": "a\n", "e": "after deep\n", "deep/a": "a\n", "deep/deeper1/a": "a\n",
             "deep/deeper1/deepest/a": "a\n", "deep/deeper2/a": "a\n", "folder1/a": "a\n",
             "folder1/0/1": "", "folder2/a": "a\n", "folder2/0/1": "\n", "x/a": "a\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "t1092 layout", cwd=repo)
    git("branch", "base", cwd=repo)
    for d in ("folder1", "folder2", "deep"):
        git("checkout", "-q", "-b", f"update-{d}", "base", cwd=repo)
        (repo / d / "a").write_text(f"updated {d}\n")
        git("commit", "-qam", f"update {d}", cwd=repo)
    git("checkout", "-q", "-b", "rename-base", "base", cwd=repo)
    text = "matching\nlines\nhelp\ninexact\nrenames\n"
    for d in ("folder1", "folder2", "deep/deeper1"):
        (repo / d / "larger-content").write_text(text)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "add interesting rename content", cwd=repo)
    git("checkout", "-q", "-b", "rename-out-to-out", "rename-base", cwd=repo)
    git("mv", "folder1/a", "folder2/b", cwd=repo)
    git("mv", "folder1/larger-content", "folder2/edited-content", cwd=repo)
    with open(repo / "folder2" / "edited-content", "a") as fh:
        fh.write("\n")
    with open(repo / "deep" / "deeper1" / "a", "a") as fh:
        fh.write("stuff\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "rename folder1/... to folder2/...", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)


SPARSE = {"cone": ["--cone", "deep"], "non-cone": ["--no-cone", "/*", "!/*/", "/deep/"],
          "sparse-index": ["--cone", "--sparse-index", "deep"]}


def _sparse_worktree(repo, worktrees, name, mode, start="base"):
    _t1092_repo(repo)
    wt = worktrees(repo, name, branch=name)
    git("reset", "-q", "--hard", start, cwd=wt)
    git("sparse-checkout", "init", *SPARSE[mode][:1 + (mode == "sparse-index")], cwd=wt)
    git("sparse-checkout", "set", *SPARSE[mode], cwd=wt)
    assert not (wt / "folder1").exists()
    return wt


def _skip_worktree(wt):
    return {ln[2:] for ln in git("ls-files", "-v", cwd=wt).splitlines() if ln.startswith("S ")}


@pytest.mark.parametrize("how", PATHS)
def test_intent_to_add_outside_the_cone(repo, worktrees, how):
    # t1092 'intent-to-add with --sparse outside sparse-checkout'. (Its other recipe,
    # `git sparse-checkout set` over an intent-to-add entry, aborts in git 2.39
    # and leaves the same state.)
    wt = _sparse_worktree(repo, worktrees, "itac", "cone")
    for rel in ("folder1/newita", "newdir/newita"):
        (wt / rel).parent.mkdir()
        (wt / rel).write_text("text\n")
        git("add", "--sparse", "--intent-to-add", rel, cwd=wt)
    _round_trip(repo, wt, "itac", how)


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
