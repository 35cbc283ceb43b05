"""claude-squad: the instances it keeps in `~/.claude-squad/state.json`.

Format, from smtg-ai/claude-squad @ 434ca256854da28eab7d5126c82394b579221b10:

* Where: `os.UserHomeDir()/.claude-squad` on every platform, no environment
  override (config/config.go GetConfigDir); the state file is `state.json`
  (config/state.go StateFileName), written whole with json.MarshalIndent.
* state.json is the State struct (config/state.go): `help_screens_seen` (uint32)
  and `instances`, raw JSON holding an array of InstanceData
  (session/storage.go): `title`, `path`, `branch`, `status` (the Status int of
  session/instance.go: 0 Running, 1 Ready, 2 Loading, 3 Paused), `height`,
  `width`, `created_at`, `updated_at`, `auto_yes`, `program` (the command run in
  tmux: `claude`, a path to it, `aider --model ...`) and `worktree`
  (GitWorktreeData: `repo_path`, `worktree_path`, `session_name`,
  `branch_name`, `base_commit_sha`, `is_existing_branch`).
* No format version is written. An instance that is not an object, lacks
  `title`, `status`, `path`, `branch`, `program`, `worktree.repo_path`,
  `worktree.worktree_path` or `worktree.branch_name` (InstanceData has no
  omitempty: every field is written), holds one of another type than Go
  writes (text; status an integer), a relative path (claude-squad records
  absolute ones), or a status outside 0..3 is a format this module was not
  checked against: that instance is refused, one line naming the file, the
  instance and the field (Unreadable), and the others are read.
* Paused (Instance.Pause): the worktree was committed (a local commit on its
  branch), removed and pruned; the branch stays. Such an instance is reported,
  not imported as live, saying what git shows: the branch there, or not; the
  worktree still there, with how to keep it.
* tmux: each instance runs in tmux session `claudesquad_` + the title with all
  white space removed and `.` made `_` (session/tmux/tmux.go
  toClaudeSquadTmuxName, TmuxPrefix).
* claude-squad records no agent session id; one instance is one worktree of one
  repository.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

from git_ao import git
from git_ao.errors import AoError
from git_ao.importers.found import (
    INTEGER,
    OBJECT,
    PATH,
    TEXT,
    Found,
    Unreadable,
    describe,
    wrong,
)
from git_ao.store.states import Kind

TOOL = "claude-squad"
STATE = "state.json"
TMUX_PREFIX = "claudesquad_"
# session/instance.go Status (Go iota order).
RUNNING, READY, LOADING, PAUSED = 0, 1, 2, 3
STATUSES = (RUNNING, READY, LOADING, PAUSED)
# String fields claude-squad has written for every instance since its state took
# JSON names (2025-04-02; Go's encoding/json writes each field, empty or not): an
# instance without one of them is no shape claude-squad wrote.
WRITTEN = ("path", "branch", "program")  # besides title, status and worktree
WRITTEN_WORKTREE = ("repo_path", "branch_name")
# A shell assignment before the command (`FOO=1 claude`): the shell's own rule.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def default_sources(home: Path) -> list[Path]:
    """claude-squad's state file under `home`: `~/.claude-squad/state.json`."""
    return [home / ".claude-squad" / STATE]


def tmux_session(title: str) -> str:
    """The tmux session claude-squad runs instance `title` in."""
    return TMUX_PREFIX + re.sub(r"\s+", "", title).replace(".", "_")


def harness(program: str) -> str:
    """The agent program of claude-squad's `program` command line: the basename of
    its first word after any `NAME=value` assignments (tmux runs it through the
    shell); "" when there is none."""
    try:
        words = shlex.split(program)
    except ValueError:  # an unbalanced quote: the shell would refuse it too
        words = program.split()
    words = [w for w in words if not _ASSIGNMENT.match(w)]
    return os.path.basename(words[0]) if words else ""


