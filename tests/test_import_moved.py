"""git ao import after a repository moved (`mv app app2`, `git worktree repair`,
`git ao add NEWPATH --id ID`): a tool that still records a session at its old path
(gone now) finds it known, live at its new path, in a dry run, a real run and
--json; never called ended, archived or missing, nothing refused or changed."""

import json
import os
import re
import sqlite3
import subprocess
import uuid
from pathlib import Path

import pytest

from tests import tool_state as ts
from tests import tool_state_b as tb
from tests.support import ROOT, ao, git, init_repo, sessions_by_id

CC_ID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"
CX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"
UNTRUE = ("not live", "ended", "gone", "does not exist", "archived", "paused")


def _app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    git("init", "-q", "-b", "main", cwd=app)
    init_repo(app)
    (app / ".git" / "info" / "exclude").write_text(".claude/\nworktrees/\n")
    return app


def _crystal_archived(db: Path, sid: str):
    # crystal's delete: archived = 1, then `git worktree remove --force` of the
    # path it records, which is gone (so that fails and changes nothing).
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET archived = 1 WHERE id = ?", (sid,))
    conn.commit()
    conn.close()


def _vk_archived(db: Path, wid: str):
    conn = sqlite3.connect(db)
    conn.execute("UPDATE workspaces SET archived = 1 WHERE id = ?", (uuid.UUID(wid).bytes,))
    conn.commit()
    conn.close()


def _state(tool: str, app: Path):
    """The tool's state for one session in `app`: (worktree, what to do once moved)."""
    if tool.startswith("claude-code"):
        wt = ts.claude_worktree(app, "feat")
        ts.claude_transcript(wt, CC_ID)
        return wt, None
    if tool.startswith("crystal"):
        db = tb.crystal_db()
        sid, wt = tb.crystal_session(db, app, "fix", panels=(("claude", CC_ID),), active=0)
        return wt, (lambda: _crystal_archived(db, sid)) if tool.endswith("archived") else None
    if tool == "codex":
        wt = ts.codex_worktree(app, "4a21", thread=CX_ID, branch="codex-fix")
        live = ts.codex_rollout(wt, CX_ID)

        def archive():  # Codex archives the thread: its rollout moves
            live.unlink()
            ts.codex_rollout(wt, CX_ID, archived=True)
        return wt, archive
    if tool.startswith("claude-squad"):
        wt, branch = tb.squad_worktree(app, "fix parser")
        instance = tb.squad_instance(app, wt, "fix parser", branch)
        tb.squad_state([instance])
        # claude-squad pauses it (status 3): its Pause commits and removes the
        # worktree at the path it records, which is gone.
        return wt, (lambda: tb.squad_state([{**instance, "status": 3}])) \
            if tool.endswith("paused") else None
    db = tb.vk_db()
    wid, container = tb.vk_workspace(db, [app], label="fix", branch="vk-fix",
                                     agent_session_id=CC_ID)
    return container / app.name, (lambda: _vk_archived(db, wid)) \
        if tool.endswith("archived") else None


@pytest.mark.parametrize("tool", [
    "claude-code", "claude-code-added", "crystal", "crystal-archived", "codex",
    "claude-squad", "claude-squad-paused", "vibe-kanban", "vibe-kanban-archived"])
def test_a_moved_session_is_known_live_where_it_is_now(tmp_path, tool):
    name = tool.removesuffix("-added").removesuffix("-archived").removesuffix("-paused")
    app = _app(tmp_path)
    wt, after = _state(tool, app)
    if tool.endswith("-added"):
        # Registered by hand: only the agent session id ties the tool's record to it.
        ao("ao", "add", wt, "--harness", "claude", "--agent-session-id", CC_ID, cwd=app)
    else:
        ao("ao", "import", "--tool", name, cwd=app)
    [(sid, before)] = sessions_by_id(app).items()
    # Move the repository, and the worktree with it when it lives elsewhere.
    app2 = tmp_path / "app2"
    app.rename(app2)
    inside = wt.is_relative_to(app)
    new = app2 / wt.relative_to(app) if inside else tmp_path / "moved" / wt.name
    if not inside:
        new.parent.mkdir()
        wt.rename(new)
    git("worktree", "repair", new, cwd=app2)
    ao("ao", "add", new, "--id", sid, cwd=app2)
    if after is not None:
        after()
    moved = sessions_by_id(app2)[sid]
    assert (moved["state"], moved["workspace_path"]) == ("live", str(new))
    for args in (("-n", "--json"), ("--json",), ("-n",), ()):
        res = ao("ao", "import", "--tool", name, *args, cwd=app2)
        if "--json" in args:
            [got] = json.loads(res.stdout)["results"]
            assert (got["id"], got["status"], got["state"], got["workspace_path"]) == (
                sid, "nothing", "live", str(new)), got
            said = got["message"]
        else:
            [said] = res.stdout.splitlines()
            assert said.startswith(f"import\tnothing\t{sid}\t"), said
        assert str(new) in said and not any(w in said for w in UNTRUE), (args, said)
        assert sessions_by_id(app2)[sid] == moved
    assert {k: v for k, v in moved.items() if k not in ("workspace_path", "repo")} == {
        k: v for k, v in before.items() if k not in ("workspace_path", "repo")}


