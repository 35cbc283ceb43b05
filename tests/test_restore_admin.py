"""A restore brings back whatever the worktree's git admin dir held, or names it."""

import json
from pathlib import Path

from tests.support import ao, dirty, git
from tests.trash_helpers import checkout_path_only


def _admin(wt) -> Path:
    return Path(git("rev-parse", "--path-format=absolute", "--git-dir", cwd=wt).strip())


def _tool_files(wt):
    a = _admin(wt)
    (a / "codex-worktree.json").write_text('{"version": 1, "ownerThreadId": "t-1"}')
    (a / "mytool").mkdir()
    (a / "mytool" / "state.db").write_bytes(b"\x00state")
    return {"codex-worktree.json": (a / "codex-worktree.json").read_bytes(),
            "mytool/state.db": (a / "mytool" / "state.db").read_bytes()}


def test_trash_restore_puts_back_every_admin_file(repo, worktrees):
    wt = worktrees(repo, "w1")
    dirty(wt)
    want = _tool_files(wt)
    ao("ao-preserve", "w1", cwd=repo)
    res = ao("ao-restore", "w1", "--json", cwd=repo)
    r = json.loads(res.stdout)["results"][0]
    assert r["from_trash"] and "admin_not_restored" not in r
    a = _admin(wt)
    assert {k: (a / k).read_bytes() for k in want} == want


def test_copy_admin_keeps_what_git_wrote_and_names_what_it_leaves(tmp_path):
    from git_ao.restore import from_trash
    saved, admin = tmp_path / "saved", tmp_path / "admin"
    for d in (saved / "refs" / "worktree", admin):
        d.mkdir(parents=True)
    for name, data in (("HEAD", "saved head"), ("gitdir", "old"), ("index", "idx"),
                       ("locked", "mine"), ("index.lock", ""), ("git-ao-index.1", ""),
                       ("refs/worktree/x", "1" * 40), ("tool.json", "{}")):
        (saved / name).write_text(data)
    (saved / "link").symlink_to("tool.json")
    for name in ("HEAD", "gitdir"):
        (admin / name).write_text("git wrote it")
    assert from_trash.copy_admin(str(saved), str(admin)) == ["locked"]
    assert sorted(str(p.relative_to(admin)) for p in admin.rglob("*")) == [
        "HEAD", "gitdir", "index", "link", "refs", "refs/worktree", "refs/worktree/x",
        "tool.json"]
    assert (admin / "HEAD").read_text() == "git wrote it" and (admin / "link").is_symlink()


def test_checkout_restore_puts_back_other_tools_admin_files(repo, worktrees):
    wt = worktrees(repo, "w2")
    dirty(wt)
    want = _tool_files(wt)
    ao("ao-preserve", "w2", cwd=repo)
    checkout_path_only()
    res = ao("ao-restore", "w2", "--json", cwd=repo)
    r = json.loads(res.stdout)["results"][0]
    assert sorted(r["admin_restored"]) == ["codex-worktree.json", "mytool"]
    a = _admin(wt)
    assert {k: (a / k).read_bytes() for k in want} == want