def read(source: Path) -> list[Found]:
    """The instances of claude-squad state file `source` (or the directory holding
    `state.json`). Raises Unreadable, one line naming the file, when it cannot be
    read, is not JSON, or is not shaped as claude-squad writes it; with one line
    per instance not so shaped, and the others found, when only those are not."""
    path = source / STATE if source.is_dir() else source
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise Unreadable(f"cannot read claude-squad state '{path}': {exc.strerror}") from None
    except ValueError as exc:
        raise Unreadable(f"claude-squad state '{path}' is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise Unreadable(f"claude-squad state '{path}' is not a JSON object")
    instances = data.get("instances")
    if instances is None:  # what claude-squad's Go reads as no instances
        return []
    if not isinstance(instances, list):
        raise Unreadable(f"claude-squad state '{path}': 'instances' is not a list")
    out, bad = [], []
    for n, inst in enumerate(instances):
        try:
            out.append(_found(n, inst))
        except ValueError as exc:
            # That instance only, on a line of its own: the others still import.
            bad.append(f"claude-squad state '{path}': {exc}; not imported")
    if bad:
        raise Unreadable(bad, out)
    return out


def _found(n: int, inst: Any) -> Found:
    """Instance `n` as a Found; raises ValueError saying how it is not shaped as
    claude-squad writes one: a field it lacks ("has no"), or one of another type
    ("not as claude-squad writes it")."""
    if not isinstance(inst, dict):
        raise ValueError(  # noqa: TRY004 - read() refuses the instance on any ValueError
            f"instance {n} is {describe(inst)}, not as {TOOL} writes it ({OBJECT})")
    title = inst.get("title")
    what = f"instance {n} ({title!r})" if isinstance(title, str) and title else f"instance {n}"
    wt: Any = inst.get("worktree")
    lacks = [k for k in ("title", "status", "worktree", *WRITTEN) if k not in inst]
    if isinstance(wt, dict):
        lacks += [f"worktree.{k}" for k in ("worktree_path", *WRITTEN_WORKTREE) if k not in wt]
    if lacks:
        raise ValueError(f"{what} has no {', '.join(lacks)}")
    status = inst["status"]
    problems = [p for p in (
        wrong("title", title, TEXT, TOOL), wrong("status", status, INTEGER, TOOL),
        wrong("worktree", wt, OBJECT, TOOL), *(wrong(k, inst[k], TEXT, TOOL) for k in WRITTEN))
        if p]
    if isinstance(wt, dict):
        problems += [p for p in (
            wrong("worktree.worktree_path", wt["worktree_path"], PATH, TOOL),
            *(wrong(f"worktree.{k}", wt[k], TEXT, TOOL) for k in WRITTEN_WORKTREE)) if p]
    if not problems and not title:
        problems.append("has an empty title")
    if not problems and status not in STATUSES:
        problems.append(f"has status {status!r}, which {TOOL} does not write "
                        f"({', '.join(map(str, STATUSES))})")
    repo = wt["repo_path"] or inst["path"] if not problems else None
    if repo and (p := wrong("worktree.repo_path" if wt["repo_path"] else "path", repo, PATH,
                            TOOL)):
        problems.append(p)
    if problems:
        raise ValueError(f"{what} {'; '.join(problems)}")
    assert isinstance(title, str) and isinstance(wt, dict)
    branch = wt["branch_name"] or inst["branch"] or None
    paused = status == PAUSED
    return Found(
        tool=TOOL, tool_id=title, worktree=Path(wt["worktree_path"]), branch=branch,
        harness=harness(inst["program"]), agent_session_id=None, kind=Kind.WORKER,
        live=not paused, tmux_session=tmux_session(title), name=title,
        note=_paused(Path(wt["worktree_path"]), branch, repo or None) if paused else None)


def _paused(wt: Path, branch: str | None, repo: str | None) -> str:
    """What is known of a paused instance: claude-squad's Pause commits the work to
    the branch and removes the worktree, so each is checked, never taken as done."""
    if os.path.isdir(wt):
        return (f"paused in claude-squad, yet its worktree is still there: "
                f"`git ao add {shlex.quote(str(wt))}` keeps its work")
    if not branch:
        return "paused in claude-squad, which recorded no branch for it"
    try:
        common = git.common_dir_of(repo) if repo else None
    except AoError:
        common = None
    if common is None:
        return (f"paused in claude-squad, which keeps its work on branch {branch}, but its "
                f"repository {repo or '(none recorded)'} is no git repository now")
    if git.rev_parse(common, f"refs/heads/{branch}") is None:
        return (f"paused in claude-squad, which keeps its work on branch {branch}, but "
                f"{repo} has no branch {branch}")
    return f"paused: claude-squad committed its work to branch {branch} and removed the worktree"
