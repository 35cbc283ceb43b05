"""git's repository variables in the caller's shell never choose the session, and a
relative AO_DATA_DIR means the directory it named when the command started."""

import json

from tests.conftest import ao


def test_git_work_tree_never_redirects_a_plain_preserve(repo, worktrees):
    here = worktrees(repo, "here")
    other = worktrees(repo, "other")
    (here / "mine.txt").write_text("mine\n")
    (other / "theirs.txt").write_text("theirs\n")
    res = ao("ao-preserve", cwd=here, env={"GIT_WORK_TREE": str(other)})
    assert "warning: GIT_WORK_TREE set in the environment; ignored" in res.stderr
    assert res.stdout.split("\t")[:3] == ["preserve", "ok", "here"]
    assert other.exists() and (other / "theirs.txt").exists()
    assert not here.exists()
    sessions = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)["sessions"]
    assert {s["id"]: s["state"] for s in sessions} == {"here": "pending", "other": "live"}
