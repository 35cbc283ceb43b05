"""Relaunch, the last step of restore: the one non-git process git-ao starts.

The command comes from `git-ao.toml` (`relaunch.harness.<name>`, else
`relaunch.command`) as an argument list, never a shell string. It runs in the
restored worktree with the session's facts in AO_* environment variables, and
`{name}` placeholders in its arguments are replaced by the same facts, each
argument as one piece of data. A relaunch that fails is reported and logged;
it never undoes the restore that came before it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import IO, TYPE_CHECKING

from git_ao.outcome import Action, Outcome, Status
from git_ao.store.records import Session

if TYPE_CHECKING:
    from git_ao.context import Context
    from git_ao.store.settings import Settings


# Environment variable -> the placeholder that may appear in an argument.
FACTS = {
    "AO_SESSION_ID": "session_id",
    "AO_WORKTREE": "worktree",
    "AO_BRANCH": "branch",
    "AO_KIND": "kind",
    "AO_HARNESS": "harness",
    "AO_AGENT_SESSION_ID": "agent_session_id",
    "AO_RESTORE_STATUS": "restore_status",
    # From the ao daemon (git ao import): a chat-mode session resumes by its
    # provider conversation, not by AO_AGENT_SESSION_ID.
    "AO_SESSION_MODE": "session_mode",
    "AO_PROVIDER_CONVERSATION_ID": "provider_conversation_id",
    "AO_SESSION_GROUP": "session_group",
}


# The harnesses that resume an agent session by its id, and how (each CLI's documented
# form: Claude Code's CLI reference `claude --resume <id>`; Codex's ResumeCommand,
# codex-rs/cli/src/main.rs, `codex resume <SESSION_ID>`). Keys are harness names as
# the ao daemon and the tool importers record them.
RESUME = {
    "claude": ["claude", "--resume", "{agent_session_id}"],
    "claude-code": ["claude", "--resume", "{agent_session_id}"],
    "codex": ["codex", "resume", "{agent_session_id}"],
}


def resume_argv(session: Session) -> list[str] | None:
    """The built-in command that resumes the session's agent in its worktree: the
    harness's RESUME form with its agent session id, or None (no id, or a harness
    that does not resume by id)."""
    form = RESUME.get(session.harness or "")
    if form is None or not resumable_id(session.agent_session_id):
        return None
    assert session.agent_session_id is not None
    return expand(form, {"AO_AGENT_SESSION_ID": session.agent_session_id})


def resumable_id(agent_session_id: str | None) -> bool:
    """Can this agent session id go into a built-in resume command as one plain
    argument? Not when it is empty, holds a space or a character that does not
    print, starts with '-' (the agent program would read an option), or is longer
    than 256 characters: an id read from another tool's files is not trusted."""
    v = agent_session_id or ""
    return 0 < len(v) <= 256 and v.isprintable() and not v.startswith("-") \
        and not any(c.isspace() for c in v)


def in_tmux(argv: list[str], session: Session) -> list[str]:
    """`argv` run in a new detached tmux session in the session's worktree: the tmux
    session its tool ran the agent in, else one named after the git-ao session
    (tmux turns '.' and ':' in a name into '_'; done here so the hint says the name)."""
    name = re.sub(r"[.:]", "_", session.tmux_session or session.id)
    return ["tmux", "new-session", "-d", "-s", name, "-c", session.worktree_path, *argv]


def resume_hint(session: Session) -> str | None:
    """How to resume the session's agent by hand, as one exact command line, or None
    when nothing resumes it."""
    argv = resume_argv(session)
    if argv is not None:
        if session.tmux_session:
            return shlex.join(in_tmux(argv, session))
        return f"cd {shlex.quote(session.worktree_path)} && {shlex.join(argv)}"
    if session.agent_session_id:
        return (f"{session.harness or 'agent'} session {session.agent_session_id} in "
                f"{session.worktree_path}")
    return None


class Launch(StrEnum):
    """How a relaunch command ended; the value is the `state` the output and the log give."""

    EXITED = "exited"
    RUNNING = "running"  # still going when the wait ended, left running
    FAILED_TO_START = "failed-to-start"


@dataclass
class Result:
    """What one relaunch did. returncode: int or None; message: one line for people
    and the log."""

    ok: bool
    status: Launch
    returncode: int | None
    message: str


