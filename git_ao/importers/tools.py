"""`git ao import --tool NAME`: register the sessions other tools keep as git-ao sessions.

Each tool has an adapter module here (see found.py for what one exposes); `ao`, the
ao daemon, is read by daemon.py. Without `--tool` every tool whose state is found
under the home directory (or, for Conductor, in a repository: sources) is imported,
and the ao daemon's database when it is there.

For each session an adapter reports (a Found):

* live, its worktree not yet known to git-ao: registered (git_ao.manage.register)
  with the tool's facts (harness, agent session id, kind, tool, tool id, tmux
  session, group). Its id is the adapter's name for it, else the worktree's name;
  `<repo>-<name>` when that is taken, so worktrees of the same name in other
  repositories or tools get distinct ids.
* its worktree already a session: the tool's facts are recorded where they add to
  what the session has (a second import of the same state changes nothing).
* not live (paused, archived, ended): reported, never registered.
* its worktree gone, but a live or pending session with the same tool and tool id,
  or the same agent session id, at another path (the repository moved and `git ao
  add NEWPATH --id ID` re-pointed it): known there, neither ended nor refused.
* live at a worktree no session holds, while a live session of the same tool and
  tool id (or the same agent session id, or, the tool's id being a path, the same
  place in its repository) lost its repository (moved, the worktree with it): that
  session is re-pointed there as `git ao add NEWPATH --id ID` does, not
  registered a second time.

What cannot be imported (a file an adapter cannot read, a live session whose
worktree is gone) is refused once, then remembered in `import_notes` and only
mentioned, as for the ao daemon (importers/daemon.py), so the exit status says
whether anything new went wrong. One tool's failure never stops the others: an
exception an adapter raises reading a source (not only Unreadable) refuses that
source, and one raised importing a session refuses that session, each with one
line naming it and the error.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from git_ao import git
from git_ao.context import Context
from git_ao.errors import AoError, Fatal, Usage
from git_ao.fs.gone import gone_worktree, same_place
from git_ao.importers import daemon
from git_ao.importers import notes as notes_mod
from git_ao.importers.found import Found, Unreadable, distinct
from git_ao.importers.names import AO, NAMES, TOOLS
from git_ao.manage.listing import list_json
from git_ao.manage.register import id_from_name, left_by, linked_worktree, register, repoint
from git_ao.outcome import Action, Outcome, Status
from git_ao.store.records import Session

# The import_notes keys of the files an adapter could not read start with this,
# then the line that named the file.
_UNREADABLE = "(unreadable)"


def adapter(name: str) -> ModuleType | None:
    """The adapter module of tool `name`, or None when this git-ao has none."""
    module = f"git_ao.importers.{TOOLS[name]}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def home() -> Path:
    """The home directory tools keep their state under ($HOME)."""
    return Path(os.path.expanduser("~"))


def sources(name: str, where: Path, known: Sequence[str] = ()) -> list[Path]:
    """The existing state of tool `name` under home directory `where`, and what it
    keeps inside repositories (an adapter's `repository_sources`, given `known`,
    the common dirs of the repositories git-ao has sessions of)."""
    mod = adapter(name)
    if mod is None:
        return []
    paths = list(mod.default_sources(where))
    in_repositories = getattr(mod, "repository_sources", None)
    if in_repositories is not None:
        paths += in_repositories(where, known)
    return [p for p in distinct(paths) if os.path.lexists(p)]


def known_repositories(ctx: Context) -> list[str]:
    """The common dirs of the repositories git-ao has sessions of, each once."""
    return list(dict.fromkeys(s.common_dir for s in ctx.store.sessions()))


def found_tools(where: Path, data_dir: str, known: Sequence[str] = (),
                found: dict[str, list[Path]] | None = None) -> list[str]:
    """The tools with state under `where` (or in the repositories `known`), `ao`
    first when its database is in `data_dir`: what `git ao import` with no --tool
    imports. `found`, when given, gains each tool's sources."""
    found = {} if found is None else found
    for n in sorted(TOOLS):
        found[n] = sources(n, where, known)
    out = [AO] if os.path.lexists(daemon.default_path(data_dir)) else []
    return out + [n for n in sorted(TOOLS) if found[n]]