def test_a_moved_session_pending_in_git_ao_is_known_as_pending(tmp_path):
    app = _app(tmp_path)
    wt, _ = _state("claude-code", app)
    ao("ao", "import", "--tool", "claude-code", cwd=app)
    app2 = tmp_path / "app2"
    app.rename(app2)
    new = app2 / wt.relative_to(app)
    git("worktree", "repair", new, cwd=app2)
    ao("ao", "add", new, "--id", "feat", cwd=app2)
    ao("ao-preserve", "--all", cwd=app2)
    assert not new.exists()
    for args in (("-n", "--json"), ("--json",)):
        [got] = json.loads(ao("ao", "import", "--tool", "claude-code", *args,
                              cwd=app2).stdout)["results"]
        assert (got["id"], got["status"], got["state"]) == ("feat", "nothing", "pending"), got
        assert f"pending in git-ao at {new}" in got["message"], got
        assert not any(w in got["message"] for w in UNTRUE), got
    ao("ao-restore", cwd=app2)
    assert new.is_dir()


CC_NEW = "7d2e4f60-1b3c-4d5e-8f70-9a1b2c3d4e5f"


def _moved_by_hand(tmp_path: Path, tool: str, twice: bool):
    """A session imported from `tool`, then its repository moved by `mv` (twice: once
    re-pointed by `git ao add --id`, then moved again) and its worktree repaired, the
    tool running an agent in it at the new path. Returns (repository, worktree)."""
    app = _app(tmp_path)
    if tool == "claude-code":
        wt = ts.claude_worktree(app, "feat")
    else:
        wt = ts.conductor_legacy_workspace(app, "feat")
    ts.claude_transcript(wt, CC_ID)
    ao("ao", "import", "--tool", tool, cwd=app)
    assert set(sessions_by_id(app)) == {"feat"}
    for n in (2, 3) if twice else (2,):
        to = tmp_path / f"app{n}"
        app.rename(to)
        wt = to / wt.relative_to(app)
        app = to
        git("worktree", "repair", wt, cwd=app)
        if twice and n == 2:
            ao("ao", "add", wt, "--id", "feat", cwd=app)
    # The agent runs at the new path: a new transcript there, another session id.
    ts.claude_transcript(wt, CC_NEW)
    return app, wt


@pytest.mark.parametrize("tool", ["claude-code", "conductor"])
@pytest.mark.parametrize("twice", [False, True])
def test_a_session_stranded_by_a_move_is_repointed_not_registered_again(tmp_path, tool, twice):
    app, wt = _moved_by_hand(tmp_path, tool, twice)
    before = sessions_by_id(app)["feat"]
    res = ao("ao", "import", "--tool", tool, "-n", cwd=app)
    assert f"would re-point session 'feat' at {wt}" in res.stdout, res.stdout
    assert sessions_by_id(app)["feat"] == before
    res = ao("ao", "import", "--tool", tool, cwd=app)
    assert f"re-pointed session 'feat' at {wt}" in res.stdout, res.stdout
    # No line says the session is live at a path that is gone.
    for line in res.stdout.splitlines():
        assert "live in git-ao at" not in line or str(wt) in line, line
    got = sessions_by_id(app)
    assert set(got) == {"feat"}, got
    s = got["feat"]
    assert (s["state"], s["workspace_path"], s["repo"], s["tool"]) == (
        "live", str(wt), str(app / ".git"), tool), s
    assert (s["created_at"], s["kind"]) == (before["created_at"], before["kind"])
    ao("ao-preserve", "feat", cwd=app)
    assert sessions_by_id(app)["feat"]["state"] == "pending"


def test_an_already_known_line_says_the_true_state_and_path(tmp_path):
    # Moved once and re-pointed, then moved again: the tool's record at the first
    # path names the session, whose path is gone now too.
    app = _app(tmp_path)
    wt = ts.claude_worktree(app, "feat")
    ts.claude_transcript(wt, CC_ID)
    ao("ao", "import", "--tool", "claude-code", cwd=app)
    app2, app3 = tmp_path / "app2", tmp_path / "app3"
    app.rename(app2)
    wt2 = app2 / wt.relative_to(app)
    git("worktree", "repair", wt2, cwd=app2)
    ao("ao", "add", wt2, "--id", "feat", cwd=app2)
    app2.rename(app3)
    [line] = [x for x in ao("ao", "import", "--tool", "claude-code", "-n", cwd=app3,
                            rc=None).stdout.splitlines() if "already known" in x]
    assert f"already known: attention in git-ao (recorded at {wt2}: " in line, line
    assert "git ao add NEWPATH --id feat" in line, line


