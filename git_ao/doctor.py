"""Checks behind `git ao doctor`: git, the data dir, the database, the repositories."""

from __future__ import annotations

import os
from typing import NamedTuple

from . import git
from .errors import AoError
from .lifecycle import REF_PREFIX


class Check(NamedTuple):
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str


def run_checks(app) -> list[Check]:
    """Run every check; never raises for a problem it can name."""
    checks = [Check("git", True, ".".join(map(str, git.version())))]
    try:
        store = app.store
    except AoError as exc:
        return checks + [Check("database", False, str(exc))]
    checks.append(Check("data dir", True, store.dir))
    ok, detail = store.integrity_ok()
    checks.append(Check("database", ok, f"{store.db_path}: integrity {detail}"))
    sessions = store.sessions()
    for repo in sorted({s.repo for s in sessions}):
        if not os.path.isdir(repo):
            checks.append(Check("repository", False, f"{repo} is gone (git ao-prune drops it)"))
            continue
        known = {s.id for s in sessions if s.repo == repo}
        orphans = [ref for ref, _ in git.for_each_ref(repo, REF_PREFIX)
                   if ref[len(REF_PREFIX):] not in known]
        detail = f"{repo}: {len(known)} session(s)"
        if orphans:
            detail += f", orphaned refs: {', '.join(orphans)}"
        checks.append(Check("repository", not orphans, detail))
    return checks
