"""Claude Code: the worktrees `claude --worktree` made, found from its transcripts.

Claude Code is closed source; what this reads is what its documentation and its
users' tooling establish (the man page's IMPORT section says which is which):

* `claude --worktree <name>` makes `<repository>/.claude/worktrees/<name>` on a new
  branch `worktree-<name>` (documented: code.claude.com/docs/en/worktrees).
* Claude Code keeps its files in `$CLAUDE_CONFIG_DIR` when that is set, else in
  `~/.claude` (documented: the environment variables reference); both are read.
* Each session's transcript is `~/.claude/projects/<key>/<session id>.jsonl`, one
  JSON object a line; lines carry `sessionId` and `cwd` (the hooks reference
  documents `session_id` and `transcript_path`; the line fields and the key rule
  are not documented). The key is the working directory with every character that
  is not an ASCII letter or digit replaced by `-` (anthropics/claude-code#24067);
  a long key is cut and suffixed with a hash, so a transcript is matched by the
  `cwd` its lines record, never by its directory's name.
* `claude --resume <session id>` resumes one (documented: the CLI reference).

A transcript whose first line is not a JSON object is refused (Unreadable names
it); the other transcripts still give their sessions. A line whose `sessionId` or
`cwd` is not text, or whose cwd is not an absolute path (Claude Code records the
absolute one), names no session and is passed over. Lines after the first one
that names the session are not read (a crash may leave the last one cut).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from git_ao.importers.found import Found, Unreadable, distinct, env_dir
from git_ao.importers.worktrees import linked_root, ran_in
from git_ao.store.states import Kind

TOOL = "claude-code"
HARNESS = "claude"
# The part of a worktree path that `claude --worktree` makes.
_MARK = os.path.join(".claude", "worktrees")
# How many lines of a transcript are read looking for the session's cwd: the
# first lines can be summaries or snapshots that name none.
_HEAD_LINES = 64
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class Transcript:
    """One transcript: the session id, the cwd it recorded, its mtime (ns)."""

    session_id: str
    cwd: str
    mtime_ns: int
    path: Path


def hook_agent(doc: dict[str, object]) -> str | None:
    """The Claude Code session id a hook's JSON input carries (`session_id`), when the
    input is Claude Code's: its `transcript_path` is the session's transcript,
    `<config dir>/projects/<key>/<session id>.jsonl` (the layout this importer
    reads). None for any other input (another tool's hook, a hand-made one), whose
    agent git-ao cannot name. Reads no file."""
    sid, transcript = doc.get("session_id"), doc.get("transcript_path")
    if not isinstance(sid, str) or not sid or not isinstance(transcript, str) \
            or "\n" in sid or "/" in sid:
        return None
    parts = transcript.replace("\\", "/").split("/")
    if len(parts) < 3 or parts[-1] != f"{sid}.jsonl" or parts[-3] != "projects":
        return None
    return sid


def started_in(doc: dict[str, object], path: str) -> bool:
    """Did the Claude Code session of a hook's input (see hook_agent) start in the
    directory `path` or below it? Its transcript's directory is named after the
    directory it started in, every character not an ASCII letter or digit made
    `-`. A session started elsewhere can run its tools in `path` (an orchestrator
    looking at a worker's worktree); so can one whose key was cut (a long path):
    both are False. Reads no file."""
    transcript = doc.get("transcript_path")
    if not isinstance(transcript, str):
        return False
    parts = transcript.replace("\\", "/").split("/")
    if len(parts) < 3:
        return False
    key = "".join(c if c.isascii() and c.isalnum() else "-" for c in os.path.realpath(path))
    return parts[-2] == key or parts[-2].startswith(key + "-")


def config_dir(home: Path) -> Path:
    """Claude Code's own directory: `$CLAUDE_CONFIG_DIR` when set and not empty
    (relative to the current directory), else `<home>/.claude`."""
    return env_dir("CLAUDE_CONFIG_DIR") or home / ".claude"


def projects_dirs(home: Path) -> list[Path]:
    """Where Claude Code keeps transcripts: `$CLAUDE_CONFIG_DIR/projects` when the
    variable is set, and `<home>/.claude/projects`, its default, which may hold the
    sessions of runs made without it."""
    return distinct([config_dir(home) / "projects", home / ".claude" / "projects"])


def default_sources(home: Path) -> list[Path]:
    """The transcripts' directories (see projects_dirs)."""
    return projects_dirs(home)


def transcripts(project_dir: Path, bad: list[str]) -> list[Transcript]:
    """The transcripts of one project directory that name a session and a cwd.

    A transcript whose first non-empty line is not a JSON object (not one Claude
    Code wrote whole), or that cannot be read, is left out and named in `bad`."""
    out = []
    try:
        files = sorted(p for p in project_dir.iterdir() if p.suffix == ".jsonl" and p.is_file())
    except OSError as exc:
        bad.append(f"cannot read Claude Code project directory '{project_dir}': {exc.strerror}")
        return []
    for path in files:
        try:
            t = _transcript(path)
        except Unreadable as exc:
            bad.append(str(exc))
            continue
        if t is not None:
            out.append(t)
    return out


def _transcript(path: Path) -> Transcript | None:
    try:
        st = path.stat()
        with open(path, "rb") as f:
            first = True
            for n, raw in enumerate(f):
                if n >= _HEAD_LINES:
                    break
                line = raw.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = None
                if not isinstance(obj, dict):
                    if first:
                        raise Unreadable(f"'{path}' is not a Claude Code transcript (its first "
                                         "line is not a JSON object)")
                    return None  # a line cut by a crash: what came before decides
                first = False
                sid, cwd = obj.get("sessionId"), obj.get("cwd")
                # A cwd Claude Code records is absolute: a relative one (or one of
                # another type) is no place, never taken from git-ao's own directory.
                if isinstance(sid, str) and sid and isinstance(cwd, str) and os.path.isabs(cwd) \
                        and "\0" not in cwd:
                    # A file continuing another session (a resume) may name the older
                    # id first; the file's own name is the session it holds.
                    own = path.stem if _UUID.fullmatch(path.stem) else sid
                    return Transcript(own, os.path.normpath(cwd), st.st_mtime_ns, path)
    except OSError as exc:
        raise Unreadable(f"cannot read Claude Code transcript '{path}': {exc.strerror}") from None
    return None


def worktree_of(cwd: str) -> str | None:
    """The `.claude/worktrees/<name>` directory containing `cwd`, or None."""
    parts = cwd.split(os.sep)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "worktrees" and parts[i - 1] == ".claude" and i + 1 < len(parts):
            return os.sep.join(parts[:i + 2]) or None
    return None


def newest_session(ts: list[Transcript], path: str) -> str | None:
    """The id of the newest transcript whose cwd is `path` or inside it (ran_in)."""
    test = ran_in(path)
    inside = [t for t in ts if test(t.cwd)]
    if not inside:
        return None
    return max(inside, key=lambda t: (t.mtime_ns, t.session_id)).session_id


def all_transcripts(source: Path, bad: list[str]) -> list[Transcript]:
    """The transcripts under `source`: one project directory, or the projects
    directory (every project directory under it, whatever its name: a transcript
    is matched by the cwd it records). Raises Unreadable when `source` is no
    directory or cannot be listed; a transcript that cannot be read is named in
    `bad`."""
    if not source.is_dir():
        raise Unreadable(f"'{source}' is not a Claude Code projects directory")
    try:
        entries = sorted(source.iterdir())
    except OSError as exc:
        raise Unreadable(f"cannot read Claude Code projects directory '{source}': "
                         f"{exc.strerror}") from None
    dirs = [source] if any(p.suffix == ".jsonl" for p in entries) else \
        [p for p in entries if p.is_dir()]
    return [t for d in dirs for t in transcripts(d, bad)]


def home_transcripts(home: Path) -> list[Transcript]:
    """Every readable transcript in each transcripts' directory (projects_dirs),
    for another tool's importer to find the Claude Code session run in its
    worktree (newest_session); none from a directory that is not there or cannot
    be read."""
    out: list[Transcript] = []
    for d in projects_dirs(home):
        try:
            out += all_transcripts(d, [])
        except Unreadable:
            continue
    return out


def read(source: Path) -> list[Found]:
    """The `claude --worktree` worktrees the transcripts under `source` ran in.

    source: one project directory, or the projects directory (every project
    directory under it is read). A worktree that is still a linked worktree is
    live; one whose directory is gone (Claude Code removed it) is reported as
    ended. Raises Unreadable naming every transcript that cannot be read, one line
    each, with the sessions the others gave."""
    bad: list[str] = []
    ts = all_transcripts(source, bad)
    roots = sorted({r for t in ts if (r := worktree_of(t.cwd)) is not None})
    out = []
    for root in roots:
        sid = newest_session(ts, root)
        live = linked_root(root)
        # Say what is there: a directory that is no linked worktree (a clone, a plain
        # directory) is not gone.
        why = "its worktree is gone, so ended in Claude Code" if not os.path.lexists(root) \
            else "it is no linked worktree of a repository now, so not a session to save"
        out.append(Found(
            tool=TOOL, tool_id=root, worktree=Path(root), branch=None, harness=HARNESS,
            agent_session_id=sid, kind=Kind.WORKER, live=live,
            note=None if live else why, name=os.path.basename(root)))
    if bad:
        raise Unreadable(bad, out)
    return out