def run(ctx: Context, tools: Sequence[str], from_path: str | None, *,
        data_dir: str, daemon_alone_fatal: bool = True) -> list[Outcome]:
    """Import the sessions of `tools` (none: every tool found, see found_tools).

    from_path: the one tool's state file or directory instead of where it keeps it
    (with no tool named: the ao daemon's database). Returns one Outcome per session
    (and per source that could not be read). Raises Usage (an unknown tool, --from
    with several) and Fatal when nothing at all is found, or when the ao daemon is
    the only tool imported and its database cannot be read (as `git ao import`
    always did); with other tools, or `daemon_alone_fatal` False (the import a
    preserve or restore runs first), that is one refused line, said once as any
    tool's unreadable source is (`said_once`), and the others go on. A database
    that holds no daemon session (an empty file) is no failure (daemon.run),
    but for one `from_path` names, which is Fatal: the path is wrong."""
    for t in tools:
        if t not in NAMES:
            raise Usage(f"unknown tool '{t}': use one of {', '.join(NAMES)}")
    names = list(dict.fromkeys(tools))
    if from_path is not None and len(names) > 1:
        raise Usage("--from names the state of one tool; give one --tool with it")
    if from_path is not None and not names:
        names = [AO]
    where = home()
    known = known_repositories(ctx) if from_path is None else []
    found: dict[str, list[Path]] = {}
    if not names:
        names = found_tools(where, data_dir, known, found)
        if not names:
            raise Fatal(f"no ao daemon database at '{daemon.default_path(data_dir)}' and no "
                        f"tool's state under {where} (use --tool NAME --from PATH)")
    outcomes: list[Outcome] = []
    for name in names:
        if name == AO:
            path = from_path or daemon.default_path(data_dir)
            try:
                found_here, db = daemon.run(ctx, path)
                if from_path is not None and db.holds_none is not None:
                    # A file named as the daemon's that is none: the name is wrong.
                    raise Fatal(f"'{path}' is not an ao daemon database (it is "
                                f"{db.holds_none}); nothing imported")
                outcomes += found_here
            except Exception as exc:  # one tool's failure stops no other
                if isinstance(exc, Fatal) and len(names) == 1 and daemon_alone_fatal:
                    raise  # the daemon alone: its database unreadable is the error
                outcomes.append(notes_mod.said_once(ctx, f"{AO}:{os.path.realpath(path)}", _UNREADABLE,
                                           Outcome(AO, Action.IMPORT, Status.REFUSED,
                                                   str(exc) if isinstance(exc, Fatal)
                                                   else _internal(f"the ao daemon database "
                                                                  f"'{path}'", exc))))
            continue
        srcs = [Path(from_path)] if from_path else found[name] if name in found \
            else sources(name, where, known)
        outcomes += _tool(ctx, name, srcs)
    return outcomes


def _tool(ctx: Context, name: str, srcs: list[Path]) -> list[Outcome]:
    mod = adapter(name)
    if mod is None:
        return [Outcome(name, Action.IMPORT, Status.REFUSED, f"this git-ao has no importer for {name}")]
    if not srcs:
        return [Outcome(name, Action.IMPORT, Status.NOTHING,
                        f"no {name} state under {home()}; nothing imported")]
    out: list[Outcome] = []
    for src in srcs:
        key = f"{name}:{os.path.realpath(src)}"
        notes = ctx.store.import_notes(key)
        seen = set()
        lines: list[str] = []
        try:
            found = mod.read(src)
        except Unreadable as exc:
            lines, found = exc.lines, exc.found
        except Exception as exc:  # noqa: BLE001 - an adapter's own failure: this source only
            lines, found = [_internal(f"{name} state '{src}'", exc)], []
        # Each file on its own line and note: a count would hide the others.
        for line in lines:
            seen.add(note := f"{_UNREADABLE} {line}")
            out.append(notes_mod.said_once(ctx, key, note, Outcome(
                name, Action.IMPORT, Status.REFUSED, f"{name}: {line}"), notes))
        # A worktree no session holds first: it may re-point a session whose
        # repository moved (_stranded), which the tool's older records then name.
        said: dict[int, Outcome] = {}
        for i in sorted(range(len(found)), key=lambda i: not _unheld(ctx, found[i])):
            f = found[i]
            seen.add(f.tool_id)
            try:
                o = _one(ctx, f)
            except Exception as exc:  # noqa: BLE001 - that session only
                o = Outcome(name, Action.IMPORT, Status.REFUSED,
                            _internal(f"{name} session {f.tool_id!r}", exc))
            said[i] = notes_mod.said_once(ctx, key, f.tool_id, o, notes)
        out += [said[i] for i in range(len(found))]
        if not ctx.dry_run:
            for gone in set(notes) - seen:
                ctx.store.drop_import_note(key, gone)
    return out


