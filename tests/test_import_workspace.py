"""A daemon session of a workspace project spans a root worktree and one worktree per
repository inside it: imported, preserved and restored whole."""

from __future__ import annotations

import json

from tests.daemon_schema import daemon_db, daemon_session
from tests.support import ao, dirty, git, sessions_by_id


def test_workspace_session_is_imported_preserved_and_restored_whole(repo, make_repo, tmp_path):
    api, web = make_repo(), make_repo()
    root = tmp_path / "ws" / "ws-1"
    git("worktree", "add", "-q", "-b", "ws-1", root, cwd=repo)
    children = {}
    for name, r in (("api", api), ("web", web)):
        children[name] = root / name
        git("worktree", "add", "-q", "-b", "ws-1", children[name], cwd=r)
        dirty(children[name])
    (root / "NOTES.md").write_text("root work\n")
    db = daemon_db(tmp_path / "ao.db", 103, projects=[("ws", str(root.parent), "workspace")],
                   sessions=[daemon_session("ws-1", "ws", root, harness="codex")],
                   repos=[{"project_id": "ws", "name": n, "relative_path": n}
                          for n in children],
                   worktrees=[{"session_id": "ws-1", "repo_name": n, "branch": "ws-1",
                               "worktree_path": str(p)} for n, p in children.items()]
                   + [{"session_id": "ws-1", "repo_name": "old", "branch": "ws-1",
                       "worktree_path": str(root / "old"), "state": "removed"}])
    res = ao("ao", "import", "--json", "--from", db, cwd=repo)
    assert {r["id"]: r["status"] for r in json.loads(res.stdout)["results"]} == {
        "ws-1": "ok", "ws-1.api": "ok", "ws-1.web": "ok"}
    got = sessions_by_id(repo)
    assert {k: (v["group"], v["harness"], v["workspace_path"]) for k, v in got.items()} == {
        "ws-1": ("ws-1", "codex", str(root)),
        "ws-1.api": ("ws-1", "codex", str(children["api"])),
        "ws-1.web": ("ws-1", "codex", str(children["web"]))}
    # Each repository's worktree is saved under its own ref in its own repository.
    ao("ao-preserve", "--all", "-j", "3", cwd=repo)
    assert not root.exists()
    for r, sid in ((repo, "ws-1"), (api, "ws-1.api"), (web, "ws-1.web")):
        assert git("rev-parse", "--verify", "-q", f"refs/ao/preserved/{sid}", cwd=r).strip()
    ao("ao-restore", "-j", "3", cwd=repo)
    assert (root / "NOTES.md").read_text() == "root work\n"
    for p in children.values():
        assert (p / "README.md").read_text() == "hello\nstaged line\nunstaged line\n"
        assert not (p / "data.bin").exists()
    assert {v["state"] for v in sessions_by_id(repo).values()} == {"live"}


def test_workspace_root_that_is_not_a_worktree(repo, make_repo, tmp_path):
    api = make_repo()
    root = tmp_path / "ws" / "ws-2"
    root.mkdir(parents=True)
    git("worktree", "add", "-q", "-b", "ws-2", root / "api", cwd=api)
    db = daemon_db(tmp_path / "ao.db", 9, projects=[("ws", str(root.parent), "workspace")],
                   sessions=[daemon_session("ws-2", "ws", root)],
                   worktrees=[{"session_id": "ws-2", "repo_name": "api", "branch": "ws-2",
                               "worktree_path": str(root / "api")}])
    res = ao("ao", "import", "--json", "--from", db, cwd=repo)
    out = {r["id"]: r for r in json.loads(res.stdout)["results"]}
    assert (out["ws-2"]["status"], out["ws-2.api"]["status"]) == ("nothing", "ok")
    assert "is not a linked worktree" in out["ws-2"]["message"]
    assert sessions_by_id(repo)["ws-2.api"]["group"] == "ws-2"


def test_workspace_root_whose_path_holds_a_newline_is_refused_for_that_reason(
        repo, make_repo, tmp_path):
    """A root that is a linked worktree at a path with a newline is not called a
    plain directory: it is refused, as `git ao add` refuses it, and so is its child."""
    api = make_repo()
    root = tmp_path / "w\ns" / "ws-3"
    git("worktree", "add", "-q", "-b", "ws-3", root, cwd=repo)
    git("worktree", "add", "-q", "-b", "ws-3", root / "api", cwd=api)
    db = daemon_db(tmp_path / "ao.db", 9, projects=[("ws", str(root.parent), "workspace")],
                   sessions=[daemon_session("ws-3", "ws", root)],
                   worktrees=[{"session_id": "ws-3", "repo_name": "api", "branch": "ws-3",
                               "worktree_path": str(root / "api")}])
    res = ao("ao", "import", "--json", "--from", db, cwd=repo, rc=1)
    out = {r["id"]: (r["status"], r["message"]) for r in json.loads(res.stdout)["results"]}
    said = "paths containing a newline are not supported"
    assert out == {
        "ws-3": ("refused", f"{said}: {str(root)!r}"),
        "ws-3.api": ("refused", f"{said}: {str(root / 'api')!r} (part of daemon session ws-3)")}
