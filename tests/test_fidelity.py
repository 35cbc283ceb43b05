"""Fidelity details of capture and restore that need a precise setup."""

from __future__ import annotations

import json
import os
import stat

from tests.support import ao, commit_on, git
from tests.trash_helpers import checkout_path_only


def test_racily_clean_edit_is_captured(repo, worktrees):
    """A same-size edit whose stat matches the index entry, made in the second the
    index was written: git treats the entry as "racily clean" and compares content.
    The temporary index copy must keep the index's mtime or git would trust the
    stale stat and W would miss the edit."""
    git("config", "core.checkStat", "minimal", cwd=repo)
    git("config", "core.trustctime", "false", cwd=repo)
    wt = worktrees(repo, "racy")
    gitdir = git("rev-parse", "--absolute-git-dir", cwd=wt).strip()
    f = wt / "README.md"
    st = os.stat(f)
    f.write_text("HELLO\n")  # same size as "hello\n"
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    index = os.path.join(gitdir, "index")
    os.utime(index, ns=(st.st_atime_ns, st.st_mtime_ns))
    # Nothing may rewrite the index before preserve reads it (git would smudge the
    # racy entry): no optional locks, no write-tree.
    assert "README.md" in git("status", "--porcelain", cwd=wt, env={"GIT_OPTIONAL_LOCKS": "0"})
    ao("ao-preserve", "racy", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert f.read_text() == "HELLO\n"
    assert git("status", "--porcelain", cwd=wt) == " M README.md\n"


def test_restore_outcome_lists_placed_paths_on_conflict(repo, worktrees):
    wt = worktrees(repo, "placed")
    (wt / "README.md").write_text("mine\n")
    (wt / "src" / "app.py").write_text("print('also mine')\n")
    ao("ao-preserve", "placed", cwd=repo)
    commit_on(repo, "placed", {"README.md": "theirs\n"}, "theirs")
    res = ao("ao-restore", "--json", cwd=repo, rc=3)
    rec = json.loads(res.stdout)["results"][0]
    assert rec["status"] == "attention"
    assert rec["paths"] == ["README.md"]  # could not be placed cleanly: markers left
    assert rec["placed"] == ["src/app.py"]
    assert (wt / "src" / "app.py").read_text() == "print('also mine')\n"
    assert git("for-each-ref", "refs/ao/preserved/placed", cwd=repo) != ""


def test_restore_reports_what_it_could_not_put_back(repo, make_repo, worktrees, tmp_path):
    """A clean submodule whose remote vanished while saved: the superproject's work
    is applied and proven, so the ref goes (nothing waits on it); the missing
    submodule checkout is reported (exit 3)."""
    import shutil
    sub = make_repo()
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "lib",
        cwd=repo)
    git("commit", "-qm", "add submodule", cwd=repo)
    wt = worktrees(repo, "subgone")
    git("submodule", "update", "--init", "-q", cwd=wt)
    (wt / "README.md").write_text("super edit\n")
    ao("ao-preserve", "subgone", cwd=repo)
    checkout_path_only()  # from the trash the submodule's git dir comes back too
    shutil.move(str(sub), tmp_path / "sub-away")
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "submodules not re-initialised" in res.stdout
    assert (wt / "README.md").read_text() == "super edit\n"
    assert git("for-each-ref", "refs/ao/preserved/subgone", cwd=repo) == ""
    shutil.move(str(tmp_path / "sub-away"), sub)


def test_private_file_modes_come_back(repo, worktrees):
    # git stores only 644 or 755: a saved 0600 key must not come back world-readable.
    wt = worktrees(repo, "modes")
    (wt / "id_key").write_text("secret\n")
    os.chmod(wt / "id_key", 0o600)
    (wt / "README.md").write_text("changed\n")
    os.chmod(wt / "README.md", 0o640)
    ao("ao-preserve", "modes", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert stat.S_IMODE(os.stat(wt / "id_key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(wt / "README.md").st_mode) == 0o640
