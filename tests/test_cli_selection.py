"""Which sessions a command acts on: only the ones named, each id on its own."""

import json
import os

from tests.conftest import ao, git


def _records(stdout):
    return [ln.split("\t") for ln in stdout.splitlines()]


def test_prune_force_id_never_touches_another_sessions_ref(repo, worktrees):
    a = worktrees(repo, "a")
    (a / "a.txt").write_text("a\n")
    ao("ao-preserve", "a", cwd=repo)
    b = worktrees(repo, "b")
    (b / "b.txt").write_text("b\n")
    # b's checkpoint: its work is also in its worktree, so a general prune may drop it
    ao("ao-preserve", "--keep-worktree", "b", cwd=repo)
    assert "refs/ao/preserved/b" in ao("ao-prune", "-n", cwd=repo).stdout
    for args in (["-n"], []):
        res = ao("ao-prune", "--force", "a", *args, cwd=repo)
        assert {r[2] for r in _records(res.stdout)} == {"a"}, res.stdout
        assert "refs/ao/preserved/b" not in res.stdout
    assert git("rev-parse", "--verify", "-q", "refs/ao/preserved/b", cwd=repo).strip()
    assert not git("for-each-ref", "refs/ao/preserved/a", cwd=repo).strip()


def test_an_unknown_id_is_refused_on_its_own_and_the_others_go_on(repo, worktrees):
    for sid in ("s1", "s2"):
        wt = worktrees(repo, sid)
        (wt / "new.txt").write_text(sid)
    res = ao("ao-preserve", "s1", "nosuch", "s2", cwd=repo, rc=1)
    recs = _records(res.stdout)
    assert ["preserve", "refused", "nosuch", "no session 'nosuch' (see 'git ao list')"] in recs
    assert {r[2] for r in recs if r[1] == "ok"} == {"s1", "s2"}
    res = ao("ao-restore", "s1", "nosuch", cwd=repo, rc=1)
    recs = _records(res.stdout)
    assert [r[:3] for r in recs] == [["restore", "refused", "nosuch"], ["restore", "ok", "s1"]]
    res = ao("ao-restore", "--json", "nosuch", "s2", cwd=repo, rc=1)
    doc = json.loads(res.stdout)
    assert [(r["id"], r["status"]) for r in doc["results"]] == [("nosuch", "refused"),
                                                                ("s2", "ok")]
    for cmd in (["ao", "kill"], ["ao", "forget"], ["ao-prune", "--force"]):
        res = ao(*cmd, "nosuch", "s1", "-n", cwd=repo, rc=1)
        recs = _records(res.stdout)
        assert recs[0][1:3] == ["refused", "nosuch"], (cmd, res.stdout)
        assert [r[2] for r in recs[1:]] == ["s1"], (cmd, res.stdout)


def test_same_worktree_name_in_two_repositories_gets_a_free_id(repo, make_repo):
    other = make_repo()
    paths = []
    for r in (repo, other):
        wt = r / ".claude" / "worktrees" / "feature"
        git("worktree", "add", "-q", "-b", "feature", wt, cwd=r)
        paths.append(wt)
    ao("ao", "add", cwd=paths[0])
    (paths[1] / "work.txt").write_text("w\n")
    res = ao("ao-preserve", cwd=paths[1])  # registers the session of the worktree first
    second = f"{other.name}-feature"
    assert res.stdout.split("\t")[:3] == ["preserve", "ok", second]
    listed = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)["sessions"]
    assert {s["id"]: s["workspace_path"] for s in listed} == {
        "feature": str(paths[0]), second: str(paths[1])}
    wt3 = other / "third"
    git("worktree", "add", "-q", "-b", "third", wt3, cwd=other)
    res = ao("ao", "add", wt3, "--id", "feature", cwd=other, rc=1)
    assert "session 'feature' already exists" in res.stderr and "--id" in res.stderr


