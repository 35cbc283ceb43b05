"""The Claude Code hook: git-ao makes and removes the worktrees of `claude --worktree`.

Claude Code's hooks reference (code.claude.com/docs/en/hooks) documents two worktree
events, each running a command with the event's JSON on its standard input
(`session_id`, `transcript_path`, `cwd`, `hook_event_name`, and):

* WorktreeCreate (`name`: the worktree's slug) replaces Claude Code's own
  `git worktree add`: the hook makes the worktree and prints its absolute path on
  standard output; a non-zero exit, or no path, fails the creation.
* WorktreeRemove (`worktree_path`) is its counterpart: it cannot block, its
  failures are only logged, and a worktree a WorktreeCreate hook made is left to
  it to remove.

So with both installed every worktree Claude Code asks for is made by git-ao, as
Claude Code makes it (`<repository>/.claude/worktrees/<name>` on a new branch
`worktree-<name>` from origin/HEAD, else HEAD, and the ignored files
`.worktreeinclude` names copied in: code.claude.com/docs/en/worktrees) and
registered as a session at once; and every removal goes through git-ao: a clean
worktree is ended (`git ao kill`), any other is preserved first (captured,
recorded, then removed). The user removed that worktree on purpose, so its save
is marked as removed by Claude Code (`Save.removed_by`): pending, its work kept,
but the restore of every pending session (the boot's) leaves it; `git ao-restore
<id>` brings it back. A removal git-ao refuses leaves the worktree where it is:
nothing is lost.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_ao import git
from git_ao.context import Context
from git_ao.errors import AoError, Refused, Usage
from git_ao.git import query
from git_ao.importers import claude_code
from git_ao.importers.worktrees import admin_dir
from git_ao.manage.kill import kill
from git_ao.manage.register import current_session, record_agent, register
from git_ao.outcome import Action, Outcome, Status
from git_ao.preserve import workflow as preserve
from git_ao.store.records import Session
from git_ao.store.settings import Settings
from git_ao.store.states import Kind

COMMAND = "git ao hooks run claude-code"
EVENTS = ("WorktreeCreate", "WorktreeRemove")
INCLUDE = ".worktreeinclude"


def settings_path(home: Path) -> Path:
    """Claude Code's user settings: `settings.json` in its directory,
    `$CLAUDE_CONFIG_DIR` when set, else `<home>/.claude` (claude_code.config_dir)."""
    return claude_code.config_dir(home) / "settings.json"


@dataclass
class Installed:
    """What `install` did: the file, the events it added, the events already there."""

    path: Path
    added: list[str]
    present: list[str]


def _commands(groups: Any) -> list[str]:
    out = []
    for g in groups if isinstance(groups, list) else []:
        for h in (g.get("hooks") if isinstance(g, dict) else None) or []:
            if isinstance(h, dict) and isinstance(h.get("command"), str):
                out.append(h["command"])
    return out


def install(path: Path, *, dry_run: bool) -> Installed:
    """Add git-ao's WorktreeCreate and WorktreeRemove hooks to the Claude Code settings
    file `path` (made when missing), keeping every other key as it was; an event
    already running COMMAND is left alone. Raises Refused when the file is not a
    JSON object, or another WorktreeCreate hook is set (two cannot both make the
    worktree); Fatal-free: OSError is raised as Refused naming the file."""
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        data = json.loads(text) if text.strip() else {}
    except (OSError, ValueError) as exc:
        raise Refused(f"cannot read Claude Code settings '{path}': {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise Refused(f"'{path}' is not a Claude Code settings object (with a hooks object)")
    hooks = data.setdefault("hooks", {})
    added, present = [], []
    for event in EVENTS:
        cmds = _commands(hooks.get(event))
        if COMMAND in cmds:
            present.append(event)
            continue
        if event == "WorktreeCreate" and cmds:
            raise Refused(f"'{path}' already has a WorktreeCreate hook ({cmds[0]}); it makes "
                          "Claude Code's worktrees, and so would git-ao's: remove it first")
        groups = hooks.get(event)
        if not isinstance(groups, list):
            groups = hooks[event] = []
        groups.append({"hooks": [{"type": "command", "command": COMMAND}]})
        added.append(event)
    if added and not dry_run:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".git-ao.tmp")
            tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            if path.exists():
                shutil.copymode(path, tmp)
            os.replace(tmp, path)
        except OSError as exc:
            raise Refused(f"cannot write Claude Code settings '{path}': {exc.strerror}") from None
    return Installed(path, added, present)


def event(text: str) -> dict[str, Any]:
    """The hook's input. Raises Usage when it is not the JSON object of a worktree event."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # nested past the parser's depth: no event either
        raise Usage("the hook's standard input is not JSON") from None
    if not isinstance(data, dict) or data.get("hook_event_name") not in EVENTS:
        raise Usage("the hook's input names no WorktreeCreate or WorktreeRemove event")
    return data