def test_advice_for_a_session_registered_again_names_commands_that_work(tmp_path):
    # What an older git-ao left: the moved worktree registered as a second session.
    app = _app(tmp_path)
    wt = ts.claude_worktree(app, "feat")
    ao("ao", "add", wt, "--id", "feat", cwd=app)
    app2 = tmp_path / "app2"
    app.rename(app2)
    new = app2 / wt.relative_to(app)
    git("worktree", "repair", new, cwd=app2)
    ao("ao", "add", new, cwd=app2)
    assert set(sessions_by_id(app2)) == {"feat", "app2-feat"}
    refused = ao("ao", "add", new, "--id", "feat", cwd=app2, rc=1)
    assert "git ao forget app2-feat first" in refused.stderr, refused.stderr
    hint = [x for x in ao("ao", "list", "--all", cwd=app2).stderr.splitlines()
            if x.startswith("hint: feat: ")]
    assert len(hint) == 1, hint
    want = f"git ao forget app2-feat, then git ao add {new} --id feat re-points"
    assert want in hint[0], hint
    for cmd in (["forget", "app2-feat"], ["add", str(new), "--id", "feat"]):
        ao("ao", *cmd, cwd=app2)
    got = sessions_by_id(app2)
    assert set(got) == {"feat"} and got["feat"]["workspace_path"] == str(new), got


def test_the_readme_recipe_for_a_moved_repository_works(tmp_path):
    # The README's commands, run as they are written: every linked worktree is
    # linked again (none prunable) and the session is live at its new path.
    readme = (ROOT / "README.md").read_text()
    recipe = re.search(r"Moved a repository with its sessions' worktrees.*?```sh\n(.*?)```",
                       readme, re.DOTALL)
    assert recipe, "README: no recipe for a moved repository"
    app = _app(tmp_path)
    feat = ts.claude_worktree(app, "feat")
    ts.claude_worktree(app, "other")
    ao("ao", "add", feat, "--id", "feat", cwd=app)
    subprocess.run(["bash", "-euc", recipe.group(1)], cwd=tmp_path, check=True,
                   env=dict(os.environ))
    app2 = tmp_path / "app2"
    listed = git("worktree", "list", "--porcelain", cwd=app2)
    assert "prunable" not in listed, listed
    for name in ("feat", "other"):
        assert f"worktree {app2 / '.claude' / 'worktrees' / name}\n" in listed, listed
    s = sessions_by_id(app2)["feat"]
    assert (s["state"], s["workspace_path"]) == ("live", str(app2 / ".claude/worktrees/feat"))
    ao("ao-preserve", "feat", cwd=app2)


def test_a_session_beside_a_bare_repository_moved_with_it_is_repointed(tmp_path):
    # proj/app.git with its worktrees beside it (proj/main, where `claude --worktree`
    # made proj/main/.claude/worktrees/feat), `mv proj proj2`: the agent runs at the
    # new path under another session id, and import re-points the session there.
    src = _app(tmp_path)
    proj = tmp_path / "proj"
    git("clone", "-q", "--bare", src, proj / "app.git", cwd=tmp_path)
    git("worktree", "add", "-q", proj / "main", "main", cwd=proj / "app.git")
    (proj / "app.git" / "info" / "exclude").write_text(".claude/\n")
    wt = ts.claude_worktree(proj / "main", "feat")
    ts.claude_transcript(wt, CC_ID)
    ao("ao", "import", "--tool", "claude-code", cwd=wt)
    assert set(sessions_by_id(wt)) == {"feat"}
    proj.rename(tmp_path / "proj2")
    common, wt = tmp_path / "proj2" / "app.git", tmp_path / "proj2" / wt.relative_to(proj)
    git("worktree", "repair", wt, tmp_path / "proj2" / "main", cwd=common)
    ts.claude_transcript(wt, CC_NEW)
    res = ao("ao", "import", "--tool", "claude-code", cwd=wt)
    assert f"re-pointed session 'feat' at {wt}" in res.stdout, res.stdout
    got = sessions_by_id(wt)
    assert set(got) == {"feat"}, got
    assert (got["feat"]["state"], got["feat"]["workspace_path"], got["feat"]["repo"]) == (
        "live", str(wt), str(common)), got