def _internal(what: str, exc: Exception) -> str:
    """The refusal of what an importer failed on in a way it does not foresee (a bug,
    or a value no check caught): named with the error, the rest still imported."""
    return (f"cannot import {what}: internal error: {type(exc).__name__}: {exc}; "
            "nothing of it imported")


def _one(ctx: Context, f: Found) -> Outcome:
    path = os.path.realpath(f.worktree) if f.worktree is not None else ""
    what = f"{f.tool} {f.tool_id}" if f.tool_id != str(f.worktree) else f.tool
    holder = ctx.store.holder_of(path) if path else None
    if holder is not None and not holder.live and f.live and os.path.isdir(path) \
            and not left_by(holder, path):
        # A new worktree the tool made at a pending save's path: a session of its
        # own (`register`), the save staying pending beside it.
        holder = None
    sid = holder.id if holder is not None else id_from_name(f.name or os.path.basename(path))
    if holder is not None and not holder.live:
        # Pending in git-ao: its worktree went into git-ao's trash, which the tool
        # may read as ended; the save is git-ao's, restore brings it back.
        return _known(ctx, holder, f)
    moved = _moved(ctx, f, path) if holder is None else None
    if moved is not None:
        # The tool still records where the session was before its repository moved
        # and `git ao add NEWPATH --id ID` re-pointed it: neither ended nor missing.
        where = f"no longer at {f.worktree} where {what} records it" if f.worktree \
            else f"{what} records no worktree for it"
        data = list_json(moved)
        gone = gone_worktree(moved)
        at = f"at {moved.worktree_path}" if gone is None else \
            f"(recorded at {moved.worktree_path}: {gone.advice(moved, None, ctx.store.sessions())})"
        return Outcome(moved.id, Action.IMPORT, Status.NOTHING,
                       f"already known: {data['state']} in git-ao {at}, {where}", data)
    if not f.live:
        return Outcome(sid, Action.IMPORT, Status.NOTHING,
                       f"not live in {what}: {f.note or 'paused, archived or ended'}; "
                       "not imported")
    if holder is not None:
        return _known(ctx, holder, f)
    if not path or not os.path.isdir(path):
        return Outcome(sid, Action.IMPORT, Status.REFUSED,
                       f"{what} says live, but its worktree {path or '(none)'} does not exist")
    stranded = _stranded(ctx, f, path)
    if stranded is not None:
        return _repointed(ctx, stranded, f, path, what)
    try:
        s = register(ctx, path, kind=f.kind, harness=f.harness,
                     agent_session_id=f.agent_session_id, name=f.name)
    except AoError as exc:
        return Outcome(sid, Action.IMPORT, Status.REFUSED, f"{what}: {exc}")
    s.tool, s.tool_id, s.tmux_session, s.group_id = f.tool, f.tool_id, f.tmux_session, f.group
    if not ctx.dry_run:
        ctx.store.set_tool_facts(s.id, tool=f.tool, tool_id=f.tool_id,
                                 tmux_session=f.tmux_session, group_id=f.group,
                                 harness=s.harness, agent_session_id=s.agent_session_id)
    note = ""
    if f.branch and s.branch and f.branch != s.branch:
        note = f" ({f.tool} said branch {f.branch}; git says {s.branch})"
    ctx.log("import", s.id, "dry-run" if ctx.dry_run else "registered", tool=f.tool,
            workspace=s.worktree_path, harness=s.harness or None, group=f.group)
    return Outcome(s.id, Action.IMPORT, Status.OK,
                   f"{'would register' if ctx.dry_run else 'registered'} {s.kind} from "
                   f"{f.tool} at {s.worktree_path}{note}", list_json(s), registered=s)


def _moved(ctx: Context, f: Found, path: str) -> Session | None:
    """The live or pending session that tool session `f` is, recorded at another
    path because its worktree moved: `f`'s worktree is gone (or not recorded) and
    the session has the same tool and tool id, else the same agent session id."""
    if f.worktree is not None and os.path.lexists(f.worktree):
        return None
    there = [s for s in ctx.store.sessions()
             if (s.live or s.pending) and s.worktree_path != path]
    same = [s for s in there if s.tool == f.tool and s.tool_id == f.tool_id] or [
        s for s in there if f.agent_session_id and s.agent_session_id == f.agent_session_id]
    return same[0] if same else None