def test_default_ids_in_one_repository_are_gits_names_of_its_worktrees(repo, tmp_path):
    """As git-ao(1) says under add: git's name for the worktree (its admin dir under
    .git/worktrees, a number appended when another worktree has the name), then
    <repo>-<name>, <repo>-<name>-2, ... while a session of that id exists."""
    paths = {}
    for n, rel in enumerate(("a b", "a-b", "x/a-b", "y/a-b")):
        paths[rel] = tmp_path / "wts" / rel
        git("worktree", "add", "-q", "-b", f"b{n}", paths[rel], cwd=repo)
        ao("ao", "add", paths[rel], cwd=repo)
    listed = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert {s["workspace_path"]: s["id"] for s in listed} == {
        str(paths["a b"]): "a-b", str(paths["a-b"]): "a-b1", str(paths["x/a-b"]): "a-b2",
        str(paths["y/a-b"]): "a-b3"}
    # git gives a name back once its worktree is removed; the id stays with the
    # ended session's record, so the next one is <repo>-<name>, then -2.
    got = []
    for n, rel in enumerate(("z1/a-b", "z2/a-b")):
        ao("ao", "kill", "a-b" if n == 0 else got[-1], cwd=repo)
        git("worktree", "prune", cwd=repo)
        wt = tmp_path / "wts" / rel
        git("worktree", "add", "-q", "-b", f"z{n}", wt, cwd=repo)
        assert os.path.isdir(repo / ".git" / "worktrees" / "a-b")
        got.append(json.loads(ao("ao", "add", wt, "--json", cwd=repo).stdout)["results"][0]["id"])
    assert got == [f"{repo.name}-a-b", f"{repo.name}-a-b-2"]


def test_free_ids_in_repositories_whose_git_dir_is_hidden_or_oddly_named(repo, tmp_path):
    """A bare clone laid out as <project>/.bare with its worktrees beside it, and a
    repository whose directory name is no valid id: automatic ids still work."""
    made = {}
    for project in ("alpha", "beta", "My Project"):
        top = tmp_path / "bare" / project
        git("clone", "-q", "--bare", repo, top / ".bare", cwd=tmp_path)
        (top / ".git").write_text("gitdir: ./.bare\n")
        git("worktree", "add", "-q", "-b", f"feature-{project[0]}", top / "feature", cwd=top)
        made[project] = top / "feature"
    for wt in made.values():
        ao("ao", "add", cwd=wt)
    listed = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)["sessions"]
    assert {s["id"]: s["workspace_path"] for s in listed} == {
        "feature": str(made["alpha"]), "beta-feature": str(made["beta"]),
        "My-Project-feature": str(made["My Project"])}


def test_every_outcome_says_the_state_the_session_is_left_in(repo, worktrees, ao_env):
    paths = {sid: worktrees(repo, sid) for sid in ("p", "c", "k", "f")}
    for sid, wt in paths.items():
        (wt / "new.txt").write_text(sid)
    doc = json.loads(ao("ao-preserve", "p", "--json", cwd=repo).stdout)
    assert doc["results"][0]["state"] == "pending"
    doc = json.loads(ao("ao-preserve", "c", "--keep-worktree", "--json", cwd=repo).stdout)
    assert doc["results"][0]["state"] == "live"
    doc = json.loads(ao("ao-restore", "p", "--json", "--no-launch", cwd=repo).stdout)
    assert [r["state"] for r in doc["results"] if r["action"] == "restore"] == ["live"]
    (paths["k"] / "new.txt").unlink()  # kill removes only clean worktrees
    doc = json.loads(ao("ao", "kill", "k", "--json", cwd=repo).stdout)
    assert doc["results"][0]["state"] == "terminated"
    doc = json.loads(ao("ao", "forget", "f", "--json", cwd=repo).stdout)
    assert doc["results"][0]["state"] is None


def test_a_failed_move_into_the_trash_says_the_session_is_pending(repo, worktrees, ao_env):
    wt = worktrees(repo, "t")
    (wt / "new.txt").write_text("work\n")
    trash = ao_env / "aodata" / "trash"
    if trash.is_dir():
        trash.rmdir()
    trash.write_text("not a directory\n")
    res = ao("ao-preserve", "t", "--json", cwd=repo, rc=None)
    (rec,) = json.loads(res.stdout)["results"]
    assert rec["status"] in ("failed", "refused") and res.returncode == 1
    listed = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert rec["state"] == listed[0]["state"]
    if rec["state"] == "pending":
        assert "pending" in rec["message"]
    assert wt.exists()


def test_a_worktree_name_that_is_no_valid_id_still_gets_a_default_one(repo, tmp_path):
    """An agent's quit handler runs git ao-preserve with no id from inside its
    worktree, whatever the worktree is called."""
    for name, want in (("ünï©ødé", "unide"), ("-dash", "dash")):
        wt = tmp_path / name
        git("worktree", "add", "-q", "-b", f"b{want}", "--", wt, cwd=repo)
        (wt / "work.txt").write_text("work\n")
        ao("ao-preserve", cwd=wt)
        listed = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
        assert want in {s["id"] for s in listed}
