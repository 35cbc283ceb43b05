"""Before a batch of preserves: the agents still working in the worktrees.

One scan of every process finds what is tied to each session's worktree (its
working directory, an open file, its executable: `processes.scan`). Each
session's policy then decides (`processes.policy_for`): "stop" runs the
harness's stop command and sends SIGTERM, for every session side by side so a
shutdown waits `preserve.agentTimeout` once; "refuse" keeps that worktree;
"report" only says so. The scan runs before any git process starts in the
worktrees, since git-ao's own children would otherwise count as agents.
Before a stop the worktree is captured as a checkpoint (a stop handler may
throw the work away); `keep_before_stop` keeps it when the stop changed the
worktree.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from git_ao import git
from git_ao.agents import processes
from git_ao.agents.relaunch import facts as relaunch_facts
from git_ao.context import Context
from git_ao.errors import AoError
from git_ao.git.parse import ObjectId
from git_ao.outcome import Outcome, OutcomeData, Status
from git_ao.proof import witness
from git_ao.save import capture, lacking
from git_ao.store.records import Session


class NoSettings:
    """Settings with nothing set: every default applies."""

    def get(self, key: str, default: object = None) -> object:
        return default


@dataclass
class Seen:
    """What the scan and the policy did for one session."""

    policy: processes.Policy
    found: list[processes.Agent] = field(default_factory=list)
    ancestors: list[processes.Agent] = field(default_factory=list)
    pipeline: list[processes.Agent] = field(default_factory=list)
    report: processes.StopReport | None = None

    @property
    def refused(self) -> bool:
        return self.policy == "refuse" and bool(self.found)

    def data(self) -> OutcomeData:
        """The JSON facts: every process seen, and what stopping them did."""
        out: OutcomeData = {}
        if self.found:
            out["processes"] = [{"pid": a.pid, "name": a.name, "ties": list(a.ties)}
                                for a in self.found]
            out["agent_policy"] = self.policy
        if self.report is not None and self.policy == "stop":
            out["stopped"] = [a.pid for a in self.report.stopped]
            out["still_running"] = [a.pid for a in self.report.still_running]
        return out

    def left_running(self) -> list[processes.Agent]:
        """The processes found working in the worktree that no stop ended (every
        one under "report"; those a stop left running): a preserve asks
        `processes.alive` of them once the worktree is moved."""
        if self.policy == "stop":
            return list(self.report.still_running) if self.report is not None else []
        return list(self.found) if self.policy == "report" else []

    def line(self) -> str:
        """One clause for the outcome message ('' when nothing was seen)."""
        if not self.found:
            return ""
        names = ", ".join(a.describe() for a in self.found[:3])
        more = f" and {len(self.found) - 3} more" if len(self.found) > 3 else ""
        if self.policy == "stop" and self.report is not None:
            left = len(self.report.still_running)
            return (f"stopped {len(self.report.stopped)} process(es) working in it"
                    + (f", {left} still running" if left else "") + f" ({names}{more})")
        if self.policy == "refuse":
            return f"processes are working in it: {names}{more}"
        return f"processes were working in it: {names}{more}"


def settle_agents(sessions: Sequence[Session], settings: processes.Settings, *, shutdown: bool,
                  dry_run: bool,
                  before_stop: Callable[[Sequence[Session]], object] | None = None
                  ) -> dict[str, Seen]:
    """Scan once for every live session's worktree, then apply each session's policy
    (stops side by side; none on a dry run). before_stop(sessions) runs first with
    the sessions whose agents are about to be stopped (a stop handler may throw
    their work away). Returns {session id: Seen} for the sessions where something
    was found."""
    paths = {s.id: s.worktree_path for s in sessions
             if s.live and os.path.isdir(s.worktree_path)}
    if not paths:
        return {}
    scan = processes.scan(paths.values())
    seen: dict[str, Seen] = {}
    for s in sessions:
        path = paths.get(s.id)
        if path is None:
            continue
        found = scan.agents.get(path, [])
        ancestors = scan.ancestors_inside.get(path, [])
        pipeline = scan.pipeline_inside.get(path, [])
        if found or ancestors or pipeline:
            policy = processes.policy_for(settings, s.harness, shutdown=shutdown)
            seen[s.id] = Seen(policy, found, ancestors, pipeline)
    to_stop = [s for s in sessions if s.id in seen and seen[s.id].found
               and seen[s.id].policy == "stop"]
    if dry_run or not to_stop:
        return seen
    if before_stop is not None:
        before_stop(to_stop)
    timeout = settings.get("preserve.agentTimeout")
    budget = float(timeout) if isinstance(timeout, (int, float)) else processes.DEFAULT_TIMEOUT

    def one(s: Session) -> tuple[str, processes.StopReport]:
        return s.id, processes.stop(seen[s.id].found, "stop", timeout=budget,
                                 stop_command=processes.stop_command_for(settings, s.harness),
                                 env=relaunch_facts(s, "preserving"))

    with ThreadPoolExecutor(max_workers=min(16, len(to_stop))) as pool:
        for sid, report in pool.map(one, to_stop):
            seen[sid].report = report
    return seen


def _as_before(s: Session, trees: tuple[str | None, ...]) -> bool:
    """Does the worktree of `s`, whose preserve was refused (a nested repository, a
    submodule's own work, which its checkpoint before the stop left out), still
    hold `trees` (the index, worktree and untracked trees of that checkpoint), as
    a checkpoint captures it? False when that cannot be told."""
    path = s.worktree_path
    try:
        _st, now = capture.as_checkpoint(path, git.repo_dirs(path).git_dir)
    except AoError:
        return False
    return (now.index_tree, now.worktree_tree, now.untracked_tree) == trees


def keep_before_stop(ctx: Context, s: Session, before: ObjectId, out: Outcome) -> None:
    """The agents of `s` were stopped after a checkpoint `before` was captured (their
    stop handler may throw the work away: a harness that cleans up its worktree).
    When the final capture (`out`) holds other trees, keep `before` reachable under
    refs/ao/before-stop/<id> (the checkpoint itself, or a commit keeping it and
    what that ref held before alive) and say so; when the final holds nothing,
    or lost what `before` had (`lacking.lost`), the outcome needs attention, and
    the record names `before` (`Save.holds_less_than`) so the restore, list and
    show name the history entry that brings it back."""
    final = out.data.get("preserved_commit") or None
    trees = capture.saved_trees(s.common_dir, before)[1:]
    if final and capture.saved_trees(s.common_dir, final)[1:] == trees:
        return
    if final is None and out.status == Status.REFUSED and _as_before(s, trees):
        return  # refused, nothing saved or removed, and the stop changed nothing
    ref = lacking.before_stop_ref(s.id)
    older = git.rev_parse(s.common_dir, ref)
    if older:
        # One from an earlier shutdown is there: a commit keeps both alive.
        witness.keep_alive(s.common_dir, ref, witness.AdminOnly(refs={"before-stop": before}),
                           older)
    else:  # the checkpoint itself, readable with git stash show
        git.update_ref(s.common_dir, ref, before, message="git-ao keep before stop")
    lost = final is None or bool(lacking.lost(s.common_dir, before, final))
    ctx.log("preserve", s.id, "kept-before-stop", ref=ref, commit=before, lost=lost or None)
    out.data["before_stop"] = before
    out.message += (f"; the worktree changed while its agents stopped: its state before is "
                    f"kept in {ref} (git stash show -p --include-untracked {before[:12]})")
    if not lost:
        return
    if out.status in (Status.OK, Status.NOTHING):
        out.status = Status.ATTENTION
    now = ctx.store.get(s.id)
    if now is None or now.save is None or (now.save.preserved_commit or None) != final:
        return  # no save of this run recorded (a run killed before): nothing to name
    ctx.store.mark_holds_less(s.id, before, final)
    out.data["holds_less_than"] = before
    note, number = lacking.advice(s.common_dir, s.id, before, final=final, judged=True,
                                  then=f"after git ao-restore {s.id}, " if now.pending else "",
                                  ref_said=True)
    out.data["holds_less_entry"] = number
    if note:
        out.message += f"; {note}"
