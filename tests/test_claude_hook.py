"""The Claude Code hook, run exactly as Claude Code runs it: the settings file's command
through a shell, the event's JSON on standard input (code.claude.com/docs/en/hooks)."""

import json
import os
import subprocess

from tests import tool_state as ts
from tests.support import ao, dirty, git, sessions_by_id
from tests.worktree_state import assert_restored, state

SID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"


def _hook_command():
    data = json.loads((ts.home() / ".claude" / "settings.json").read_text())
    cmds = {ev: g[0]["hooks"][0]["command"] for ev, g in data["hooks"].items()}
    assert cmds["WorktreeCreate"] == cmds["WorktreeRemove"]
    return cmds["WorktreeCreate"]


def _fire(command, payload, cwd):
    base = {"session_id": SID, "transcript_path": str(ts.home() / ".claude" / "x.jsonl"),
            "cwd": str(cwd)}
    return subprocess.run(["sh", "-c", command], check=False, input=json.dumps({**base, **payload}),
                          capture_output=True, text=True, cwd=cwd, env=dict(os.environ),
                          timeout=120)


def test_install_keeps_the_settings_and_is_idempotent(repo, ao_env):
    settings = ts.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"model": "opus", "hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "notify"}]}]}}, indent=2))
    before = settings.read_bytes()
    res = ao("ao", "hooks", "install", "claude-code", "-n", cwd=repo)
    assert "would add WorktreeCreate hook" in res.stdout and settings.read_bytes() == before
    ao("ao", "hooks", "install", "claude-code", cwd=repo)
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify"
    assert _hook_command() == "git ao hooks run claude-code"
    once = settings.read_bytes()
    res = ao("ao", "hooks", "install", "claude-code", cwd=repo)
    assert "already in" in res.stdout and settings.read_bytes() == once
    other = ao_env / "other.json"
    other.write_text(json.dumps({"hooks": {"WorktreeCreate": [
        {"hooks": [{"type": "command", "command": "wtp add"}]}]}}))
    res = ao("ao", "hooks", "install", "claude-code", "--settings", str(other), cwd=repo, rc=1)
    assert "already has a WorktreeCreate hook (wtp add)" in res.stderr


