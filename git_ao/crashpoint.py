"""Named crash points for the crash-safety tests.

When `GIT_AO_CRASH_AT` names a point (optionally `name:N` for its N-th pass),
the process kills itself with SIGKILL there. `GIT_AO_CRASH_SIGNAL` (a signal
name such as `TERM` or `INT`) sends that signal instead and carries on, so the
signal handling of `git ao-preserve --all` can be tested at an exact moment.
Both variables are read once at import; unset, `hit` is a no-op.

The points, in the order a run passes them:
    capture:after-status (inside every capture, between `git status` and the
    index updates that read the files), preserve:after-capture, preserve:after-ref, preserve:after-db,
    preserve:after-rename (between the move to the trash and `git worktree prune`),
    preserve:after-remove, preserve:between-sessions;
    restore:after-worktree-add, restore:during-apply (the worktree is added, the
    apply has not run), restore:after-apply, restore:before-ref-delete,
    restore:after-ref-delete, restore:after-db, restore:between-sessions;
    from the trash: restore:link-written (the worktree's new `.git` file is
    written beside it, not yet renamed over it), restore:after-reinstate;
    appending to a history: history:before-ref (the entry commit is written, the
    ref not moved), history:after-ref;
    bringing a live worktree to an entry (--at): restore-at:clear (each untracked
    file removed), restore-at:after-reset (the hard reset done, the entry's save
    not applied yet).
"""

import os
import signal
import threading

POINTS = (
    "capture:after-status", "preserve:after-capture", "preserve:after-ref", "preserve:after-db",
    "preserve:after-rename", "preserve:after-remove", "preserve:between-sessions",
    "restore:after-worktree-add", "restore:during-apply", "restore:after-apply",
    "restore:before-ref-delete", "restore:after-ref-delete", "restore:after-db",
    "restore:between-sessions", "restore:after-reinstate", "restore:link-written",
    "history:before-ref", "history:after-ref", "restore-at:clear", "restore-at:after-reset",
)

_CRASH_AT = os.environ.get("GIT_AO_CRASH_AT") or None
_NAME, _, _NTH = (_CRASH_AT or "").rpartition(":")
if not _NTH.isdigit():
    _NAME, _NTH = _CRASH_AT or "", ""
_SIGNAL = getattr(signal, "SIG" + os.environ.get("GIT_AO_CRASH_SIGNAL", "KILL").upper(),
                  signal.SIGKILL) if _CRASH_AT else signal.SIGKILL
_count = 0
_lock = threading.Lock()  # -j runs pass the points from several threads


def hit(name: str) -> None:

    """Die with SIGKILL (or send GIT_AO_CRASH_SIGNAL) if `name` is the configured crash
    point and its pass count is reached. A signal other than SIGKILL is sent once."""
    global _count
    if _CRASH_AT is None or name != _NAME:
        return
    with _lock:
        _count += 1
        count = _count
    if not _NTH or count >= int(_NTH):
        if _SIGNAL != signal.SIGKILL and count > max(int(_NTH or 1), 1):
            return
        os.kill(os.getpid(), _SIGNAL)
