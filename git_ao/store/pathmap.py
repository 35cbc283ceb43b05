"""Path prefix mappings for sessions restored on another machine (`git ao-restore
--from REMOTE --map-path OLD=NEW`, the `restore.mapPath` setting).

A preserve commit records the worktree's absolute path (its Ao-Workspace
trailer); on another machine that path may be impossible (another home
directory). A mapping replaces an old prefix, a whole number of path
components, by a new one; the longest matching old prefix wins. Only the
standard library is imported here: git_ao/store/settings.py checks values with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence


def parse(text: str) -> tuple[str, str]:
    """Split 'OLD=NEW' into two normalised absolute paths.

    Both sides must be absolute, so the split is at the first '=/' (an '=' in
    OLD is allowed unless '/' follows it). Raises ValueError with the reason."""
    at = text.find("=/") if isinstance(text, str) else -1
    if at <= 0 or not text.startswith("/"):
        raise ValueError(f"expected OLD=NEW, two absolute paths, got '{text}'")
    old, new = os.path.normpath(text[:at]), os.path.normpath(text[at + 1:])
    if "\n" in old or "\n" in new:
        raise ValueError("paths containing a newline are not supported")
    return old, new


def parse_all(values: Iterable[str]) -> list[tuple[str, str]]:
    """parse() each of `values`; raises ValueError on the first bad one."""
    return [parse(v) for v in values]


def match(path: str, maps: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The (old, new) mapping whose old prefix is the longest matching `path`, or
    None. A prefix matches whole components only: /home/al does not match
    /home/alice/wt."""
    best: tuple[str, str] | None = None
    for old, new in maps:
        if (path == old or path.startswith(old.rstrip("/") + "/")) and \
                (best is None or len(old) > len(best[0])):
            best = (old, new)
    return best


def apply(path: str, maps: Sequence[tuple[str, str]]) -> str | None:
    """`path` with the longest matching old prefix replaced by its new one (match),
    or None when no mapping matches."""
    best = match(path, maps)
    if best is None:
        return None
    old, new = best
    rest = path[len(old):].lstrip("/")
    return os.path.join(new, rest) if rest else new
