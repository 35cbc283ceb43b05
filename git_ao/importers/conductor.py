"""Conductor: its workspaces, read as the linked worktrees they are, nothing more.

Conductor is closed source and no public source gives the format of its database.
Its documentation says each workspace is a git worktree (docs.conductor.build,
"Setting up a workspace") and that workspaces are created under
`~/conductor/workspaces/` ("Nested source directories": since 0.25.0); repositories
added before keep them in the `.conductor` folder inside the repository root (the
same page), as `~/my-repo/.conductor/tokyo` (its conductor.json page). So only what
is certain is read:

* each `~/conductor/workspaces/<repo>/<name>` that is the top of a linked worktree;
* each linked worktree git registers for a repository at exactly
  `<main worktree>/.conductor/<name>` (a `.conductor` directory may also hold
  Conductor's settings, read by no one here). Such repositories are found from
  what is certain too (repository_sources): those git-ao knows, those of the
  workspaces under `~/conductor/workspaces`, and those a Claude Code transcript or
  a Codex rollout records a cwd in `<main worktree>/.conductor/<name>` of. Each
  one's `.conductor` is a source of its own.

Each is a live session. Which agent ran there is taken from that agent's own
records: a Claude Code transcript or a Codex rollout whose recorded cwd is the
workspace or inside it (whatever directory the agent files it under) gives the
harness and the session that resumes it; with neither the harness is left empty.
Paused or archived state is not known and not guessed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from git_ao import git, gitfiles
from git_ao.errors import AoError
from git_ao.importers import claude_code, codex
from git_ao.importers.found import Found, Unreadable
from git_ao.importers.worktrees import admin_dir, linked_root
from git_ao.store.states import Kind

TOOL = "conductor"
# The directory inside a repository's root that held its workspaces before 0.25.0.
LEGACY = ".conductor"


def default_sources(home: Path) -> list[Path]:
    """`<home>/conductor/workspaces`."""
    return [home / "conductor" / "workspaces"]


class _Agents:
    """Claude Code's transcripts and Codex's rollouts under a home directory, each
    read once, when first asked for."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._claude: list[claude_code.Transcript] | None = None
        self._codex: list[codex.Rollout] | None = None

    def claude(self) -> list[claude_code.Transcript]:
        if self._claude is None:
            self._claude = claude_code.home_transcripts(self.home)
        return self._claude

    def codex(self) -> list[codex.Rollout]:
        if self._codex is None:
            self._codex = [r for h in codex.homes(self.home) for r in codex.rollouts(h, [])]
        return self._codex

    def run_in(self, path: str) -> tuple[str, str | None]:
        """The harness and agent session id of the agent run in `path`, as the
        claude-code and codex importers match them by the cwd recorded; ("", None)
        when neither ran there."""
        sid = claude_code.newest_session(self.claude(), path)
        if sid is not None:
            return claude_code.HARNESS, sid
        mine = [r for r in codex.run_in(self.codex(), path) if not r.archived]
        if mine:
            return codex.HARNESS, max(mine, key=lambda r: r.mtime_ns).session_id
        return "", None


def repository_sources(home: Path, common_dirs: Iterable[str]) -> list[Path]:
    """The `<main worktree>/.conductor` directories that may hold workspaces of
    before 0.25.0, of the repositories found from what is certain: `common_dirs`
    (the repositories git-ao knows), those of the linked worktrees under
    `~/conductor/workspaces`, and those whose `.conductor/<name>` a Claude Code
    transcript or Codex rollout records as its cwd (or a directory in it). Only a
    directory in the top of a repository's main worktree that holds a `.git`
    one level down."""
    roots: list[str] = []
    for common in common_dirs:
        roots += _main_roots(common)
    for d in default_sources(home):
        for repo in _dirs_or_none(d):
            for ws in _dirs_or_none(repo):
                admin = gitfiles.read_gitfile(str(ws / ".git"))
                if admin is not None:
                    # git keeps a linked worktree's admin dir at <common>/worktrees/<id>.
                    roots += _main_roots(os.path.dirname(os.path.dirname(admin)))
    agents = _Agents(home)
    for cwd in [t.cwd for t in agents.claude()] + [r.cwd for r in agents.codex()]:
        roots += _legacy_roots(cwd)
    out: list[Path] = []
    seen: set[str] = set()
    for root in roots:
        real = os.path.realpath(root)
        if real in seen:
            continue
        seen.add(real)
        if _holds_a_worktree(Path(root) / LEGACY) and _main_top(root) is not None:
            out.append(Path(root) / LEGACY)
    return out


