"""Live agents: the processes still working inside a worktree, and stopping them.

A worktree's directory is renamed into the trash once its work is saved. A
process whose working directory, open file or executable lies inside it keeps
running there: its later writes land in the trash (or, by absolute path,
re-create the old path), and are lost to the restore. This module finds those
processes with psutil and applies the stop policy (`stop`, `refuse` or
`report`) that `preserve.agents` and its per-harness keys choose. See
docs/agents.md for the policy, its defaults and why.

Besides git_ao/agents/relaunch.py and git_ao/git/process.py this is the one module that starts a process:
the harness's own stop command (an argument list, never a shell string).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import psutil

from git_ao.agents.relaunch import expand

Policy = Literal["stop", "refuse", "report"]
POLICIES: tuple[Policy, ...] = ("stop", "refuse", "report")
DEFAULT_TIMEOUT = 10.0  # seconds; settings.DEFAULT_AGENT_TIMEOUT says the same

# Keeps an Agent printable and its memory bounded when a process has a huge
# argument list (a harness passing a whole prompt on its command line).
_MAX_ARGS = 32
_MAX_ARG_CHARS = 512
# A process can hold thousands of files open inside a worktree (an indexer):
# the first few name the tie well enough.
_MAX_FILE_TIES = 16
_POLL = 0.1  # seconds between checks while waiting for processes to exit

_ERRORS = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)


@dataclass(frozen=True)
class Agent:
    """A process tied to a worktree.

    pid, name: as the kernel reports them. cmdline: the arguments (a tuple, so an
    Agent stays hashable; at most 32 arguments of 512 characters each, cut
    beyond that; empty when unreadable). ties: why it is tied, each one of
    "cwd", "cwd <relative path>", "open file <relative path>",
    "executable <relative path>" (paths relative to the worktree).
    create_time: the process's start time as psutil reports it (seconds since
    the epoch); with pid it names the process, so a recycled pid is never
    signalled.
    """

    pid: int
    name: str
    cmdline: tuple[str, ...]
    ties: tuple[str, ...]
    create_time: float = field(default=0.0, compare=False)

    def describe(self) -> str:
        """One line for people and the log: pid, name and ties."""
        return f"pid {self.pid} ({self.name}): {', '.join(self.ties)}"


@dataclass
class Scan:
    """One scan of every process against several worktrees.

    agents: {path as given: [Agent]} the processes to deal with, sorted by pid.
    ancestors_inside: {path as given: [Agent]} this process's own ancestors
    tied to the worktree (the user's shell sitting in it, the unit that runs
    git-ao): never stopped, but worth telling the user, whose shell will be
    left in a directory that is gone.
    pipeline_inside: {path as given: [Agent]} the other commands of git-ao's own
    pipeline tied to the worktree (`git ao-preserve --all | tee log` run from
    a shell sitting in it): never stopped either (see _own_pipeline).
    """

    agents: dict[str, list[Agent]]
    ancestors_inside: dict[str, list[Agent]]
    pipeline_inside: dict[str, list[Agent]] = field(default_factory=dict)


def _inside(path: str, root: str) -> bool:
    # realpaths on both sides, so plain string prefixes are exact; "/x" must
    # not match "/xy", and the root "/" holds everything.
    if root == os.sep:
        return path.startswith(os.sep)
    return path == root or path.startswith(root + os.sep)


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root)


def _cmdline(proc: psutil.Process) -> tuple[str, ...]:
    try:
        args = proc.cmdline()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return ()
    return tuple(a[:_MAX_ARG_CHARS] for a in args[:_MAX_ARGS])


def _self_and_ancestors() -> tuple[int, set[int]]:
    """(this process's pid, its ancestors' pids: `lock.ancestors`)."""
    from git_ao.git import lock
    return os.getpid(), lock.ancestors()


def _own_pipeline() -> set[int]:
    """The pids of the other commands of the shell pipeline git-ao runs in: the
    processes with the same parent and the same process group as git-ao's top
    process (this one, or the `git` wrapper that started it for `git ao-...`, and
    its own `git` wrapper in turn), joined to it by their standard input and
    output pipes where /proc shows them; and so on above it, for each subshell
    that reads or writes the same pipe as the process below (a group or a
    function in the pipeline: `{ git ao-restore ...; } | tee log`). A shell with
    job control gives each pipeline its own process group; a top process whose
    parent is pid 1 has no pipeline. A process that cannot be read is left out
    (it may then be an agent)."""
    try:
        top = psutil.Process()
        parent = top.parent()
        while parent is not None and parent.name() == "git":
            top, parent = parent, parent.parent()
    except (*_ERRORS, OSError):
        return set()
    out: set[int] = set()
    while parent is not None and parent.pid > 1:
        mates = _joined(top, parent)
        if mates is None:
            break
        out |= mates
        mine = _pipe_ends(top.pid)
        try:
            if mine is None or not _same_pipe(mine, _pipe_ends(parent.pid)):
                break
            top, parent = parent, parent.parent()
        except (*_ERRORS, OSError):
            break
    return out


def _joined(top: psutil.Process, parent: psutil.Process) -> set[int] | None:
    """The children of `parent` in `top`'s process group joined to `top` by their
    pipes (every one of them where /proc cannot tell), or None when they cannot
    be read."""
    try:
        group = os.getpgid(top.pid)
        siblings = parent.children()
    except (*_ERRORS, OSError):
        return None
    mates = set()
    for proc in siblings:
        try:
            if proc.pid != top.pid and os.getpgid(proc.pid) == group:
                mates.add(proc.pid)
        except OSError:
            continue
    ends = {pid: _pipe_ends(pid) for pid in mates | {top.pid}}
    if ends[top.pid] is None:
        return mates  # no /proc to tell a pipeline from a background job
    # A background job of the same script has the same parent and group: only the
    # commands joined to git-ao's by their pipes (one's stdout the next one's
    # stdin) are its pipeline.
    out: set[int] = set()
    todo = [top.pid]
    while todo:
        here = ends[todo.pop()]
        assert here is not None
        for pid in mates - out:
            there = ends[pid]
            if there is not None and (here[1] and here[1] == there[0]
                                      or here[0] and here[0] == there[1]):
                out.add(pid)
                todo.append(pid)
    return out


def _same_pipe(a: tuple[str, str], b: tuple[str, str] | None) -> bool:
    """Do two processes read, or write, the same pipe (as _pipe_ends gives them)?"""
    return b is not None and bool(a[0] and a[0] == b[0] or a[1] and a[1] == b[1])


def _pipe_ends(pid: int) -> tuple[str, str] | None:
    """The pipes a process reads on standard input and writes on standard output
    (`pipe:[inode]` from /proc/<pid>/fd, '' where that is no pipe), None where
    /proc cannot tell."""
    found = []
    for fd in (0, 1):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            link = ""
        except OSError:
            return None
        found.append(link if link.startswith("pipe:") else "")
    return found[0], found[1]


def scan(paths: Iterable[str]) -> Scan:
    """Find the processes tied to each directory in `paths`, reading every
    process of the machine once.

    A process is tied to a directory when its working directory, its executable
    or one of its open regular files is that directory or lies below it, all
    compared after os.path.realpath (the kernel reports these paths resolved,
    through /proc/<pid>/cwd, exe and fd on Linux). This process is left out;
    its ancestors go to `ancestors_inside`, the other commands of its own
    pipeline to `pipeline_inside`, never to `agents`. Its children
    (and any process started by anyone) are agents like the rest: call this
    before git-ao starts processes of its own inside the worktrees.

    Cost: one pass over the process table reading cwd and exe
    (psutil.process_iter), the name and command line only of the processes
    found tied, and open_files() only for processes whose cwd and
    exe were readable and that have an executable (not kernel threads, not
    zombies, not other users' processes when not root: the kernel denies their
    fds exactly as it denies their cwd). Processes that exit or deny access
    mid-scan are skipped (psutil.NoSuchProcess, AccessDenied, ZombieProcess).
    Never raises for a process; a path that does not exist is compared by the
    name it would resolve to.
    """
    given = list(dict.fromkeys(paths))
    roots = {p: os.path.realpath(p) for p in given}
    agents: dict[str, list[Agent]] = {p: [] for p in given}
    ancestors: dict[str, list[Agent]] = {p: [] for p in given}
    pipeline: dict[str, list[Agent]] = {p: [] for p in given}
    if not given:
        return Scan(agents, ancestors, pipeline)
    me, parents = _self_and_ancestors()
    mates = _own_pipeline()
    # The name is read only for the processes found tied: reading it for every
    # process of the machine cost as much as the rest of the pass.
    for proc in psutil.process_iter(["pid", "cwd", "exe"]):
        info = proc.info
        pid = info["pid"]
        if pid == me:
            continue
        cwd, exe = info["cwd"], info["exe"]
        ties: dict[str, list[str]] = {}
        for p, root in roots.items():
            t = []
            if cwd and _inside(cwd, root):
                t.append("cwd" if cwd == root else f"cwd {_rel(cwd, root)}")
            if exe and _inside(exe, root):
                t.append(f"executable {_rel(exe, root)}")
            if t:
                ties[p] = t
        if cwd and exe:
            try:
                files = sorted({f.path for f in proc.open_files()})
            except _ERRORS:
                files = []
            for p, root in roots.items():
                inside = [f for f in files if _inside(f, root)][:_MAX_FILE_TIES]
                if inside:
                    ties.setdefault(p, []).extend(f"open file {_rel(f, root)}" for f in inside)
        if not ties:
            continue
        try:
            create_time = proc.create_time()
            cmdline = _cmdline(proc)
            name = proc.name()
        except _ERRORS:
            continue  # exited between the reads: nothing left to stop
        for p, t in ties.items():
            agent = Agent(pid, name or "", cmdline, tuple(t), create_time)
            (ancestors if pid in parents else pipeline if pid in mates else agents)[p] \
                .append(agent)
    for lists in (agents, ancestors, pipeline):
        for found in lists.values():
            found.sort(key=lambda a: a.pid)
    return Scan(agents, ancestors, pipeline)


def find(path: str) -> list[Agent]:
    """The processes tied to the directory `path` (see scan), sorted by pid,
    without this process, its ancestors and its own pipeline."""
    return scan([path]).agents[path]


def find_many(paths: Iterable[str]) -> dict[str, list[Agent]]:
    """{path: [Agent]} for several directories from one pass over the process
    table (see scan): what `git ao-preserve --all` needs for all its sessions."""
    return scan(paths).agents


def ancestors_inside(path: str) -> list[Agent]:
    """This process's ancestors tied to `path` (its shell sitting in the
    worktree, say), which find() leaves out and stop() never signals."""
    return scan([path]).ancestors_inside[path]


# ---------------------------------------------------------------- policy


class Settings(Protocol):
    """What policy_for reads: store.settings.Settings fits."""

    def get(self, key: str, default: object = None) -> object: ...


def policy_for(settings: Settings, harness: str | None, *, shutdown: bool) -> Policy:
    """The agent policy for a session of `harness` (None or '' when unknown).

    `preserve.harness.<harness>.agents` wins, then `preserve.agents`; when
    neither is set, "stop" for a shutdown (`--all`: the agents are going down
    anyway, and stopping them first is what gets their last writes into the
    save) and "refuse" for sessions named by hand or the current one (removing
    a worktree an agent works in is a surprise the user should decide).
    Values were checked when the config was read; an unknown one here raises
    ValueError.
    """
    value = settings.get(f"preserve.harness.{harness}.agents") if harness else None
    if value is None:
        value = settings.get("preserve.agents")
    if value is None:
        return "stop" if shutdown else "refuse"
    for policy in POLICIES:
        if value == policy:
            return policy
    raise ValueError(f"unknown agent policy {value!r}")


def stop_command_for(settings: Settings, harness: str | None) -> list[str] | None:
    """The harness's stop command as an argument list: `stop.harness.<harness>`,
    else `stop.command`; None when neither is set. Values were checked when the
    config was read (a string is split like a shell splits words)."""
    from git_ao.store.settings import _command

    value = settings.get(f"stop.harness.{harness}") if harness else None
    if value is None:
        value = settings.get("stop.command")
    return None if value is None else _command(value)


# ---------------------------------------------------------------- stop


@dataclass
class CommandResult:
    """What the stop command did. status: 'exited', 'running' (still going when
    its share of the timeout ended; left running) or 'failed-to-start';
    returncode: int or None; message: one line for people and the log."""

    argv: list[str]
    status: str
    returncode: int | None
    message: str


@dataclass
class StopReport:
    """What stop() did.

    policy: the policy applied. stopped ("stop" only): agents not running at
    the end (exited after the stop command or SIGTERM, or gone before). still_running: agents alive at the end (for "refuse"
    and "report", every agent that was alive). not_signalled: agents stop()
    would not touch: this process's ancestors and its own pipeline, or a process whose SIGTERM the
    kernel refused (another user's); they are in still_running too when alive.
    command: the stop command's result, None when none ran.
    """

    policy: Policy
    stopped: list[Agent] = field(default_factory=list)
    still_running: list[Agent] = field(default_factory=list)
    not_signalled: list[Agent] = field(default_factory=list)
    command: CommandResult | None = None

    @property
    def refused(self) -> bool:
        """True when the caller must not remove the worktree: policy "refuse"
        and an agent still alive."""
        return self.policy == "refuse" and bool(self.still_running)


def _run_command(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> CommandResult:
    # relaunch's placeholders ({session_id}, {worktree}, ...) for the facts given.
    args = expand(argv, env)
    cwd = env.get("AO_WORKTREE")
    try:
        proc = subprocess.Popen(args, cwd=cwd if cwd and os.path.isdir(cwd) else None,
                                env=dict(os.environ, **env), stdin=subprocess.DEVNULL,
                                stdout=2, start_new_session=True)
    except OSError as exc:
        return CommandResult(args, "failed-to-start", None,
                             f"stop command {args[0]!r} could not start: {exc.strerror or exc}")
    try:
        rc = proc.wait(timeout=max(timeout, 0))
    except subprocess.TimeoutExpired:
        return CommandResult(args, "running", None,
                             f"stop command {args[0]!r} still running after {timeout:g}s "
                             f"(pid {proc.pid}), left running")
    if rc != 0:
        return CommandResult(args, "exited", rc, f"stop command {args[0]!r} exited with {rc}")
    return CommandResult(args, "exited", 0, f"stop command {args[0]!r} done")


def _live(agents: Iterable[Agent]) -> dict[psutil.Process, Agent]:
    """psutil handles for the agents that still run as the same process."""
    out = {}
    for a in agents:
        try:
            proc = psutil.Process(a.pid)
            same = not a.create_time or proc.create_time() == a.create_time
            if same and proc.status() != psutil.STATUS_ZOMBIE:
                out[proc] = a
        except _ERRORS:
            pass
    return out


def alive(agents: Iterable[Agent]) -> list[Agent]:
    """The agents still running as the same process (pid and start time; a zombie
    has stopped working and counts as gone), sorted by pid. Never raises for a
    process that exited or is someone else's."""
    return sorted(_live(agents).values(), key=lambda a: a.pid)


def _wait(procs: dict[psutil.Process, Agent], deadline: float) -> dict[psutil.Process, Agent]:
    """Wait until every process exits or the deadline passes; the ones left.

    psutil.wait_procs reaps our own children and polls the others; a zombie
    (exited, its parent has not reaped it yet) has stopped working and counts
    as gone."""
    alive = list(procs)
    while alive:
        remaining = deadline - time.monotonic()
        _gone, alive = psutil.wait_procs(alive, timeout=max(0.0, min(_POLL, remaining)))
        alive = [p for p in alive if _running(p)]
        if remaining <= 0:
            break
    return {p: procs[p] for p in alive}


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except _ERRORS:
        return False


def stop(agents: Sequence[Agent], policy: Policy, *, timeout: float,
         stop_command: Sequence[str] | None = None,
         env: Mapping[str, str] | None = None) -> StopReport:
    """Apply `policy` to `agents` (from find) and report.

    "refuse" and "report" touch nothing: still_running lists the agents alive
    now (a "refuse" report says refused, and the caller keeps the worktree).

    "stop", within one budget of `timeout` seconds in all:
    1. when `stop_command` is given (an argument list, no shell), run it with
       os.environ plus `env` (the AO_* facts of the session, as for relaunch;
       `{session_id}` and the other placeholders are replaced), in AO_WORKTREE
       when that directory exists, stdin /dev/null, stdout to stderr, in a
       session of its own; wait for it up to the budget, then leave it
       running; then give the agents half of what is left to exit on their own;
    2. send SIGTERM to each agent still running as the same process (pid and
       start time; never this process, its ancestors or the other commands of
       its own pipeline, never a recycled pid)
       and wait until they exit or the budget ends (psutil.wait_procs);
    3. go on: an agent still alive is reported in still_running. Never SIGKILL:
       a process that ignores SIGTERM decided to; at shutdown the system kills
       it after git-ao, and a half-written file is worse than a late one.
    Never raises for a process that exits, is someone else's or a zombie.
    """
    report = StopReport(policy)
    me, parents = _self_and_ancestors()
    protected = parents | {me} | _own_pipeline()
    mine = [a for a in agents if a.pid in protected]
    report.not_signalled.extend(mine)
    procs = _live(a for a in agents if a.pid not in protected)
    if policy != "stop":
        report.still_running = sorted(procs.values(), key=lambda a: a.pid)
        report.still_running += [a for a in mine if _live([a])]
        return report
    deadline = time.monotonic() + max(timeout, 0)
    if stop_command:
        report.command = _run_command(stop_command, env or {}, timeout)
        grace = (deadline - time.monotonic()) / 2
        procs = _wait(procs, time.monotonic() + grace) if procs else procs
    signalled = {}
    for proc, agent in procs.items():
        try:
            proc.send_signal(signal.SIGTERM)
            signalled[proc] = agent
        except psutil.NoSuchProcess:
            pass  # exited just now: stopped
        except psutil.AccessDenied:
            report.not_signalled.append(agent)
            signalled[proc] = agent  # still waited for: it may exit on its own
    left = _wait(signalled, deadline) if signalled else {}
    report.still_running = sorted(left.values(), key=lambda a: a.pid)
    # Agents gone before the signal count as stopped too: none of them runs.
    report.stopped = [a for a in agents
                      if a.pid not in protected and a not in report.still_running]
    report.still_running += [a for a in mine if _live([a])]
    return report
