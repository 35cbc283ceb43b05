"""Helpers for tests of the checkout-and-apply restore path, which a usable trash
copy would otherwise skip."""

from __future__ import annotations

import os

from git_ao.store import trash

# Crash points only the checkout-and-apply path passes.
SLOW_PATH_POINTS = ("restore:after-worktree-add", "restore:during-apply",
                    "restore:after-apply")


def checkout_path_only() -> None:
    """Mark every trash entry as one whose proof failed: restore then re-creates the
    worktree with git and applies the saved commit, and still moves the ignored
    files of the entry in (the state a failed proof leaves)."""
    for e in trash.entries(os.environ["AO_DATA_DIR"]):
        if not e.legacy:
            trash.mark(e, proof_failed=True)
