"""Named crash points for the crash-safety tests.

When `GIT_AO_CRASH_AT` names a point (optionally `name:N` for its N-th pass),
the process kills itself with SIGKILL there. The variable is read once at
import; unset, `hit` is a no-op.
"""

import os
import signal

_SPEC = os.environ.get("GIT_AO_CRASH_AT") or None
_NAME, _, _NTH = (_SPEC or "").rpartition(":")
if not _NTH.isdigit():
    _NAME, _NTH = _SPEC or "", ""
_count = 0


def hit(name: str):
    """Die with SIGKILL if `name` is the configured crash point (and its pass count is reached)."""
    global _count
    if _SPEC is None or name != _NAME:
        return
    _count += 1
    if not _NTH or _count >= int(_NTH):
        os.kill(os.getpid(), signal.SIGKILL)