def test_create_then_remove_as_claude_code_runs_them(repo, ao_env):
    (repo / ".gitignore").write_text(".env\nbuild/\n")
    (repo / ".worktreeinclude").write_text(".env\n")
    git("add", ".gitignore", ".worktreeinclude", cwd=repo)
    git("commit", "-qm", "ignore", cwd=repo)
    (repo / ".env").write_text("TOKEN=1\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("x")
    ao("ao", "hooks", "install", "claude-code", cwd=repo)
    cmd = _hook_command()
    res = _fire(cmd, {"hook_event_name": "WorktreeCreate", "name": "feature-auth"}, repo)
    wt = repo / ".claude" / "worktrees" / "feature-auth"
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"{os.path.realpath(wt)}\n"  # the path, and nothing else
    assert git("branch", "--show-current", cwd=wt).strip() == "worktree-feature-auth"
    assert (wt / ".env").read_text() == "TOKEN=1\n" and not (wt / "build").exists()
    s = sessions_by_id(repo)["feature-auth"]
    assert (s["state"], s["tool"], s["harness"]) == ("live", "claude-code", "claude")
    # Claude Code removes it with work in it: saved first, then removed.
    dirty(wt)
    before = state(wt)
    res = _fire(cmd, {"hook_event_name": "WorktreeRemove",
                      "worktree_path": os.path.realpath(wt)}, repo)
    assert res.returncode == 0, res.stderr
    assert not wt.exists()
    assert sessions_by_id(repo)["feature-auth"]["state"] == "pending"
    ao("ao-restore", "feature-auth", cwd=repo)
    assert_restored(before, state(wt))
    # A clean one is ended, nothing pending.
    res = _fire(cmd, {"hook_event_name": "WorktreeCreate", "name": "tidy"}, repo)
    tidy = res.stdout.strip()
    res = _fire(cmd, {"hook_event_name": "WorktreeRemove", "worktree_path": tidy}, repo)
    assert res.returncode == 0, res.stderr
    assert not os.path.exists(tidy) and sessions_by_id(repo)["tidy"]["state"] == "terminated"


def test_bad_input_fails_the_creation_with_one_line(repo, ao_env):
    cmd = "git ao hooks run claude-code"
    for name in ("../escape", "x..y", "a.lock", "dot.", ".."):  # no path, or no branch name
        res = _fire(cmd, {"hook_event_name": "WorktreeCreate", "name": name}, repo)
        assert res.returncode == 129 and res.stdout == "", (name, res)
        assert len(res.stderr.strip().splitlines()) == 1, (name, res.stderr)
        assert "unusable worktree name" in res.stderr, (name, res.stderr)
    for text in ("nope", "[" * 100_000):
        res = subprocess.run(["sh", "-c", cmd], check=False, input=text, capture_output=True,
                             text=True, cwd=repo, timeout=60)
        assert res.returncode == 129 and "not JSON" in res.stderr, res


def test_install_writes_the_settings_claude_config_dir_names(repo, ao_env, monkeypatch):
    """With CLAUDE_CONFIG_DIR set Claude Code reads its user settings there, so the
    hooks go there (and ~/.claude/settings.json is not made)."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(ao_env / "claude-config"))
    res = ao("ao", "hooks", "install", "claude-code", cwd=repo)
    settings = ao_env / "claude-config" / "settings.json"
    assert str(settings) in res.stdout
    data = json.loads(settings.read_text())
    assert {ev: g[0]["hooks"][0]["command"] for ev, g in data["hooks"].items()} == {
        "WorktreeCreate": "git ao hooks run claude-code",
        "WorktreeRemove": "git ao hooks run claude-code"}
    assert not (ts.home() / ".claude" / "settings.json").exists()


def _removed_by_claude_code(repo, name):
    """A worktree the hook made, given work, then removed through the hook: (its
    path, its state before the removal)."""
    cmd = "git ao hooks run claude-code"
    res = _fire(cmd, {"hook_event_name": "WorktreeCreate", "name": name}, repo)
    assert res.returncode == 0, res.stderr
    wt = repo / ".claude" / "worktrees" / name
    dirty(wt)
    before = state(wt)
    res = _fire(cmd, {"hook_event_name": "WorktreeRemove", "worktree_path": str(wt)}, repo)
    assert res.returncode == 0, res.stderr
    assert not wt.exists()
    return wt, before


def test_a_worktree_removed_in_claude_code_stays_removed_at_boot(repo, ao_env, worktrees):
    wt, before = _removed_by_claude_code(repo, "gone")
    other = worktrees(repo, "other")
    dirty(other)
    other_before = state(other)
    ao("ao-preserve", "other", cwd=repo)
    rec = sessions_by_id(repo)["gone"]
    assert (rec["state"], rec["removed_by"]) == ("pending", "claude-code")
    assert sessions_by_id(repo)["other"]["removed_by"] is None
    hint = "gone: saved when claude-code removed its worktree; git ao-restore gone brings it back"
    assert hint in ao("ao", "list", cwd=repo).stderr
    show = ao("ao", "show", "gone", cwd=repo)
    assert "claude-code" in show.stdout and "git ao-restore gone brings it back" in show.stderr
    # The boot's restore (every pending session): the other comes back, this one
    # is said to be left, in the dry run as in the real run.
    for args in (("-n",), ()):
        res = ao("ao-restore", *args, cwd=repo)
        assert "restore\tnothing\tgone\tleft pending: saved when claude-code removed" \
            in res.stdout, res.stdout
        assert not wt.exists()
    assert_restored(other_before, state(other))
    assert sessions_by_id(repo)["gone"]["state"] == "pending"
    # The boot's quiet restore, through the entry point that skips click when
    # nothing is to be restored: it leaves it too, silently.
    res = ao("ao-restore", "-q", "--timeout", "60", cwd=repo, process=True)
    assert (res.stdout, res.stderr) == ("", "") and not wt.exists()
    # A restore from a remote naming no session leaves it too.
    remote = repo.parent / "plain.git"
    git("init", "-q", "--bare", remote, cwd=repo.parent)
    git("push", "-q", str(remote), "refs/ao/preserved/gone", cwd=repo)
    git("remote", "add", "plain", str(remote), cwd=repo)
    res = ao("ao-restore", "--from", "plain", "-n", cwd=repo)
    assert "restore\tnothing\tgone\tleft pending: saved when claude-code removed" \
        in res.stdout, res.stdout
    # Named, it comes back whole, and the mark goes with the save.
    ao("ao-restore", "gone", cwd=repo)
    assert_restored(before, state(wt))
    rec = sessions_by_id(repo)["gone"]
    assert (rec["state"], rec["removed_by"]) == ("live", None)
    # A later preserve by git-ao itself (a shutdown) is restored at boot as any other.
    ao("ao-preserve", "gone", cwd=repo)
    assert sessions_by_id(repo)["gone"]["removed_by"] is None
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


def test_only_a_worktree_claude_code_removed_is_left_at_boot(repo, ao_env, worktrees):
    """A restore naming no session still restores the pending sessions of the hook's
    own worktrees that git-ao preserved (a shutdown), and the check of the entry
    point reads a database made before the mark as every pending save."""
    import sqlite3

    from git_ao.store.datadir import completion_rows
    res = _fire("git ao hooks run claude-code", {"hook_event_name": "WorktreeCreate",
                                                 "name": "kept"}, repo)
    wt = repo / ".claude" / "worktrees" / "kept"
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "--all", cwd=repo)
    assert not wt.exists() and [i for i, _ in completion_rows("restore")] == ["kept"]
    conn = sqlite3.connect(os.path.join(os.environ["AO_DATA_DIR"], "git-ao.db"))
    conn.executescript("ALTER TABLE session_worktrees DROP COLUMN removed_by; "
                       "PRAGMA user_version = 8;")
    conn.close()
    assert [i for i, _ in completion_rows("restore")] == ["kept"]
    res = ao("ao-restore", "-q", "--timeout", "60", cwd=repo, process=True)
    assert res.stderr == "", res.stderr
    assert_restored(before, state(wt))


def test_a_worktree_made_again_at_a_removed_sessions_path_is_a_session_of_its_own(
        repo, ao_env):
    """WorktreeCreate of a name whose session Claude Code removed (saved, pending): the
    new worktree is registered at once, so checkpoints and shutdown save it; the old
    save stays pending and its restore is refused, dry run and real run alike, never
    applied into the new worktree; once the new one is preserved, it comes back whole."""
    wt, before = _removed_by_claude_code(repo, "f1")
    res = _fire("git ao hooks run claude-code", {"hook_event_name": "WorktreeCreate",
                                                  "name": "f1"}, repo)
    assert res.returncode == 0, res.stderr
    recs = sessions_by_id(repo)
    new = next(i for i, r in recs.items() if i != "f1")
    assert (recs[new]["state"], recs[new]["tool"]) == ("live", "claude-code")
    assert recs["f1"]["state"] == "pending"
    (wt / "agent.txt").write_text("new agent work\n")
    res = ao("ao", "checkpoint", cwd=wt)
    assert f"checkpoint\tok\t{new}\t" in res.stdout, res.stdout
    res = ao("ao-preserve", "--all", "-n", cwd=repo)
    assert f"preserve\tok\t{new}\t" in res.stdout and "\tf1\t" not in res.stdout, res.stdout
    new_state = state(wt)
    for args in (("-n",), ()):
        res = ao("ao-restore", "f1", *args, cwd=repo, rc=1)
        line = res.stdout.strip()
        assert line.startswith("restore\trefused\tf1\t") and "\n" not in line, res.stdout
        assert f"is now session '{new}''s worktree" in line and "interrupted" not in line
        assert f"git ao-preserve {new}" in line
    assert state(wt) == new_state and sessions_by_id(repo)["f1"]["state"] == "pending"
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", "f1", cwd=repo)
    assert_restored(before, state(wt))
    assert sessions_by_id(repo)[new]["state"] == "pending"
