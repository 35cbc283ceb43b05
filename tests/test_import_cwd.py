"""git ao import: another tool's worktree gets the Claude Code or Codex session run
in it by the cwd that session's records hold, as the claude-code and codex
importers match them, never by the name of the directory the agent files them
under."""

import json
import re

import pytest

from tests import tool_state as ts
from tests.support import ao, sessions_by_id

CC_ID = "77777777-7777-7777-7777-777777777777"
CX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"


def _result(res, sid):
    return {r["id"]: r for r in json.loads(res.stdout)["results"]}[sid]


@pytest.mark.parametrize("where", ["other-key", "subdirectory", "parent-key"])
def test_conductor_finds_the_claude_code_session_by_the_cwd_it_records(repo, where):
    ws = ts.conductor_workspace(repo, "athens")
    if where == "other-key":
        # Filed under a key the workspace's path does not give (a long key cut and
        # hashed, or one sanitized another way).
        ts.claude_transcript(ws, CC_ID, project_key="x3")
    elif where == "subdirectory":
        (ws / "src").mkdir(exist_ok=True)
        ts.claude_transcript(ws / "src", CC_ID)
    else:
        # Filed under the key of the directory above, where it was started.
        ts.claude_transcript(ws, CC_ID, project_key=re.sub(r"[^A-Za-z0-9]", "-", str(ws.parent)))
    res = ao("ao", "import", "--tool", "conductor", "-n", "--json", cwd=repo)
    got = _result(res, "athens")
    assert (got["status"], got["harness"], got["agent_session_id"]) == ("ok", "claude", CC_ID), got
    ao("ao", "import", "--tool", "conductor", cwd=repo)
    s = sessions_by_id(repo)["athens"]
    assert (s["harness"], s["agent_session_id"]) == ("claude", CC_ID)


def test_conductor_finds_a_codex_session_run_in_a_subdirectory(repo):
    ws = ts.conductor_workspace(repo, "lima")
    (ws / "pkg").mkdir()
    ts.codex_rollout(ws / "pkg", CX_ID)
    ts.codex_rollout(ws, "019dbff7-0000-7000-8000-000000000000", archived=True)
    ao("ao", "import", "--tool", "conductor", cwd=repo)
    s = sessions_by_id(repo)["lima"]
    assert (s["harness"], s["agent_session_id"]) == ("codex", CX_ID)
