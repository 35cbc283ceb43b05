"""What Claude Code's hooks tell git-ao about the agent: `git ao checkpoint
--hook-input` and the WorktreeCreate hook record the harness (`claude`, the name
the importer records) and the agent session id the hook's JSON carries, so a
relaunch can resume it; another value already recorded is changed only as said
here, and logged; and every hook input refused is logged with its reason while
the hook still exits 0."""

import json
import os
import subprocess

import pytest

from git_ao.importers import claude_code
from tests import tool_state as ts
from tests.support import ao, git, log_text, sessions_by_id

SID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"
SID2 = "0b6d9a3e-1c2f-4e8a-9b7d-3f5e2a1c4d6b"


def _key(path) -> str:
    # Claude Code's name for the directory a session started in.
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in os.path.realpath(path))


def _payload(cwd, sid=SID, *, started=None, **more) -> str:
    # As Claude Code sends it: the transcript is <config>/projects/<key>/<session>.jsonl.
    key = _key(started) if started is not None else "-key"
    transcript = ts.home() / ".claude" / "projects" / key / f"{sid}.jsonl"
    return json.dumps({"session_id": sid, "transcript_path": str(transcript),
                       "cwd": str(cwd), "hook_event_name": "Stop", **more})


def _hook(payload: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "ao", "checkpoint", "--hook-input", "--trigger", "hook", "-q"],
                          cwd=cwd, input=payload, capture_output=True, text=True, check=False,
                          env=dict(os.environ))


def _facts(repo, sid):
    s = sessions_by_id(repo)[sid]
    return s["harness"], s["agent_session_id"]


def test_the_checkpoint_hook_registers_the_claude_session_it_runs_in(repo, worktrees, ao_env):
    wt = worktrees(repo, "agent", register=False)
    (wt / "work.txt").write_text("work\n")
    res = _hook(_payload(wt / "src"), ao_env)
    assert res.returncode == 0, res
    assert _facts(repo, "agent") == (claude_code.HARNESS, SID) == ("claude", SID)


def test_the_checkpoint_hook_fills_in_a_session_registered_without_them(repo, worktrees, ao_env):
    wt = worktrees(repo, "agent")
    assert _facts(repo, "agent") == ("", None)
    assert _hook(_payload(wt), ao_env).returncode == 0
    assert _facts(repo, "agent") == ("claude", SID)


def test_a_new_claude_session_in_the_worktree_replaces_the_id_and_says_so(repo, worktrees, ao_env):
    """A later Claude Code session in the same worktree (/clear, a new claude) is
    the one a relaunch resumes, as the importer takes the newest transcript: the id
    is changed, and the log names the old and the new one."""
    wt = worktrees(repo, "agent", harness="claude", agent_session_id=SID)
    assert _hook(_payload(wt / "src", SID2, started=wt / "src"), ao_env).returncode == 0
    assert _facts(repo, "agent") == ("claude", SID2)
    assert f"was={SID}" in log_text() and f"now={SID2}" in log_text(), log_text()


@pytest.mark.parametrize("started", ["main worktree", "sibling"])
def test_a_session_started_elsewhere_working_in_the_worktree_keeps_its_id(
        repo, worktrees, ao_env, started):
    """An orchestrator's session (started in the main worktree, or in another
    worktree whose name begins like this one's) runs a tool in a worker's
    worktree: its hook names the worker's directory, and must not make a relaunch
    of the worker resume the orchestrator's conversation."""
    wt = worktrees(repo, "agent", harness="claude", agent_session_id=SID)
    (wt / "work.txt").write_text("work\n")
    where = repo if started == "main worktree" else wt.parent / "agentx"
    assert _hook(_payload(wt, SID2, started=where), ao_env).returncode == 0
    assert _facts(repo, "agent") == ("claude", SID)
    assert "hook agent agent-facts-kept" in log_text(), log_text()


def test_a_session_recorded_with_another_harness_keeps_it_and_the_log_says_so(
        repo, worktrees, ao_env):
    wt = worktrees(repo, "agent", harness="codex", agent_session_id="019dbff7")
    (wt / "work.txt").write_text("work\n")
    res = _hook(_payload(wt), ao_env)
    assert res.returncode == 0, res
    assert _facts(repo, "agent") == ("codex", "019dbff7")
    assert "hook agent agent-facts-kept" in log_text(), log_text()
    assert len(git("for-each-ref", "refs/ao/history/agent", cwd=repo).splitlines()) == 1


def test_input_of_another_tool_records_no_claude_facts(repo, worktrees, ao_env):
    """Only Claude Code's input (its transcript named after the session) says Claude."""
    wt = worktrees(repo, "agent", register=False)
    other = json.dumps({"session_id": "x1", "transcript_path": "/tmp/rollout-x1.jsonl",
                        "cwd": str(wt), "hook_event_name": "Stop"})
    assert _hook(other, ao_env).returncode == 0
    assert _facts(repo, "agent") == ("", None)


def test_the_worktree_create_hook_records_the_agent_session_id(repo, ao_env):
    ao("ao", "hooks", "install", "claude-code", cwd=repo)
    for sid in (SID, SID2):  # made, then asked for again by another session
        res = subprocess.run(["git", "ao", "hooks", "run", "claude-code"], cwd=repo,
                             input=_payload(repo, sid, hook_event_name="WorktreeCreate",
                                            name="feat"),
                             capture_output=True, text=True, check=False, env=dict(os.environ))
        assert res.returncode == 0, res
        assert _facts(repo, "feat") == ("claude", sid)
    assert f"was={SID}" in log_text() and f"now={SID2}" in log_text(), log_text()


@pytest.mark.parametrize("bad", ["not json", "outside", "main worktree", "[1]", "no cwd string"])
def test_every_refused_hook_input_exits_0_and_bad_input_is_logged(repo, ao_env, tmp_path, bad):
    outside = tmp_path / "plain"
    outside.mkdir()
    payload = {"not json": "{not json", "outside": _payload(outside),
               "main worktree": _payload(repo), "[1]": "[1]",
               "no cwd string": json.dumps({"cwd": 5})}[bad]
    res = _hook(payload, ao_env)
    assert res.returncode == 0, res
    said = ao("ao", "log", cwd=repo).stdout
    lines = [x for x in said.splitlines() if "hook-input-refused" in x]
    if bad in ("outside", "main worktree"):
        # A session there runs the hook after every turn: nothing to log, and the
        # outcome (without -q) says why.
        assert lines == [], said
        return
    assert len(lines) == 1, said
    reason = {"not json": "not a JSON object", "outside": "in no git repository",
              "main worktree": "not inside a linked worktree", "[1]": "not a JSON object",
              "no cwd string": "not a directory name"}[bad]
    assert reason in lines[0], lines