def _unheld(ctx: Context, f: Found) -> bool:
    """Does the tool say `f` is live at a worktree no session holds?"""
    return f.live and f.worktree is not None and os.path.isdir(f.worktree) \
        and ctx.store.holder_of(os.path.realpath(f.worktree)) is None


def _stranded(ctx: Context, f: Found, path: str) -> Session | None:
    """The live session whose repository is gone (moved, with its worktree, which
    the tool reports live at `path` now, held by no session) that tool session `f`
    is: the same tool and tool id, else the same agent session id, else the same
    tool at the same place in the repository (`same_place`: a tool whose id is the
    worktree's path, Claude Code's or Conductor's, records the new path) on the same
    branch. None when no session, or more than one, is."""
    lost = [s for s in ctx.store.sessions() if s.live and not os.path.isdir(s.common_dir)]
    if not lost:
        return None
    same = [s for s in lost if s.tool == f.tool and s.tool_id == f.tool_id] or [
        s for s in lost if f.agent_session_id and s.agent_session_id == f.agent_session_id]
    if not same:
        try:
            dirs, top = linked_worktree(path)
            branch = git.current_branch(top)
        except AoError:
            return None
        same = [s for s in lost if s.tool == f.tool and s.branch == branch
                and same_place(s, dirs.common_dir, top)]
    return same[0] if len(same) == 1 else None


def _repointed(ctx: Context, s: Session, f: Found, path: str, what: str) -> Outcome:
    """Re-point session `s` at `path` (register.repoint), then record the tool's
    facts as for a session already known (`_known`)."""
    try:
        o = repoint(ctx, s, path)
    except AoError as exc:
        return Outcome(s.id, Action.IMPORT, Status.REFUSED, f"{what}: {exc}")
    now = ctx.store.get(s.id) if not ctx.dry_run else None
    if now is None:
        return Outcome(s.id, Action.IMPORT, Status.OK, f"{o.message} ({f.tool} reports it there)",
                       o.data)
    ctx.log("import", s.id, "repointed", tool=f.tool, workspace=now.worktree_path)
    facts = _known(ctx, now, f)
    more = f"; {facts.message}" if facts.status == Status.OK else ""
    return Outcome(s.id, Action.IMPORT, Status.OK,
                   f"{o.message} ({f.tool} reports it there){more}", facts.data)


def _known(ctx: Context, s: Session, f: Found) -> Outcome:
    """The worktree is already session `s`: add the tool's facts it lacks. Facts of a
    session this tool made follow the tool (a newer agent session); a session
    registered otherwise keeps what it was given and only gains what it lacked."""
    if not s.live:
        return Outcome(s.id, Action.IMPORT, Status.NOTHING, f"already known: {s.state} in git-ao", list_json(s))
    if s.tool not in (None, f.tool):
        return Outcome(s.id, Action.IMPORT, Status.NOTHING,
                       f"already known, imported from {s.tool}", list_json(s))
    mine = s.tool == f.tool
    want = {
        "tool": f.tool, "tool_id": f.tool_id,
        "tmux_session": f.tmux_session if mine or not s.tmux_session else s.tmux_session,
        "group_id": f.group if mine or not s.group_id else s.group_id,
        "harness": f.harness if (mine and f.harness) or not s.harness else s.harness,
        "agent_session_id": f.agent_session_id if (mine and f.agent_session_id)
        or not s.agent_session_id else s.agent_session_id,
    }
    have = {k: getattr(s, k) for k in want}
    if want == have:
        return Outcome(s.id, Action.IMPORT, Status.NOTHING, "already known (live)", list_json(s))
    changed = ", ".join(f"{k} {v}" for k, v in want.items() if v != have[k] and v)
    if not ctx.dry_run:
        ctx.store.set_tool_facts(s.id, tool=want["tool"] or f.tool, tool_id=want["tool_id"] or "",
                                 tmux_session=want["tmux_session"], group_id=want["group_id"],
                                 harness=want["harness"] or "",
                                 agent_session_id=want["agent_session_id"])
        ctx.log("import", s.id, "facts", tool=f.tool, harness=want["harness"] or None)
    for k, v in want.items():
        setattr(s, k, v)
    return Outcome(s.id, Action.IMPORT, Status.OK,
                   f"{'would record' if ctx.dry_run else 'recorded'} {f.tool}'s facts: {changed}",
                   list_json(s))
