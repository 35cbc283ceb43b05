"""The ao daemon's own preserve refs (refs/ao/preserved/<id>, no Ao-Session trailer):
never replaced by a preserve, recognised by doctor and --recover."""

from __future__ import annotations

import json

from tests.support import ao, git


def _daemon_save(wt, sid):
    """Save the worktree's state as the daemon does: a commit of the whole tree on top
    of HEAD with the message 'ao preserved <id>', under refs/ao/preserved/<id>."""
    (wt / "daemon-work.txt").write_text("the daemon saved this\n")
    git("add", "-A", cwd=wt)
    tree = git("write-tree", cwd=wt).strip()
    head = git("rev-parse", "HEAD", cwd=wt).strip()
    commit = git("commit-tree", tree, "-p", head, "-m", f"ao preserved {sid}", cwd=wt).strip()
    git("update-ref", f"refs/ao/preserved/{sid}", commit, cwd=wt)
    git("reset", "-q", cwd=wt)
    (wt / "daemon-work.txt").unlink()
    return commit


def test_preserve_moves_the_daemons_ref_aside_and_show_names_it(repo, worktrees):
    wt = worktrees(repo, "ao-7")
    theirs = _daemon_save(wt, "ao-7")
    (wt / "README.md").write_text("git-ao work\n")
    ao("ao-preserve", "ao-7", cwd=repo)
    ours = git("rev-parse", "refs/ao/preserved/ao-7", cwd=repo).strip()
    assert ours != theirs
    assert git("log", "-1", "--format=%(trailers:key=Ao-Session,valueonly)", ours,
               cwd=repo).strip() == "ao-7"
    assert git("rev-parse", "refs/ao/daemon/ao-7", cwd=repo).strip() == theirs
    shown = json.loads(ao("ao", "show", "ao-7", "--json", cwd=repo).stdout)["session"]
    assert shown["daemon_refs"] == [f"refs/ao/daemon/ao-7 {theirs}"]
    assert f"refs/ao/daemon/ao-7 {theirs}" in ao("ao", "show", "ao-7", cwd=repo).stdout
    log = ao("ao", "log", "--session", "ao-7", "--json", cwd=repo).stdout
    assert any(e["decision"] == "foreign-ref-kept" for e in json.loads(log)["entries"])
    # git-ao's own ref is replaced as before (no second copy under refs/ao/daemon/).
    ao("ao-restore", cwd=repo)
    (wt / "README.md").write_text("more git-ao work\n")
    ao("ao-preserve", "ao-7", cwd=repo)
    assert git("for-each-ref", "--format=%(refname)", "refs/ao/daemon/", cwd=repo).split() \
        == ["refs/ao/daemon/ao-7"]


def test_doctor_and_recover_recognise_the_daemons_refs(repo, worktrees):
    wt = worktrees(repo, "ao-8", register=False)
    theirs = _daemon_save(wt, "ao-8")
    res = ao("ao", "doctor", "-C", str(repo), cwd=repo)
    assert "orphaned" not in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if "daemon refs" in ln)
    assert line.lstrip().startswith("note")
    assert "refs/ao/preserved/ao-8" in line
    assert "git cherry-pick --no-commit refs/ao/preserved/ao-8" in line
    res = ao("ao", "doctor", "--recover", "--json", "-C", str(repo), cwd=repo)
    rec = json.loads(res.stdout)["recovered"]
    assert [(r["id"], r["status"]) for r in rec] == [("ao-8", "nothing")]
    assert "saved by the ao daemon" in rec[0]["message"]
    assert git("rev-parse", "refs/ao/preserved/ao-8", cwd=repo).strip() == theirs
    # What the advice says works: the daemon's work comes back in its worktree.
    git("cherry-pick", "--no-commit", "refs/ao/preserved/ao-8", cwd=wt)
    assert (wt / "daemon-work.txt").read_text() == "the daemon saved this\n"
