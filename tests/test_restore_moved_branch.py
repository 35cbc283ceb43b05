"""A clean apply onto a branch that moved since the save is proven path by path:
a merge driver, a filter or rename detection that decides for a saved path keeps
the ref and the trash copy, names the path and exits 3; a plain merge is ok."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from git_ao.store import trash
from tests.support import ao, commit_on, git, ref_of, states

LOCK = "".join(f"pkg-{n} 1.0.{n}\n" for n in range(12))


def _lock(first: str | None = None, last: str | None = None) -> str:
    lines = LOCK.splitlines(keepends=True)
    if first:
        lines[0] = first + "\n"
    if last:
        lines[-1] = last + "\n"
    return "".join(lines)


def _session(repo: Path, worktrees, files: dict[str, str]) -> Path:
    """A session 'mv' whose branch holds `files` on top of main."""
    wt = worktrees(repo, "mv")
    for rel, text in files.items():
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text(text)
    git("add", "-A", cwd=wt)
    git("commit", "-q", "-m", "base of the session", cwd=wt)
    return wt


def _rename_on(repo: Path, tmp_path: Path, branch: str, old: str, new: str) -> None:
    tmp = tmp_path / "rename-on"
    git("worktree", "add", "-q", tmp, branch, cwd=repo)
    git("mv", old, new, cwd=tmp)
    git("commit", "-q", "-m", "renamed on the branch", cwd=tmp)
    git("worktree", "remove", tmp, cwd=repo)


def _restore(repo: Path, rc: int) -> dict:
    (r,) = json.loads(ao("ao-restore", "--json", cwd=repo, rc=rc).stdout)["results"]
    return r


def _assert_kept(repo: Path, r: dict, path: str, commit: str) -> None:
    """The path is named, the ref still holds the save, the session needs attention,
    and prune keeps the trash copy however old it is."""
    assert r["status"] == "attention", r
    assert path in r["not_as_saved"], r
    assert path in r["message"]
    assert ref_of(repo, "mv") == commit
    assert states(repo) == {"mv": "attention"}
    ao("ao-prune", "--expire", "now", cwd=repo, rc=None)
    (entry,) = [e for e in trash.entries(os.environ["AO_DATA_DIR"]) if e.session_id == "mv"]
    assert os.path.isdir(entry.worktree)
    assert ref_of(repo, "mv") == commit
    # a later preserve does not replace the ref that alone holds the save
    ao("ao-preserve", "mv", cwd=repo, rc=None)
    assert git("cat-file", "-t", commit, cwd=repo).strip() == "commit"


def test_a_merge_ours_driver_that_keeps_the_branchs_lockfile(repo, worktrees):
    git("config", "merge.ours.driver", "true", cwd=repo)
    wt = _session(repo, worktrees, {"package.lock": LOCK,
                                    ".gitattributes": "package.lock merge=ours\n"})
    (wt / "package.lock").write_text(_lock(last="pkg-11 2.0.0 (the agent's upgrade)"))
    (wt / "README.md").write_text("hello\nagent notes\n")
    ao("ao-preserve", "mv", cwd=repo)
    commit = ref_of(repo, "mv")
    commit_on(repo, "mv", {"package.lock": _lock(first="pkg-0 1.0.1 (the branch's bump)")})
    r = _restore(repo, 3)
    # what the driver chose is left as it is; the agent's edit is in the ref
    assert "the agent's upgrade" not in (wt / "package.lock").read_text()
    assert (wt / "README.md").read_text() == "hello\nagent notes\n"
    assert "README.md" not in r["not_as_saved"]
    assert "the branch's version in the worktree" in r["not_as_saved"]["package.lock"]
    _assert_kept(repo, r, "package.lock", commit)


def test_a_merge_ours_driver_on_a_staged_lockfile(repo, worktrees):
    git("config", "merge.ours.driver", "true", cwd=repo)
    wt = _session(repo, worktrees, {"package.lock": LOCK,
                                    ".gitattributes": "package.lock merge=ours\n"})
    (wt / "package.lock").write_text(_lock(last="pkg-11 2.0.0 staged"))
    git("add", "package.lock", cwd=wt)
    ao("ao-preserve", "mv", cwd=repo)
    commit = ref_of(repo, "mv")
    commit_on(repo, "mv", {"package.lock": _lock(first="pkg-0 1.0.1 (the branch's bump)")})
    r = _restore(repo, 3)
    _assert_kept(repo, r, "package.lock", commit)


@pytest.mark.parametrize("filt", ["clean", "smudge"])
def test_a_filter_the_branch_brought_changes_a_saved_file(repo, worktrees, filt):
    """The branch's own files pass through the filter unchanged (so the apply is
    clean); the saved ones do not: a clean filter would store other bytes, a
    smudge filter wrote other bytes."""
    clean, smudge = ("tr a-z A-Z", "cat") if filt == "clean" else ("cat", "sed s/secret/XXXX/")
    git("config", "filter.f.clean", clean, cwd=repo)
    git("config", "filter.f.smudge", smudge, cwd=repo)
    wt = _session(repo, worktrees, {"notes.txt": "FIRST\n"})
    (wt / "notes.txt").write_text("FIRST\nthe agent's secret notes\n")
    (wt / "new.txt").write_text("an untracked secret file\n")
    ao("ao-preserve", "mv", cwd=repo)
    commit = ref_of(repo, "mv")
    commit_on(repo, "mv", {".gitattributes": "*.txt filter=f\n"})
    r = _restore(repo, 3)
    assert set(r["not_as_saved"]) == {"notes.txt", "new.txt"}
    _assert_kept(repo, r, "notes.txt", commit)


def test_rename_detection_carries_a_saved_edit_to_another_path(repo, worktrees, tmp_path):
    wt = worktrees(repo, "mv")
    (wt / "src" / "util.py").write_text("x = 1\ny = 2  # the agent's line\n")
    ao("ao-preserve", "mv", cwd=repo)
    commit = ref_of(repo, "mv")
    _rename_on(repo, tmp_path, "mv", "src/util.py", "src/helpers.py")
    r = _restore(repo, 3)
    assert r["not_as_saved"]["src/util.py"].startswith("missing in the worktree")
    assert not (wt / "src" / "util.py").exists()
    _assert_kept(repo, r, "src/util.py", commit)


@pytest.mark.parametrize("setting", ["true", "conflict"])
def test_directory_rename_detection_moves_a_saved_new_file(repo, worktrees, tmp_path, setting):
    git("config", "merge.directoryRenames", setting, cwd=repo)
    wt = worktrees(repo, "mv")
    (wt / "src" / "new.py").write_text("print('the agent added me')\n")
    git("add", "src/new.py", cwd=wt)
    ao("ao-preserve", "mv", cwd=repo)
    commit = ref_of(repo, "mv")
    _rename_on(repo, tmp_path, "mv", "src", "lib")
    r = _restore(repo, 3)
    assert "src/new.py" in r.get("not_as_saved", {}) or "src/new.py" in r["message"], r
    assert ref_of(repo, "mv") == commit


@pytest.mark.parametrize("how", ["same-file", "other-file", "same-change"])
def test_a_plain_merge_onto_a_moved_branch_drops_the_ref(repo, worktrees, how):
    wt = _session(repo, worktrees, {"package.lock": LOCK})
    (wt / "package.lock").write_text(_lock(last="pkg-11 2.0.0"))
    (wt / "new.txt").write_text("untracked\n")
    git("add", "new.txt", cwd=wt)
    ao("ao-preserve", "mv", cwd=repo)
    moved = {"same-file": {"package.lock": _lock(first="pkg-0 1.0.1")},
             "other-file": {"src/app.py": "print('moved')\n"},
             "same-change": {"package.lock": _lock(last="pkg-11 2.0.0")}}[how]
    commit_on(repo, "mv", moved)
    r = _restore(repo, 0)
    assert r["status"] == "ok", r
    assert "not_as_saved" not in r
    assert ref_of(repo, "mv") is None
    text = (wt / "package.lock").read_text()
    assert "pkg-11 2.0.0" in text
    if how == "same-file":
        assert "pkg-0 1.0.1" in text
    assert git("diff", "--cached", "--name-only", cwd=wt).split() == ["new.txt"]