def create(ctx: Context, data: dict[str, Any]) -> str:
    """WorktreeCreate: make (or find) the worktree and register it; returns its path.
    Raises Usage (a bad name or cwd) or AoError (git refused)."""
    name, cwd = data.get("name"), data.get("cwd")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", name) \
            or not git.check_ref_format(f"refs/heads/worktree-{name}"):
        raise Usage(f"WorktreeCreate: unusable worktree name {name!r}")
    if not isinstance(cwd, str) or not os.path.isdir(cwd):
        raise Usage(f"WorktreeCreate: cwd {cwd!r} is not a directory")
    dirs = git.repo_dirs(cwd)
    common = os.path.realpath(dirs.common_dir)
    # The repository root: the main worktree's (a non-bare repository's common dir
    # is its `.git`), else the worktree Claude Code runs in.
    root = os.path.dirname(common) if os.path.basename(common) == ".git" \
        else (dirs.toplevel or cwd)
    path = os.path.join(root, ".claude", "worktrees", name)
    branch = f"worktree-{name}"
    if admin_dir(path) is None:
        if git.rev_parse(root, f"refs/heads/{branch}") is not None:
            git.worktree_add(common, path, branch=branch)
        else:
            base = git.rev_parse(root, "refs/remotes/origin/HEAD") or git.rev_parse(root, "HEAD")
            git.worktree_add(common, path, new_branch=branch, commit=base)
        _include(root, path)
    top = os.path.realpath(path)
    # A pending save at this path (its worktree removed, say by WorktreeRemove)
    # stays pending; the worktree made here now is a session of its own.
    s = ctx.store.live_at(top)
    agent = claude_code.hook_agent(data)
    if s is None:
        s = register(ctx, top, kind=Kind.WORKER, harness=claude_code.HARNESS, name=name,
                     agent_session_id=agent)
    else:
        s = record_agent(ctx, s, claude_code.HARNESS, agent)
    if not ctx.dry_run and s.tool is None:
        ctx.store.set_tool_facts(s.id, tool=claude_code.TOOL, tool_id=top,
                                 tmux_session=s.tmux_session, group_id=s.group_id,
                                 harness=s.harness or claude_code.HARNESS,
                                 agent_session_id=s.agent_session_id)
    ctx.log("hook", s.id, "worktree-create", workspace=top, tool=claude_code.TOOL)
    return top


def checkpoint_session(ctx: Context, doc: dict[str, object], where: str) -> Session:
    """The live session a checkpoint hook's input (`doc`) names by its directory
    `where`, registered when none holds it. Claude Code's input also gives its
    harness and agent session id: a new session takes them, and one already there
    takes them as `record_agent` decides, an id of another Claude Code session
    only from one that started in the worktree (an orchestrator's tools run in a
    worker's worktree too: `claude_code.started_in`). Raises Usage when `where` is
    in no linked worktree."""
    agent = claude_code.hook_agent(doc)
    if agent is None:
        return current_session(ctx, where)
    s = current_session(ctx, where, harness=claude_code.HARNESS, agent_session_id=agent)
    return record_agent(ctx, s, claude_code.HARNESS, agent,
                        newer=claude_code.started_in(doc, s.worktree_path))


def _include(root: str, path: str) -> None:
    """Copy into the new worktree the ignored files of `root` that `.worktreeinclude`
    names (gitignore patterns), as Claude Code does for the worktrees it makes."""
    rules = os.path.join(root, INCLUDE)
    if not os.path.isfile(rules):
        return
    wanted = set(query.ignored_files(root, exclude_from=rules))
    for rel in query.ignored_files(root):
        if rel not in wanted or rel.startswith(".claude/worktrees/"):
            continue
        src, dst = os.path.join(root, rel), os.path.join(path, rel)
        if os.path.lexists(dst) or not (os.path.isfile(src) or os.path.islink(src)):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)


def remove(ctx: Context, settings: Settings, data: dict[str, Any]) -> Outcome:
    """WorktreeRemove: end the worktree's session when it is clean (kill), else
    preserve it (capture, record, remove) as removed by Claude Code, which the
    restore of every pending session leaves. Returns the Outcome; a worktree that
    is not a linked worktree is left alone."""
    path = data.get("worktree_path")
    if not isinstance(path, str) or admin_dir(path) is None:
        return Outcome("-", Action.HOOK, Status.NOTHING,
                       f"WorktreeRemove: {path!r} is not a linked worktree; nothing to do")
    s = current_session(ctx, path)
    try:
        o = kill(ctx, s.id)
    except Refused:
        outs = preserve.preserve(ctx, [s], settings=settings, removed_by=claude_code.TOOL)
        o = outs[0]
    except AoError as exc:
        o = Outcome(s.id, Action.KILL, Status.REFUSED, str(exc))
    ctx.log("hook", s.id, "worktree-remove", result=o.status, step=o.action)
    return o
