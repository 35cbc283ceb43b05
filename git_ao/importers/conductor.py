"""Conductor: its workspaces, read as the linked worktrees they are, nothing more.

Conductor is closed source and no public source gives the format of its database.
Its documentation says each workspace is a git worktree (docs.conductor.build,
"Setting up a workspace") and that workspaces are created under
`~/conductor/workspaces/` ("Nested source directories": since 0.25.0; repositories
added before keep them in `.conductor/` inside the repository, which this does not
read). So only what is certain is read: each `~/conductor/workspaces/<repo>/<name>`
that is the top of a linked worktree is a live session. Which agent ran there is
taken from that agent's own records: a Claude Code transcript or a Codex rollout
whose recorded cwd is the workspace or inside it (whatever directory the agent
files it under) gives the harness and the session that resumes it; with neither
the harness is left empty. Paused or archived state is not known and not
guessed.
"""

from __future__ import annotations

import os
from pathlib import Path

from git_ao.importers import claude_code, codex
from git_ao.importers.found import Found, Unreadable
from git_ao.importers.worktrees import linked_root
from git_ao.store.states import Kind

TOOL = "conductor"


def default_sources(home: Path) -> list[Path]:
    """`<home>/conductor/workspaces`."""
    return [home / "conductor" / "workspaces"]


def _dirs(d: Path) -> list[Path]:
    try:
        return sorted(c for c in d.iterdir() if c.is_dir() and not c.is_symlink())
    except OSError as exc:
        raise Unreadable(f"cannot read Conductor workspaces '{d}': {exc.strerror}") from None


def read(source: Path) -> list[Found]:
    """The workspaces under `source` (`<repo>/<name>`) that are linked worktrees.
    Raises Unreadable when `source` cannot be listed."""
    if not source.is_dir():
        raise Unreadable(f"'{source}' is not a Conductor workspaces directory")
    home = Path(os.path.expanduser("~"))
    # Each agent's own records, read once (when the first workspace needs them)
    # and matched by the cwd they record, as that agent's importer matches them.
    found_claude: list[claude_code.Transcript] | None = None
    found_codex: list[codex.Rollout] | None = None
    out = []
    for repo in _dirs(source):
        for ws in _dirs(repo):
            path = str(ws)
            if not linked_root(path):
                continue
            if found_claude is None:
                found_claude = claude_code.home_transcripts(home)
            harness, sid = "", claude_code.newest_session(found_claude, path)
            if sid is not None:
                harness = claude_code.HARNESS
            else:
                if found_codex is None:
                    found_codex = [r for h in codex.homes(home) for r in codex.rollouts(h, [])]
                mine = [r for r in codex.run_in(found_codex, path) if not r.archived]
                if mine:
                    harness = codex.HARNESS
                    sid = max(mine, key=lambda r: r.mtime_ns).session_id
            out.append(Found(
                tool=TOOL, tool_id=f"{repo.name}/{ws.name}", worktree=ws, branch=None,
                harness=harness, agent_session_id=sid, kind=Kind.WORKER, live=True,
                name=ws.name))
    return out
