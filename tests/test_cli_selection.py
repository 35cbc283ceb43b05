"""Which sessions a command acts on: only the ones named, each id on its own."""

import json

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