def facts(session: Session, restore_status: str) -> dict[str, str]:
    """The AO_* variables for a restored session (values are str, '' when unknown)."""
    return {
        "AO_SESSION_ID": session.id,
        "AO_WORKTREE": session.worktree_path,
        "AO_BRANCH": session.branch or "",
        "AO_KIND": session.kind,
        "AO_HARNESS": session.harness or "",
        "AO_AGENT_SESSION_ID": session.agent_session_id or "",
        "AO_RESTORE_STATUS": restore_status,
        "AO_SESSION_MODE": getattr(session, "session_mode", None) or "",
        "AO_PROVIDER_CONVERSATION_ID": getattr(session, "provider_conversation_id", None) or "",
        "AO_SESSION_GROUP": getattr(session, "group_id", None) or "",
    }


def expand(argv: Iterable[str], env: Mapping[str, str]) -> list[str]:
    """Replace `{session_id}`, `{worktree}`, ... (FACTS' names) inside each argument.

    Plain text replacement of known names only: a value never becomes more than
    the one argument it lands in, and nothing is evaluated."""
    out = []
    for arg in argv:
        for var, name in FACTS.items():
            if var in env:  # a fact the caller did not give stays as written
                arg = arg.replace("{" + name + "}", env[var])
        out.append(arg)
    return out


def run(argv: list[str], session: Session, restore_status: str, *, timeout: float,
        stdout: IO[bytes] | int | None = None) -> Result:
    """Run the relaunch command for one restored session and wait up to `timeout`
    seconds for it to exit.

    argv: list[str] from the config. session: store.Session (restored).
    restore_status: 'ok' or 'attention'. stdout: where the command's output goes
    (a file object or descriptor; default: git-ao's stderr, so --json output stays clean).
    A command still running after the wait is left running in its own session
    (a launcher such as `tmux new-session -d` returns at once). Never raises for
    a command that fails: returns a Result."""
    env = facts(session, restore_status)
    full_env = dict(os.environ, **env)
    argv = expand(argv, env)
    try:
        proc = subprocess.Popen(argv, cwd=session.worktree_path, env=full_env,
                                stdin=subprocess.DEVNULL,
                                stdout=stdout if stdout is not None else 2,
                                start_new_session=True)
    except OSError as exc:
        return Result(False, Launch.FAILED_TO_START, None,
                      f"relaunch command {argv[0]!r} could not start: {exc.strerror or exc}")
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return Result(True, Launch.RUNNING, None,
                      f"relaunch command {argv[0]!r} still running after {timeout:g}s "
                      f"(pid {proc.pid}), left running")
    if rc != 0:
        return Result(False, Launch.EXITED, rc, f"relaunch command {argv[0]!r} exited with {rc}")
    return Result(True, Launch.EXITED, 0, f"relaunched with {argv[0]!r}")


def relaunch_all(ctx: Context, settings: Settings, outcomes: list[Outcome], no_launch: bool,
                 stop: threading.Event, report: Callable[[Outcome], None],
                 hint: Callable[[str], None]) -> list[Outcome]:
    """The last step of restore, for every session this run brought back (not one
    it only named, `Outcome.not_restored`, nor one whose worktree is not there):
    run the configured relaunch command in its worktree, or print how to resume
    its agent. Once `stop`
    is set by a signal no command starts, as with --no-launch (the machine is going
    down again). Returns the relaunch Outcomes, each already passed to `report`
    (a failed one exits 1; the restore before it stands); how to resume an agent
    by hand goes to `hint`."""
    from git_ao.store.settings import DEFAULT_RELAUNCH_TIMEOUT
    extra = []
    for o in list(outcomes):
        if o.action != "restore" or o.status not in (Status.OK, Status.ATTENTION) \
                or o.not_restored:
            continue
        s = ctx.store.get(o.session_id)
        if s is None or not s.live or not os.path.isdir(s.worktree_path):
            continue
        launching = not no_launch and not stop.is_set()
        argv = settings.relaunch_argv(s.harness) if launching else None
        builtin = resume_argv(s)
        if argv is None and launching and builtin is not None \
                and settings.get("relaunch.builtin"):
            # An interactive agent needs a terminal, which a boot restore has not.
            argv = in_tmux(builtin, s)
        if argv is None:
            how = resume_hint(s)
            if how:
                hint(f"resume {s.id}: {how}")
            continue
        res = run(argv, s, o.status,
                           timeout=settings.get("relaunch.timeout", DEFAULT_RELAUNCH_TIMEOUT))
        status = Status.OK if res.ok else Status.FAILED
        ctx.log("relaunch", s.id, status, detail=res.message, command=argv[0],
                returncode=res.returncode, state=res.status)
        r = Outcome(s.id, Action.RELAUNCH, status, res.message,
                    {"argv0": argv[0], "returncode": res.returncode, "state": res.status})
        report(r)
        extra.append(r)
    return extra
