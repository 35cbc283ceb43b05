"""Replicate preserve refs to a git remote, and keep the remote's namespace bounded.

A session's preserve commit W is pushed to the same name on the remote,
`refs/ao/preserved/<id>`; pushing W pushes its whole closure (H, I, U and H's
history), which is everything a restore on another machine needs. The
session's branch is pushed only when asked (`--push-branch`), and then never
forced.

Every push and delete carries a lease (`git push --force-with-lease=<ref>:<oid>`)
on what this machine last saw the remote hold for that session (none at
first): two machines saving the same session id never silently replace each
other's work. The second push is rejected and reported, and the first
machine's commit stays on the remote. A lease that fails reads what the
remote holds: a ref gone from there (another machine restored the session and
deleted its copy) is pushed again under the lease that it must not exist.
See docs/remote.md for the choice.

What is still to push lives in the database (table remote_pushes, one row per
session and remote: `want`, the commit the remote should hold or '' to delete,
and `have`, the commit it was last seen holding). A push that fails or takes
longer than its timeout leaves the row pending; the next preserve, restore or
prune tries again. Nothing here ever fails or undoes a local save.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from git_ao import git
from git_ao.context import REF_PREFIX, Context, give_up_hint
from git_ao.errors import AoError, Usage
from git_ao.git import query, remotes
from git_ao.outcome import Action, Outcome, OutcomeData, Status, facts
from git_ao.save import history
from git_ao.store.database import PUSH_REFUSED, Store
from git_ao.store.records import Session, now_ns

# Where refs fetched from a remote wait while they are judged (restore --from,
# prune --remote); each is deleted once used.
INCOMING_PREFIX = "refs/ao/incoming/"
# Where a session's history fetched with it waits (restore --from).
INCOMING_HISTORY_PREFIX = "refs/ao/incoming-history/"

SECRETS_WARNING = (
    "preserve refs hold every untracked file that is not ignored (a .env that is not in "
    ".gitignore, keys, local notes): pushing them copies those files to the remote, "
    "where anyone who can fetch from it can read them; ignore what must stay on this "
    "machine")
RETRY_HINT = "retried by the next git ao-preserve, git ao-restore or git ao-prune"


# A row the remote refused: no retry goes through until someone acts, so only the
# commands about it try again (`Concern`).
def refused_hint(remote: str, session_id: str) -> str:
    """Who tries again a push or delete `remote` refused."""
    return (f"tried again only by git ao-prune --remote {remote}, git ao-restore --from "
            f"{remote}, a git ao-preserve --push {remote} and commands on {session_id} "
            f"(git ao doctor names it until then); {give_up_hint(session_id)}")


def check_remote(remote: str) -> str:
    """Return `remote` (a remote name, URL or path); raise Usage for one git would
    read as an option or that holds white space."""
    if not remote or remote.startswith("-") or any(c.isspace() for c in remote):
        raise Usage(f"bad remote '{remote}': give a remote name, URL or path")
    return remote


def resolve_remote(remote: str, cwd: str) -> str:
    """`remote` as every repository can read it: a relative path (one holding a '/'
    or starting with '.', no configured remote of `cwd`'s repository) made absolute
    against `cwd`, since git would read it from each repository's own directory;
    anything else as given."""
    if remotes.network_url(remote) or not (remote.startswith(".") or "/" in remote) \
            or os.path.isabs(remote):
        return remote
    if os.path.isdir(cwd) and remotes.remote_url(cwd, remote) is not None:
        return remote
    return os.path.abspath(os.path.join(cwd, remote))


def refuse_unpushable(sessions: Sequence[Session], remote: str
                      ) -> tuple[list[Session], list[Outcome]]:
    """Split `sessions` into those whose repository can push to `remote` and a
    refused Outcome for each of the others (`remotes.push_problem`), before
    anything is captured or removed: on a machine that does not come back, a
    worktree removed with no push to follow would be lost. One check per
    repository; a repository that is gone is left to the preserve to refuse."""
    problems: dict[str, str | None] = {}
    ok: list[Session] = []
    refused: list[Outcome] = []
    for s in sessions:
        if s.common_dir not in problems:
            problems[s.common_dir] = remotes.push_problem(s.common_dir, remote) \
                if os.path.isdir(s.common_dir) else None
        why = problems[s.common_dir]
        if why is None:
            ok.append(s)
        else:
            refused.append(Outcome(s.id, Action.PRESERVE, Status.REFUSED,
                                   f"not preserved: its save is to go to {remote}, but the "
                                   f"repository {s.common_dir} {why}; nothing is removed",
                                   facts(s, remote=remote)))
    return ok, refused


def setting_notice(key: str) -> str | None:
    """The warning `git ao config set` prints once when `key` turns pushing on."""
    return SECRETS_WARNING if key == "preserve.push" else None


# ---------------------------------------------------------------- the table


@dataclass
class PushRow:
    """A remote_pushes row: what `remote` should hold for one session's preserve ref.

    want: the commit to push, '' to delete the remote ref. have: the commit the
    remote was last seen holding ('' for none), the lease of the next push.
    branch: a branch to push along (never forced), or None."""

    session_id: str
    remote: str
    repo: str
    want: str
    have: str
    branch: str | None = None
    error: str | None = None

    @property
    def pending(self) -> bool:
        return self.want != self.have

    @property
    def rejected(self) -> bool:
        """Did the remote answer the last try and refuse it (`PUSH_REFUSED`)?"""
        return self.error is not None and self.error.startswith(PUSH_REFUSED)

    @property
    def ref(self) -> str:
        return REF_PREFIX + self.session_id


def rows(store: Store, remote: str | None = None) -> list[PushRow]:
    """Every remote_pushes row (of `remote` only, when given), by repository and id."""
    sql = "SELECT * FROM remote_pushes" + (" WHERE remote = ?" if remote else "") + \
        " ORDER BY repo, remote, session_id"
    got = store.read(sql, (remote,) if remote else ())
    return [PushRow(r["session_id"], r["remote"], r["repo"], r["want"], r["have"], r["branch"],
                    r["error"]) for r in got]


def pending_rows(store: Store) -> list[PushRow]:
    """The rows whose push (or delete) is still to do."""
    return [r for r in rows(store) if r.pending]


def _get(store: Store, session_id: str, remote: str) -> PushRow | None:
    return next((r for r in rows(store, remote) if r.session_id == session_id), None)


def set_want(store: Store, session_id: str, remote: str, repo: str, want: str,
             branch: str | None = None) -> None:
    """Record that `remote` should hold `want` ('' for nothing) for the session; what
    it was last seen holding is kept (a new row starts from nothing). A row that
    wants nothing and has nothing is dropped."""
    set_wants(store, [(session_id, remote, repo, want, branch)])


def set_wants(store: Store, wants: Sequence[tuple[str, str, str, str, str | None]]) -> None:
    """set_want for each (session id, remote, repo, want, branch), in one commit (a
    shutdown of many sessions pays for one synchronous write, not one each)."""
    _stamped(store, "INSERT INTO remote_pushes (session_id, remote, repo, want, have, branch, "
             "error, updated_at) VALUES (?, ?, ?, ?, '', ?, NULL, ?) "
             "ON CONFLICT (session_id, remote) DO UPDATE SET repo = excluded.repo, "
             "want = excluded.want, branch = excluded.branch, error = NULL, "
             "updated_at = excluded.updated_at", wants)


def _stamped(store: Store, sql: str, rows: Sequence[tuple[str | None, ...]]) -> None:
    """Run `sql` for each row with the time now (ns) as its last value, in one
    commit (a shutdown of many sessions pays for one synchronous write)."""
    if not rows:
        return
    t = now_ns()
    with store.transaction() as c:
        c.executemany(sql, [(*r, t) for r in rows])
        c.execute("DELETE FROM remote_pushes WHERE want = '' AND have = ''")


def set_have(store: Store, session_id: str, remote: str, repo: str, have: str, *,
             want: str | None = None, error: str | None = None) -> None:
    """Record what `remote` holds now for the session (after a push, a fetch, an
    ls-remote), and optionally what it should hold; a row with nothing left to
    do and nothing on the remote is dropped."""
    set_haves(store, [(session_id, remote, repo, have, want)], error=error)


def set_haves(store: Store, haves: Sequence[tuple[str, str, str, str, str | None]], *,
              error: str | None = None) -> None:
    """set_have for each (session id, remote, repo, have, want or None), in one commit."""
    _stamped(store,
             "INSERT INTO remote_pushes (session_id, remote, repo, want, have, branch, error, "
             "updated_at) VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?8) "
             "ON CONFLICT (session_id, remote) DO UPDATE SET have = excluded.have, "
             "want = COALESCE(?7, want), error = excluded.error, "
             "updated_at = excluded.updated_at",
             [(sid, rem, repo, have if want is None else want, have, error, want)
              for sid, rem, repo, have, want in haves])


def set_pushed(store: Store, pushed: Sequence[tuple[str, str, str, str, str]]) -> None:
    """Record, for each (session id, remote, repo, what the remote held before, what
    it holds now) a push or delete went through for, what the remote holds now, in
    one commit. The row's `want` stays (a preserve may have asked for a newer save
    meanwhile), unless it is what the remote held before: `git ao forget --push`
    gave the push up while it was sent, and keeping that want would push the older
    save back (or the deleted copy again), so it becomes what the remote holds now."""
    _stamped(store,
             "INSERT INTO remote_pushes (session_id, remote, repo, want, have, branch, error, "
             "updated_at) VALUES (?1, ?2, ?3, ?4, ?4, NULL, NULL, ?6) "
             "ON CONFLICT (session_id, remote) DO UPDATE SET have = excluded.have, "
             "want = CASE WHEN want = ?5 THEN excluded.have ELSE want END, error = NULL, "
             "updated_at = excluded.updated_at",
             [(sid, rem, repo, now, was) for sid, rem, repo, was, now in pushed])


def _set_error(store: Store, row: PushRow, error: str) -> None:
    _set_errors(store, [row], error)


def _set_errors(store: Store, failed: Sequence[PushRow], error: str) -> None:
    # A refusal the remote gave stays said over a later try that did not reach it.
    failed = [r for r in failed if not r.rejected or error.startswith(PUSH_REFUSED)]
    if not failed:
        return
    with store.transaction() as c:
        c.executemany("UPDATE remote_pushes SET error = ?, updated_at = ? WHERE "
                      "session_id = ? AND remote = ?",
                      [(error, now_ns(), r.session_id, r.remote) for r in failed])


# ---------------------------------------------------------------- queueing


def has_remote(repo: str, remote: str) -> bool:
    """Is `remote` usable from `repo`: a configured remote, or a URL or path?"""
    if "/" in remote or ":" in remote:
        return True
    return remotes.remote_url(repo, remote) is not None


def queue_saves(ctx: Context, outcomes: Sequence[Outcome], remote: str, *,
                older: dict[str, tuple[str, str]], push_branch: bool = False,
                timeout: float = 0) -> list[Outcome]:
    """After a preserve: record that `remote` should hold the preserve commit of each
    session in `outcomes` whose save holds a ref. Returns Outcomes only for the
    sessions that cannot be pushed at all (their repository has no such remote).
    A dry run records nothing and returns the line of each push the real run would
    make, as it would meet `remote` (read within `timeout` seconds: `_predict`).
    older: `not_current(ctx, outcomes)`, which the caller reads for its own lines."""
    check_remote(remote)
    out = []
    wants: list[tuple[str, str, str, str, str | None]] = []
    usable: dict[str, bool] = {}  # one `git config` per repository
    had = {r.session_id: r.have for r in rows(ctx.store, remote)} if ctx.dry_run else {}
    fresh: dict[str, list[str]] = {}  # a dry run: by repository, the saves it would make
    planned: dict[str, list[PushRow]] = {}  # and the saves on record it would push
    for o in outcomes:
        # A checkpoint (--keep-worktree) is pushed as a preserve is.
        if o.action not in ("preserve", "checkpoint"):
            continue
        if ctx.dry_run and (o.status == Status.OK or o.would_save) and o.data.get("repo"):
            # Nothing was captured: the save the real run makes is what it pushes.
            fresh.setdefault(str(o.data.get("repo")), []).append(o.session_id)
            continue
        s = ctx.store.get(o.session_id)
        save = s.save if s is not None else None
        if s is None or save is None or not save.preserved_commit or not save.holds_ref:
            continue
        if s.common_dir not in usable:
            usable[s.common_dir] = os.path.isdir(s.common_dir) and has_remote(s.common_dir, remote)
        if not usable[s.common_dir]:
            out.append(Outcome(s.id, Action.PUSH, Status.ATTENTION, f"not pushed: the repository "
                               f"{s.common_dir} has no remote '{remote}' (git remote add)",
                               facts(s, remote=remote)))
            continue
        if ctx.dry_run:
            # The real run saves nothing of it and pushes the save on record.
            planned.setdefault(s.common_dir, []).append(PushRow(
                s.id, remote, s.common_dir, save.preserved_commit, had.get(s.id, "")))
            continue
        wants.append((s.id, remote, s.common_dir, save.preserved_commit,
                      save.branch if push_branch and not save.detached else None))
    if not ctx.dry_run:
        set_wants(ctx.store, wants)
    for repo, sids in fresh.items():
        out += _predict_new(repo, remote, sids, had, timeout)
    for repo, group in planned.items():
        out += mark_not_current(_predict(ctx, repo, remote, group, timeout), older)
    return out


def _predict_new(repo: str, remote: str, sids: Sequence[str], had: dict[str, str],
                 timeout: float) -> list[Outcome]:
    """A dry run's line for each save of `sids` its real run would make and push
    (no commit yet): what `remote` holds decides whether the push goes through
    (`had`: what this machine last saw there, by session id)."""
    refs = [REF_PREFIX + sid for sid in sids]
    seen, unread = _remote_holds(repo, remote, refs, timeout) if os.path.isdir(repo) \
        else ({ref: None for ref in refs}, f"repository {repo} is gone")
    out = []
    for sid, ref in zip(sids, refs, strict=True):
        held, have = seen.get(ref), had.get(sid, "")
        data: OutcomeData = {"repo": repo, "remote": remote, "ref": ref}
        tried = f"would push {ref} to {remote}"
        if held is None:
            out.append(Outcome(sid, Action.PUSH, Status.ATTENTION, f"{tried}, but what "
                               f"{remote} holds could not be read ({unread}): whether it "
                               "goes through is not known here", data))
        elif held in (have, ""):
            gone = (" (it is gone from there: another machine restored the session; pushed "
                    "on the condition that nothing is there)") if held == "" and have else ""
            out.append(Outcome(sid, Action.PUSH, Status.OK, tried + gone, data))
        else:
            row = PushRow(sid, remote, repo, "", have)
            out.append(Outcome(sid, Action.PUSH, Status.ATTENTION, (
                f"push would be rejected: {_held_by_another(row, remote, held)}; the save "
                f"the real run makes would stay here. To look at it: git fetch {remote} "
                f"{ref} && git stash show -p --include-untracked FETCH_HEAD"), data))
    return out


def not_current(ctx: Context, outcomes: Iterable[Outcome]) -> dict[str, tuple[str, str]]:
    """{session id: (the save on record, why it is not the session's state)} of each
    live session in `outcomes` (a preserve's) that the run did not save (refused,
    failed): its record still names an older save, which a push sends all the
    same. A pending session's save is its state (its worktree is gone)."""
    out: dict[str, tuple[str, str]] = {}
    for o in outcomes:
        if o.action not in ("preserve", "checkpoint") or o.status == Status.OK \
                or o.would_save:
            continue
        s = ctx.store.get(o.session_id)
        save = s.save if s is not None else None
        if s is None or not s.live or save is None or not save.preserved_commit \
                or o.data.get("preserved_commit") == save.preserved_commit:
            continue
        out[s.id] = (save.preserved_commit, f"this run saved nothing of it ({o.status})")
    return out


def mark_not_current(pushed: list[Outcome], older: dict[str, tuple[str, str]]
                     ) -> list[Outcome]:
    """Say, in each line of `pushed` that sends a save of `older`
    (`not_current`), that it is not the session's state: what changed since is on
    this machine only (attention, never ok). Returns `pushed`."""
    for o in pushed:
        got = older.get(o.session_id)
        if got is None or o.data.get("commit") != got[0] or o.status != Status.OK:
            continue
        o.message += (f"; that is the last save on record, not the worktree as it is now: "
                      f"{got[1]}, so anything changed since is on this machine only")
        o.status = Status.ATTENTION
    return pushed


def planned_deletes(ctx: Context, outcomes: Iterable[Outcome],
                    adopted: Sequence[tuple[str, str, str, str]] = ()) -> list[PushRow]:
    """On a dry run, the deletes the real run records before it pushes: each remote
    copy of a session its restore would bring back in full (`queue_restored`),
    and of each session it would fetch from a remote and restore (`adopted`: (id,
    remote, repository, the commit fetched)), leased as the real run leases them."""
    back = {o.session_id for o in outcomes
            if o.action in ("restore", "resolve") and o.status == Status.OK}
    out = [PushRow(r.session_id, r.remote, r.repo, "", r.have)
           for r in rows(ctx.store) if r.session_id in back and r.want]
    out += [PushRow(sid, rem, repo, "", oid) for sid, rem, repo, oid in adopted
            if sid in back]
    return out


def queue_restored(ctx: Context, outcomes: Iterable[Outcome]) -> None:
    """After a restore: a session whose work came back in full (status ok) no longer
    needs its copy on any remote; record the deletes (each under a lease on the
    commit the remote was last seen holding, so another machine's newer save
    stays). A restore that kept the ref (a conflict) keeps the remote copy too,
    until `git ao resolve` drops the ref (action resolve, status ok)."""
    if ctx.dry_run:
        return
    done = {o.session_id for o in outcomes
            if o.action in ("restore", "resolve") and o.status == Status.OK}
    for r in rows(ctx.store):
        if r.session_id in done and r.want:
            set_want(ctx.store, r.session_id, r.remote, r.repo, "")


# ---------------------------------------------------------------- pushing


@dataclass(frozen=True)
class Concern:
    """What a command is about, for `push_pending`: its own sessions (`ids`) and the
    remotes it names (`remotes`: --push, --from, --remote). A push or delete the
    remote refused (`PushRow.rejected`) fails the same way until someone acts, so
    only a command it concerns tries it again; every other leaves it to `git ao
    doctor`, which names it, rather than say it again on every run."""

    ids: frozenset[str] = frozenset()
    remotes: frozenset[str] = frozenset()

    def covers(self, row: PushRow) -> bool:
        return row.session_id in self.ids or row.remote in self.remotes


def concern(ids: Iterable[str] = (), remotes_: Iterable[str] = (), cwd: str | None = None
            ) -> Concern:
    """A Concern of `ids` and of the remotes named `remotes_` (each also as
    `resolve_remote` reads it from `cwd`, as the rows record it)."""
    names = set(remotes_)
    if cwd is not None:
        names |= {resolve_remote(n, cwd) for n in remotes_}
    return Concern(frozenset(ids), frozenset(names))


def push_pending(ctx: Context, *, timeout: float, remote: str | None = None,
                 about: Concern = Concern(), planned: Sequence[PushRow] = ()
                 ) -> list[Outcome]:
    """Push every pending row (of `remote` only, when given): one `git push` per
    repository and remote, bounded by `timeout` seconds each, with a lease per ref.
    A row the remote refused last time is tried only when `about` covers it.

    planned: on a dry run, the rows the real run writes before it pushes (the
    deletes after a restore), in place of those of the same session and remote.
    A dry run reads what the remote holds (one `git ls-remote` per repository and
    remote) and says what the real run would meet (`_predict`).

    Returns one Outcome per session pushed or not: ok (pushed or deleted), attention
    (not done: the remote could not be reached in time, the row stays pending and
    is retried later; or rejected: another machine's save, a hook). Never raises
    for a git failure."""
    current = {(r.session_id, r.remote): r for r in pending_rows(ctx.store)}
    if ctx.dry_run:
        current.update({(r.session_id, r.remote): r for r in planned})
    todo = [r for r in current.values() if (remote is None or r.remote == remote)
            and r.pending and (not r.rejected or about.covers(r))]
    todo.sort(key=lambda r: (r.repo, r.remote, r.session_id))
    groups: dict[tuple[str, str], list[PushRow]] = {}
    for r in todo:
        groups.setdefault((r.repo, r.remote), []).append(r)
    out: list[Outcome] = []
    for (repo, rem), group in groups.items():
        try:
            out += _push_group(ctx, repo, rem, group, timeout)
        except AoError as exc:
            # Whatever went wrong, the saves stand and the rows stay pending.
            ctx.log("push", None, "push-failed", repo=repo, remote=rem, error=str(exc))
            out += [_not_sent(r, rem, str(exc)) for r in group]
    return out


def _refspecs(row: PushRow) -> list[str]:
    if not row.want:
        return [f":{row.ref}"]
    specs = [f"{row.want}:{row.ref}"]
    if row.branch:
        # No '+' and no lease: a branch that moved on elsewhere is rejected.
        specs.append(f"refs/heads/{row.branch}:refs/heads/{row.branch}")
    return specs


def _push_group(ctx: Context, repo: str, remote: str, group: list[PushRow],
                timeout: float) -> list[Outcome]:
    if not os.path.isdir(repo):
        return [_not_sent(r, remote, f"repository {repo} is gone") for r in group]
    ready = []
    out = []
    # A commit gone from the repository would fail the whole push, not its ref.
    gone = remotes.missing_objects(repo, [r.want for r in group if r.want])
    for r in group:
        if r.want in gone:
            out.append(_outcome(r, Status.ATTENTION, f"not pushed to {remote}: commit "
                                f"{r.want[:12]} is no longer in {repo}"))
            continue
        ready.append(r)
    if ctx.dry_run:
        return out + _predict(ctx, repo, remote, ready, timeout)
    if not ready:
        return out
    specs = [s for r in ready for s in _refspecs(r)]
    # The session's history goes along (see _History for its lease).
    hists = _histories(ctx.store, repo, remote, ready)
    sent = _send(repo, remote, specs + [h.spec for h in hists.values()],
                 [(r.ref, r.have) for r in ready]
                 + [(h.ref, h.lease) for h in hists.values() if h.lease is not None], timeout)
    for h in hists.values():
        h.line, h.why = sent.lines.get(h.ref), sent.why
    # A lease that failed says only that the remote no longer holds what this machine
    # last saw there, and a history refused says only that it holds something else:
    # read what it holds, once for the whole group.
    stale = [r for r in ready if _lease_failed(sent.lines.get(r.ref))]
    refused = [h for h in hists.values() if _refused_for_value(h.line)]
    # seen: what the remote holds for each of those refs ('' nothing, None unread).
    seen, unread = _remote_holds(repo, remote, [r.ref for r in stale] + [h.ref for h in refused],
                                 timeout)
    for h in refused:
        h.held = seen.get(h.ref)
    final: dict[str, _Sent] = {r.session_id: sent for r in ready}
    gone_there = [r for r in stale if seen.get(r.ref) == ""]
    if gone_there:
        # Nothing is there any more (another machine restored the session and deleted
        # its copy): that is what this machine has seen now, and the push goes again
        # under the lease that the ref must not exist, so a commit someone pushed
        # meanwhile is still never replaced.
        set_haves(ctx.store, [(r.session_id, remote, repo, "", None) for r in gone_there])
        for r in gone_there:
            r.have = ""
    again = [r for r in gone_there if r.want]
    retried = [h for h in refused if h.worth_retrying(repo)]
    if again or retried:
        second = _send(repo, remote, [f"{r.want}:{r.ref}" for r in again]
                       + [h.spec for h in retried],
                       [(r.ref, "") for r in again] + [(h.ref, h.held or "") for h in retried],
                       timeout)
        still = [r for r in again if _lease_failed(second.lines.get(r.ref))]
        seen2, unread2 = _remote_holds(repo, remote, [r.ref for r in still], timeout)
        seen.update(seen2)
        unread = unread or unread2
        for r in again:
            final[r.session_id] = second
        for h in retried:
            h.line, h.why, h.retried = second.lines.get(h.ref), second.why, True
    pushed: list[tuple[str, str, str, str, str]] = []
    unsent: list[PushRow] = []
    for r in ready:
        got = final[r.session_id]
        line = got.lines.get(r.ref)
        if line is None:
            unsent.append(r)
            ctx.log("push", r.session_id, "push-pending", remote=remote, commit=r.want or None,
                    error=got.why)
            out.append(_not_sent(r, remote, got.why))
        elif line.ok or (_lease_failed(line) and seen.get(r.ref) == r.want):
            # Pushed, or the remote already holds exactly what it should (a push
            # this machine made and was killed before recording it).
            pushed.append((r.session_id, remote, repo, r.have, r.want))
            ctx.log("push", r.session_id, "pushed" if r.want else "remote-deleted",
                    remote=remote, ref=r.ref, commit=r.want or r.have or None)
            if not line.ok or line.flag == "=":  # '=': git found it up to date there
                msg = f"{remote} already holds {r.ref} ({r.want[:12]})" if r.want else \
                    f"{r.ref} was already gone from {remote}"
            elif r.want:
                msg = f"pushed {r.ref} ({r.want[:12]}) to {remote}"
                if got is not sent:
                    msg += (" (it was gone from there: another machine restored the "
                            "session; pushed on the condition that nothing is there)")
            else:
                msg = f"deleted {r.ref} (was {r.have[:12]}) from {remote}"
            # The branch and the history went in the same push: one not there makes the
            # line attention, never ok, though the save itself is there.
            missed = []
            if r.branch:
                branch = sent.lines.get(f"refs/heads/{r.branch}")
                if branch is None or not branch.ok:
                    missed.append(f"branch {r.branch} not pushed: "
                                  f"{branch.summary if branch is not None else sent.why}")
                    ctx.log("push", r.session_id, "branch-not-pushed", remote=remote,
                            branch=r.branch, detail=missed[-1])
            hist = hists.get(r.session_id)
            said = hist.said(remote, unread) if hist is not None else ""
            if hist is not None and not hist.pushed:
                missed.append(said)
                ctx.log("push", r.session_id, "history-not-pushed", remote=remote,
                        ref=hist.ref, commit=hist.tip, held=hist.held or None, detail=said)
            elif said:
                msg += f"; {said}"
            status = Status.ATTENTION if missed else Status.OK
            out.append(_outcome(r, status, "; ".join([msg, *missed])))
        elif _lease_failed(line):
            out.append(_stale(ctx, r, remote, repo, seen.get(r.ref), unread))
        else:
            out.append(_rejected(ctx, r, repo, remote, line.summary))
    set_pushed(ctx.store, pushed)
    set_histories_pushed(ctx.store, [(sid, remote, h.tip) for sid, h in hists.items()
                                     if h.pushed])
    for r in unsent:
        _set_error(ctx.store, r, final[r.session_id].why)
    return out


@dataclass
class _Sent:
    """One `git push` of a group: its per-ref lines by destination, and git's reason
    for a ref it printed no line for (the remote not reached, timed out)."""

    lines: dict[str, git.parse.PushedRef]
    why: str


def _send(repo: str, remote: str, specs: Sequence[str], leases: Sequence[tuple[str, str]],
          timeout: float) -> _Sent:
    try:
        res, lines = remotes.push_refs(repo, remote, specs, leases, timeout=timeout)
    except AoError as exc:
        return _Sent({}, str(exc))
    return _Sent({ln.dst: ln for ln in lines},
                 why_failed(res) if res.status != 0 else "git printed no line for the ref")


def _lease_failed(line: git.parse.PushedRef | None) -> bool:
    """Did git refuse a ref because the remote does not hold what the lease expected
    (`[rejected] (stale info)`)?"""
    return line is not None and not line.ok and "stale info" in line.summary


def _refused_for_value(line: git.parse.PushedRef | None) -> bool:
    """Did git refuse a ref because of what the remote holds for it (a failed lease,
    not a fast-forward, a commit this repository lacks), rather than the remote
    refusing the update itself (a hook)?"""
    return line is not None and not line.ok and any(
        why in line.summary for why in ("stale info", "non-fast-forward", "fetch first"))


def _remote_holds(repo: str, remote: str, refs: Sequence[str], timeout: float
                  ) -> tuple[dict[str, str | None], str]:
    """What `remote` holds for each of `refs` (preserve or history refs: its commit,
    '' for none, None when it could not be read), from one `git ls-remote` of their
    namespaces, and git's reason when it could not be read."""
    if not refs:
        return {}, ""
    patterns = sorted({prefix + "*" for prefix in (REF_PREFIX, history.HISTORY_PREFIX)
                       if any(ref.startswith(prefix) for ref in refs)})
    try:
        listed = dict(remotes.ls_remote(repo, remote, *patterns, timeout=timeout))
    except AoError as exc:
        return {ref: None for ref in refs}, str(exc)
    return {ref: listed.get(ref, "") for ref in refs}, ""


@dataclass
class _History:
    """A session's history, `refs/ao/history/<id>`, pushed beside its preserve ref.

    With no lease when this machine has no record of pushing it there (a
    fast-forward or a new ref only: the remote takes it while it holds an older
    state of it); with a lease on what this machine last pushed when it has, so
    a chain retention rewrote here replaces the one this machine pushed, and
    only that one. Refused, the push goes again only when the remote holds
    nothing or an older state of this chain; anything else (another machine's
    chain of the same session id) is kept there.

    tip: this repository's. lease: what this machine last pushed there, None for
    no record. line: git's line for it from the last push, and why: git's reason
    when it printed none. held: what the remote holds, read after a refusal (''
    nothing, None unread)."""

    ref: str
    tip: str
    lease: str | None
    line: git.parse.PushedRef | None = None
    why: str = ""
    held: str | None = None
    retried: bool = False

    @property
    def spec(self) -> str:
        return f"{self.tip}:{self.ref}"

    @property
    def pushed(self) -> bool:
        """Does the remote hold this chain now?"""
        return (self.line is not None and self.line.ok) or self.held == self.tip

    def worth_retrying(self, repo: str) -> bool:
        """After a refusal: does the remote hold nothing there, or an older state of
        this chain (a push whose record a kill lost), which pushing again under a
        lease on it replaces with nothing lost?"""
        if self.held is None or self.held == self.tip or self.retried:
            return False
        if self.held == "":
            return True
        return query.is_ancestor_here(repo, self.held, self.tip)

    def said(self, remote: str, unread: str) -> str:
        """The clause of the push line about this history: what was forced when it
        was, else why the remote does not hold it."""
        if self.pushed:
            if self.line is not None and self.line.flag == "+":
                return self.replaced("replaced")
            return ""
        if self.line is None:
            return f"{self.ref} not pushed: {self.why}"
        if self.held is None and _refused_for_value(self.line):
            return (f"{self.ref} not pushed ({self.line.summary}), and what {remote} holds "
                    f"could not be read ({unread or 'it changed again'})")
        if self.held and not self.retried:
            return f"{self.ref} not pushed: {self.kept_there(remote, self.held)}"
        return f"{self.ref} not pushed: {self.line.summary}; tried again by the next push"

    def replaced(self, verb: str) -> str:
        """The clause of a push that forces this chain over the one this machine last
        pushed (`verb`: replaced, or a dry run's would replace)."""
        return (f"{self.ref} ({self.tip[:12]}) {verb} there the chain this machine last "
                f"pushed ({(self.lease or '')[:12]}), which it no longer continues "
                "(retention or a prune rewrote it here)")

    def kept_there(self, remote: str, held: str) -> str:
        """Why another chain `remote` holds (`held`) stays there, and how to replace it."""
        last = self.lease[:12] if self.lease else "no push of it recorded"
        return (f"{remote} holds {held[:12]} there, neither what this machine last pushed "
                f"({last}) nor an older state of this machine's chain (another machine's "
                f"history of this session id); it is kept as it is. To replace it with "
                f"this machine's: git push --force-with-lease={self.ref}:{held} {remote} "
                f"{self.ref}:{self.ref}")

    def predicted(self, repo: str, remote: str, held: str) -> tuple[bool, str]:
        """A dry run's reading of this push, the remote holding `held` there ('' for
        nothing): (would it be there after, the clause of the line), as the real
        run's push and its second try (`worth_retrying`) would leave it."""
        if held == self.tip:
            return True, ""
        if self.lease is not None and held == self.lease:
            forced = not query.is_ancestor_here(repo, held, self.tip)
            return True, self.replaced("would replace") if forced else ""
        if held == "" or query.is_ancestor_here(repo, held, self.tip):
            return True, ""
        return False, f"{self.ref} would not be pushed: {self.kept_there(remote, held)}"


def _histories(store: Store, repo: str, remote: str, rows_: Sequence[PushRow]
               ) -> dict[str, _History]:
    """The history to push beside each preserve ref pushed (none beside a delete), by
    session id, with its lease (`_History`)."""
    leases = history_leases(store, remote)
    out = {}
    for r in rows_:
        ref = history.history_ref(r.session_id)
        tip = query.ref_tip(repo, ref) if r.want else None
        if tip:
            out[r.session_id] = _History(ref, tip, leases.get(r.session_id))
    return out


def history_leases(store: Store, remote: str) -> dict[str, str]:
    """{session id: the history tip this machine last pushed to `remote`}."""
    return {r["session_id"]: r["pushed"] for r in store.read(
        "SELECT session_id, pushed FROM remote_histories WHERE remote = ?", (remote,))}


def set_histories_pushed(store: Store, pushed: Sequence[tuple[str, str, str]]) -> None:
    """Record, for each (session id, remote, tip), that the remote holds that history
    tip: the lease of the next push that replaces it. One commit."""
    _stamped(store, "INSERT INTO remote_histories (session_id, remote, pushed, updated_at) "
             "VALUES (?, ?, ?, ?) ON CONFLICT (session_id, remote) DO UPDATE SET "
             "pushed = excluded.pushed, updated_at = excluded.updated_at", pushed)


def forget_histories_pushed(store: Store, gone: Sequence[tuple[str, str]]) -> None:
    """Forget, for each (session id, remote), the history tip this machine last
    pushed there: the remote holds none now (`git ao-prune --remote` deleted it)."""
    if not gone:
        return
    with store.transaction() as c:
        c.executemany("DELETE FROM remote_histories WHERE session_id = ? AND remote = ?",
                      list(gone))


def why_failed(res: git.Completed) -> str:
    """git's reason for a failed push, in one line: its first `fatal:` or `error:`
    line (the advice after it, "Please make sure you have the correct access
    rights and the repository exists.", says nothing), else its last line."""
    if res.status == git.TIMED_OUT:
        return res.errtext.strip().splitlines()[-1]
    lines = [ln.strip() for ln in res.errtext.strip().splitlines() if ln.strip()]
    said = next((ln for ln in lines if ln.startswith(("fatal: ", "error: "))), None)
    if said is not None:
        return said.removeprefix("fatal: ").removeprefix("error: ")
    return lines[-1] if lines else f"git push exit status {res.status}"


def _stale(ctx: Context, r: PushRow, remote: str, repo: str, now: str | None,
           unread: str) -> Outcome:
    """A ref whose lease failed and that the remote holds another commit for (or
    that could not be read back): never replaced; say what each side holds and
    how to resolve it. A delete whose commit is no longer there has nothing left
    to do: the row goes, the other machine's save stays on the remote."""
    saw = r.have[:12] if r.have else "nothing there"
    if not now:
        why = (f"{remote} no longer holds what this machine last saw for {r.ref} "
               f"({saw}), and what it holds could not be read ({unread or 'it changed again'})")
        _set_error(ctx.store, r, why)
        ctx.log("push", r.session_id, "push-rejected", remote=remote, ref=r.ref,
                commit=r.want or None, detail=why)
        left = _local_save(repo, r)[1] if r.want else f"{r.ref} stays there"
        return _outcome(r, Status.ATTENTION, f"{'push' if r.want else 'delete'} rejected: "
                        f"{why}; {left}; {RETRY_HINT}; {give_up_hint(r.session_id)}")
    if not r.want:
        set_have(ctx.store, r.session_id, remote, repo, "", want="")
        ctx.log("push", r.session_id, "remote-delete-dropped", remote=remote, ref=r.ref,
                commit=now, saw=r.have or None)
        return _outcome(r, Status.ATTENTION, _delete_kept(r, remote, now, "not deleted"))
    why = _held_by_another(r, remote, now)
    ctx.log("push", r.session_id, "push-rejected", remote=remote, ref=r.ref,
            commit=r.want, held=now, saw=r.have or None)
    return _outcome(r, Status.ATTENTION, _refusal(ctx, r, repo, remote, "push rejected", why,
                                                  theirs=now))


def _held_by_another(r: PushRow, remote: str, now: str) -> str:
    """Why a push leased on what this machine last saw meets `now` there."""
    saw = r.have[:12] if r.have else "nothing there"
    return (f"{remote} holds {now[:12]} for {r.ref}, and this machine last saw {saw} "
            "(another machine saved this session id since); it is not replaced")


def _delete_kept(r: PushRow, remote: str, now: str, said: str) -> str:
    """The line of a delete leased on what this machine restored that meets another
    machine's newer save (`now`) there, which stays."""
    saw = r.have[:12] if r.have else "nothing there"
    return (f"{said}: {remote} holds {now[:12]} for {r.ref}, not {saw} as this machine "
            f"restored (another machine saved this session id since); it is kept there "
            f"(git ao-prune --remote {remote} deletes it once its work is elsewhere)")


def _local_save(repo: str, r: PushRow) -> tuple[str | None, str]:
    """This machine's save of the session now (its local preserve ref, which later
    checkpoints moved on, or a prune or restore deleted), and the clause saying it."""
    try:
        cur = git.rev_parse(repo, r.ref)
    except AoError:
        cur = None
    if cur is None:
        return None, f"this machine's save of it is gone ({r.ref} no longer exists here)"
    if cur == r.want:
        return cur, f"the local save ({cur[:12]}) stands"
    return cur, (f"the local save is now {cur[:12]} (this push carried {r.want[:12]}, an "
                 "older one)")


def _refusal(ctx: Context, r: PushRow, repo: str, remote: str, what: str, why: str, *,
             theirs: str | None = None) -> str:
    """The line of a push (or delete) `remote` refused (`why`), naming this machine's
    save as it is now and, when the remote holds another machine's save (`theirs`),
    how to look at it and replace it with that save. The row is marked refused
    (`PUSH_REFUSED`), so only the commands it concerns try it again; a push whose
    save is gone here has nothing left to send and is dropped. On a dry run, the
    words the real run would print, and nothing is written."""
    if not r.want:
        if not ctx.dry_run:
            _set_error(ctx.store, r, PUSH_REFUSED + why)
        return f"{what}: {why}; {r.ref} stays there; {refused_hint(remote, r.session_id)}"
    cur, said = _local_save(repo, r)
    look = (f"To look at it: git fetch {remote} {r.ref} && git stash show -p "
            "--include-untracked FETCH_HEAD") if theirs else ""
    if cur is None:
        if not ctx.dry_run:
            _drop(ctx.store, r)
            ctx.log("push", r.session_id, "push-dropped", remote=remote, ref=r.ref,
                    commit=r.want, why="the local save is gone")
        dropped = "would be dropped" if ctx.dry_run else "is dropped"
        return (f"{what}: {why}; {said}, so nothing of this machine's is left to send: the "
                f"push {dropped}" + (f". {look}" if look else ""))
    if not ctx.dry_run:
        _set_error(ctx.store, r, PUSH_REFUSED + why)
    replace = (f"; to replace it with this machine's save: git push --force-with-lease="
               f"{r.ref}:{theirs} {remote} {cur}:{r.ref}") if theirs else ""
    return (f"{what}: {why}; {said}" + (f". {look}{replace}" if look else "")
            + f"; {refused_hint(remote, r.session_id)}")


def give_up(ctx: Context, session_id: str) -> Outcome:
    """`git ao forget --push ID`: give up the session's pushes and remote deletes
    still to do, to every remote (one to a dead or mistyped URL is retried, and
    keeps the commands exiting 3, until then). Nothing local changes: the record,
    the preserve ref, the history and the trash stay. Each row keeps what the
    remote was last seen holding (the lease of a later push) and wants that:
    nothing left to do. Status nothing when no push is pending, attention when a
    row changed after it was read (`_give_up`); raises Refused for an id with
    neither a record nor a push."""
    from git_ao.errors import Refused
    mine = [r for r in rows(ctx.store) if r.session_id == session_id]
    todo = [r for r in mine if r.pending]
    if not todo:
        if not mine and ctx.store.get(session_id) is None:
            raise Refused(f"no session '{session_id}' (see 'git ao list')")
        return Outcome(session_id, Action.FORGET, Status.NOTHING, "no push pending")
    return _give_up(ctx, session_id, todo)


def _what(r: PushRow) -> str:
    return f"{'the push to' if r.want else 'the delete of its copy on'} {r.remote}"


def _give_up(ctx: Context, session_id: str, todo: Sequence[PushRow]) -> Outcome:
    """Give up each row of `todo` (pending, as read), only where it is still as read:
    a preserve that asked for a newer save, or a push that went through, since
    then is not given up unseen (the line names it; status attention)."""
    kept = "the local save, its record and history stay; what each remote holds stays there"
    data: OutcomeData = {"repo": todo[0].repo, "remote": todo[0].remote, "ref": todo[0].ref}
    if ctx.dry_run:
        return Outcome(session_id, Action.FORGET, Status.OK,
                       f"would give up {', '.join(map(_what, todo))}; {kept}", data)
    done: list[PushRow] = []
    with ctx.store.transaction() as c:
        for r in todo:
            cur = c.execute("UPDATE remote_pushes SET want = have, error = NULL, updated_at = ? "
                            "WHERE session_id = ? AND remote = ? AND want = ? AND have = ?",
                            (now_ns(), r.session_id, r.remote, r.want, r.have))
            if cur.rowcount:
                done.append(r)
        c.execute("DELETE FROM remote_pushes WHERE want = '' AND have = ''")
    for r in done:
        ctx.log("forget", session_id, "push-given-up", remote=r.remote, ref=r.ref,
                commit=r.want or None, have=r.have or None)
    said = [f"gave up {', '.join(map(_what, done))}; {kept}"] if done else []
    changed = [r for r in todo if r not in done]
    if changed:
        said.append(f"not given up: {', '.join(map(_what, changed))}, which changed since it "
                    f"was read (a preserve, restore or push meanwhile); git ao forget --push "
                    f"{session_id} again gives up what is pending now")
    return Outcome(session_id, Action.FORGET, Status.ATTENTION if changed else Status.OK,
                   "; ".join(said), data)


def _drop(store: Store, r: PushRow) -> None:
    """Forget the push (or delete) of `r`: nothing of it is left to do."""
    with store.transaction() as c:
        c.execute("DELETE FROM remote_pushes WHERE session_id = ? AND remote = ?",
                  (r.session_id, r.remote))


def _rejected(ctx: Context, r: PushRow, repo: str, remote: str, summary: str) -> Outcome:
    """A ref the remote refused for another reason than the lease (a hook)."""
    why = f"{remote} refused {r.ref}: {summary}"
    ctx.log("push", r.session_id, "push-rejected", remote=remote, ref=r.ref,
            commit=r.want or None, detail=summary)
    what = "push rejected" if r.want else "delete rejected"
    return _outcome(r, Status.ATTENTION, _refusal(ctx, r, repo, remote, what, why))


def _predict(ctx: Context, repo: str, remote: str, ready: Sequence[PushRow],
             timeout: float) -> list[Outcome]:
    """A dry run's line for each row of `ready`: what the real run would meet there,
    read from one `git ls-remote` of the refs it would push (nothing is written),
    in the real run's words but the verb; when the remote cannot be read, what it
    would try, and that whether it goes through is not known here."""
    hists = _histories(ctx.store, repo, remote, ready)
    seen, unread = _remote_holds(repo, remote, [r.ref for r in ready]
                                 + [h.ref for h in hists.values()], timeout)
    out = []
    for r in ready:
        held = seen.get(r.ref)
        tried = (f"would push {r.ref} ({r.want[:12]}) to {remote}" if r.want else
                 f"would delete {r.ref} (was {r.have[:12]}) from {remote}")
        if held is None:
            hint = f"; last time: {r.error}" if r.rejected else ""
            out.append(_outcome(r, Status.ATTENTION, f"{tried}, but what {remote} holds "
                                f"could not be read ({unread}): whether it goes through is "
                                f"not known here{hint}"))
            continue
        if not r.want:
            if held == r.have:
                out.append(_outcome(r, Status.OK, tried + _unjudged(r)))
            elif held == "":
                out.append(_outcome(r, Status.OK, f"{r.ref} is already gone from {remote}"))
            else:
                out.append(_outcome(r, Status.ATTENTION, _delete_kept(r, remote, held,
                                                                      "would not delete")))
            continue
        if held not in (r.want, r.have, ""):
            out.append(_outcome(r, Status.ATTENTION, _refusal(
                ctx, r, repo, remote, "push would be rejected",
                _held_by_another(r, remote, held), theirs=held)))
            continue
        if held == r.want:
            msg = f"{remote} already holds {r.ref} ({r.want[:12]})"
        else:
            msg = tried
            if held == "" and r.have:
                msg += (" (it is gone from there: another machine restored the session; "
                        "pushed on the condition that nothing is there)")
        status = Status.OK
        hist = hists.get(r.session_id)
        there = seen.get(hist.ref) if hist is not None else None
        if hist is not None and there is not None:
            ok, said = hist.predicted(repo, remote, there)
            if said:
                msg += f"; {said}"
            if not ok:
                status = Status.ATTENTION
        out.append(_outcome(r, status, msg + _unjudged(r)))
    return out


def _unjudged(r: PushRow) -> str:
    """A dry run's note of a refusal the remote gave last time for another reason
    than what it holds (a hook), which no reading of its refs can judge."""
    hook = f"{PUSH_REFUSED}{r.remote} refused "
    if r.error is None or not r.error.startswith(hook):
        return ""
    return (f"; {r.error[len(PUSH_REFUSED):]} last time, which a dry run cannot judge: "
            "the real run tries again")


def _not_sent(r: PushRow, remote: str, why: str) -> Outcome:
    """A push or delete that did not happen (the remote down or slow, no repository
    there yet): status attention, never nothing, since until it goes through the
    work has not left this machine (or the remote copy stays)."""
    if r.want:
        said = (f"not pushed to {remote} ({why}): the save is on this machine only; "
                f"the push is pending, {RETRY_HINT}; {give_up_hint(r.session_id)}")
    else:
        said = (f"not deleted from {remote} ({why}): {r.ref} stays there; the delete "
                f"is pending, {RETRY_HINT}; {give_up_hint(r.session_id)}")
    return _outcome(r, Status.ATTENTION, said)


def _outcome(r: PushRow, status: Status, message: str) -> Outcome:
    return Outcome(r.session_id, Action.PUSH, status, message,
                   {"repo": r.repo, "remote": r.remote, "ref": r.ref,
                    "commit": r.want or None})
