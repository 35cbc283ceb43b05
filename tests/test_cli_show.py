"""git ao show says what is true now: no stat once the work is back, and a clear
line when the saved commit is gone."""

import json

from tests.conftest import ao, git


def test_show_after_a_restore_prints_no_old_stat(repo, worktrees):
    wt = worktrees(repo, "r")
    (wt / "new.txt").write_text("work\n")
    ao("ao-preserve", "r", cwd=repo)
    assert "new.txt" in ao("ao", "show", "r", cwd=repo).stdout
    ao("ao-restore", "r", cwd=repo)
    out = ao("ao", "show", "r", cwd=repo).stdout
    assert "new.txt" not in out and "changed" not in out
    doc = json.loads(ao("ao", "show", "r", "--json", cwd=repo).stdout)
    assert doc["stat"] == "" and doc["session"]["preserve_ref"] is None


def test_show_says_when_the_saved_commit_was_garbage_collected(repo, worktrees):
    wt = worktrees(repo, "g")
    (wt / "new.txt").write_text("work\n")
    ao("ao-preserve", "g", cwd=repo)
    git("update-ref", "-d", "refs/ao/preserved/g", cwd=repo)
    # The session's history keeps every save reachable: it goes too.
    git("update-ref", "-d", "refs/ao/history/g", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    res = ao("ao", "show", "g", cwd=repo, rc=1)
    assert "preserved_commit:" in res.stdout
    assert res.stderr.startswith("error: the saved commit ") and "is gone" in res.stderr
    res = ao("ao", "show", "g", "--json", cwd=repo, rc=1)
    assert json.loads(res.stdout)["commit_gone"] is True