def _holds_a_worktree(d: Path) -> bool:
    """Does `d` hold a `<name>/.git`? Conductor keeps its settings in `.conductor`
    too (settings.toml): such a directory alone is no Conductor state."""
    return any(os.path.lexists(c / ".git") for c in _dirs_or_none(d))


def _main_roots(common: str) -> list[str]:
    """The main worktree of the repository whose common dir is `common`: the
    directory holding it when it is `<root>/.git` (read, not asked), else as
    `git worktree list` names it; none for a bare repository or one git cannot
    read."""
    if os.path.basename(os.path.normpath(common)) == ".git":
        return [os.path.dirname(os.path.normpath(common))]
    try:
        entries = git.worktree_list(common)
    except AoError:
        return []
    return [e.path for e in entries[:1] if e.is_main and not e.bare]


def _legacy_roots(cwd: str) -> list[str]:
    """Each `<dir>` of a `<dir>/.conductor/<name>` that `cwd` is or lies in."""
    parts = cwd.split(os.sep)
    return [os.sep.join(parts[:i]) for i in range(1, len(parts) - 1)
            if parts[i] == LEGACY and parts[i + 1]]


def _main_top(root: str) -> str | None:
    """The common dir of the repository whose main worktree's top is `root`, or
    None (no repository, a bare one, a linked worktree, a directory inside one)."""
    try:
        dirs = git.repo_dirs(root)
    except AoError:
        return None
    if dirs.is_bare or dirs.is_linked_worktree or dirs.toplevel is None \
            or os.path.realpath(dirs.toplevel) != os.path.realpath(root):
        return None
    return dirs.common_dir


def _dirs_or_none(d: Path) -> list[Path]:
    try:
        return _dirs(d)
    except Unreadable:
        return []


def _dirs(d: Path) -> list[Path]:
    try:
        return sorted(c for c in d.iterdir() if c.is_dir() and not c.is_symlink())
    except OSError as exc:
        raise Unreadable(f"cannot read Conductor workspaces '{d}': {exc.strerror}") from None


def read(source: Path) -> list[Found]:
    """The workspaces under `source` that are linked worktrees: `<repo>/<name>` under
    `~/conductor/workspaces`, or, for a `.conductor` directory, its repository's
    linked worktrees `<name>` in it. Raises Unreadable when `source` cannot be
    listed, or is a `.conductor` directory not in the top of a main worktree."""
    agents = _Agents(Path(os.path.expanduser("~")))
    if source.name == LEGACY:
        return _read_legacy(source, agents)
    if not source.is_dir():
        raise Unreadable(f"'{source}' is not a Conductor workspaces directory")
    out = []
    for repo in _dirs(source):
        for ws in _dirs(repo):
            if linked_root(str(ws)):
                out.append(_found(ws, f"{repo.name}/{ws.name}", agents))
    return out


def _read_legacy(source: Path, agents: _Agents) -> list[Found]:
    common = _main_top(str(source.parent)) if source.is_dir() else None
    if common is None:
        raise Unreadable(f"'{source}' is not the {LEGACY} directory of a repository's "
                         "main worktree, where Conductor kept workspaces before 0.25.0")
    try:
        entries = git.worktree_list(common)
    except AoError as exc:
        raise Unreadable(f"cannot list the worktrees of '{source.parent}': {exc}") from None
    here = os.path.realpath(source)
    top = Path(here)
    out = []
    for e in entries:
        if e.is_main or e.bare or os.path.realpath(os.path.dirname(e.path)) != here:
            continue
        ws = top / os.path.basename(e.path)
        admin = admin_dir(str(ws))
        if admin is not None and _same(os.path.dirname(os.path.dirname(admin)), common):
            # The path is the id: another repository's `.conductor` may hold the name.
            out.append(_found(ws, str(ws), agents))
    return out


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _found(ws: Path, tool_id: str, agents: _Agents) -> Found:
    harness, sid = agents.run_in(str(ws))
    return Found(tool=TOOL, tool_id=tool_id, worktree=ws, branch=None, harness=harness,
                 agent_session_id=sid, kind=Kind.WORKER, live=True, name=ws.name)
