"""What a new user, reading only the README and the man pages, found breaking:
each refusal or error says what is true and what to do."""

from __future__ import annotations

import json

import pytest

from tests.support import ao, git


def _deleted_branch(repo, worktrees):
    """A session on 'feat' with a checkpoint, whose branch ref is then deleted
    (`git update-ref -d`) in its worktree. Returns (worktree, the branch's commit)."""
    wt = worktrees(repo, "feat")
    (wt / "base.txt").write_text("on feat\n")
    git("add", "base.txt", cwd=wt)
    git("commit", "-qm", "feat's", cwd=wt)
    tip = git("rev-parse", "HEAD", cwd=wt).strip()
    (wt / "work.txt").write_text("uncommitted\n")
    ao("ao", "checkpoint", cwd=wt)
    git("update-ref", "-d", "refs/heads/feat", cwd=wt)
    return wt, tip


@pytest.mark.parametrize("dry", [False, True])
def test_a_deleted_branch_is_named_deleted_with_the_branch_that_brings_it_back(
        repo, worktrees, dry):
    """A branch ref deleted under a session whose history knows its commit is no
    unborn branch: every refusal (checkpoint, --at, preserve, doctor) says it was
    deleted and names `git branch feat <commit>`, never "commit once first"."""
    wt, tip = _deleted_branch(repo, worktrees)
    n = ["-n"] if dry else []
    back = f"git branch feat {tip[:12]}"
    outs = [ao("ao", "checkpoint", *n, cwd=wt, rc=1).stdout,
            ao("ao-restore", "feat", "--at", "1", *n, cwd=repo, rc=1).stdout,
            ao("ao-preserve", "feat", *n, cwd=repo, rc=1).stdout]
    if not dry:
        checks = json.loads(ao("ao", "doctor", "--json", cwd=repo, rc=1).stdout)["checks"]
        outs.append("".join(c["detail"] for c in checks if c["name"] == "preserve"))
    for out in outs:
        assert "branch 'feat'" in out and "was deleted" in out, out
        assert back in out, out
        assert "commit once first" not in out, out
    git("branch", "feat", tip, cwd=repo)
    ao("ao", "checkpoint", cwd=wt)
    assert (wt / "work.txt").read_text() == "uncommitted\n"


def test_a_branch_never_committed_keeps_commit_once_first(repo, worktrees):
    """An orphan branch with no commit ever, in a session whose history knows
    other branches only: still "commit once first"."""
    wt = worktrees(repo, "fresh")
    ao("ao", "checkpoint", cwd=wt)
    git("checkout", "-q", "--orphan", "scratch", cwd=wt)
    out = ao("ao", "checkpoint", cwd=wt, rc=1).stdout
    assert "has no commit yet (unborn); commit once first" in out, out
    assert "deleted" not in out
