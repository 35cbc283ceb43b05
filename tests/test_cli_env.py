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


def test_read_only_commands_create_no_state(repo, worktrees, ao_env):
    data = ao_env / "aodata"
    assert not data.exists()
    for args in (["ao", "list"], ["ao", "list", "--json"], ["ao", "doctor"],
                 ["ao", "config", "list"], ["ao", "log"]):
        ao(*args, cwd=repo, rc=None)
        assert not data.exists(), args
    ao("ao", "show", "nosuch", cwd=repo, rc=1)
    assert not data.exists()
    worktrees(repo, "s1")
    db = data / "git-ao.db"
    # SQLite's own -wal and -shm files of a read-only connection are not git-ao state.
    def names():
        return sorted(p.name for p in data.iterdir() if not p.name.endswith(("-wal", "-shm")))

    before = names()
    stamp = db.stat().st_mtime_ns
    assert [r["id"] for r in json.loads(
        ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]] == ["s1"]
    ao("ao", "show", "s1", cwd=repo)
    assert names() == before
    assert db.stat().st_mtime_ns == stamp


def test_a_relative_ao_data_dir_is_resolved_once_where_the_command_starts(repo, worktrees,
                                                                          tmp_path):
    wt = worktrees(repo, "rel", register=False)
    env = {"AO_DATA_DIR": "rel-data"}
    ao("ao", "add", "-C", wt, cwd=tmp_path, env=env)
    assert (tmp_path / "rel-data" / "git-ao.db").exists()
    assert not (wt / "rel-data").exists()
    res = ao("ao", "list", "--all", "--json", cwd=tmp_path, env=env)
    assert [s["id"] for s in json.loads(res.stdout)["sessions"]] == ["rel"]
