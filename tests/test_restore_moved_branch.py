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


# A file git converts on its way in or out, and how: the config, the attributes
# committed with the file (`attrs`), the attributes committed after it (`later`:
# the index keeps the CRLFs it had), the line ending the worktree holds, and the
# one a checkout gives a new file (`new_eol`, else the same).
_CONVERSIONS = {
    "autocrlf=true, CRLF in the index": {"config": {"core.autocrlf": "true"}, "eol": "\r\n"},
    "autocrlf=input, CRLF in the index": {"config": {"core.autocrlf": "input"}, "eol": "\r\n",
                                          "new_eol": "\n"},
    "text=auto, CRLF in the index": {"later": "* text=auto\n", "eol": "\r\n", "new_eol": "\n"},
    "text=auto eol=crlf, CRLF in the index": {"later": "*.txt text=auto eol=crlf\n",
                                               "eol": "\r\n"},
    "eol=crlf": {"attrs": "*.txt eol=crlf\n", "eol": "\r\n"},
    "autocrlf=true, LF in the index": {"config": {"core.autocrlf": "true"}, "lf_index": True,
                                       "eol": "\r\n"},
    "clean and smudge filter": {"config": {"filter.rev.clean": "rev", "filter.rev.smudge": "rev"},
                                "attrs": "*.txt filter=rev\n", "eol": "\n"},
    "filter, autocrlf=true, CRLF in the index": {
        "config": {"core.autocrlf": "true", "filter.same.clean": "cat",
                   "filter.same.smudge": "cat"},
        "later": "*.txt filter=same\n", "eol": "\r\n"},
    "ident, autocrlf=true, CRLF in the index": {"config": {"core.autocrlf": "true"},
                                                 "later": "*.txt ident\n", "eol": "\r\n"},
}


def _lines(words: list[str], eol: str) -> str:
    return "".join(w + eol for w in words)


@pytest.mark.parametrize("moved", ["other file", "same file"])
@pytest.mark.parametrize("case", sorted(_CONVERSIONS))
def test_a_converted_file_comes_back_as_saved_onto_a_moved_branch(repo, worktrees, case, moved):
    """The proof reads the worktree as `git add` does: a file whose bytes are the
    saved ones is as saved, whatever git converts on the way (a CRLF file whose
    index blob holds CRLFs is stored as it is under automatic conversion, which
    `git hash-object`, reading no index, does not know)."""
    conv = _CONVERSIONS[case]
    eol = conv["eol"]
    words = ["one", "two", "three", "four", "five"]
    first = _lines(words, "\n" if conv.get("lf_index") else eol)
    files = {"m.txt": first, **({".gitattributes": conv["attrs"]} if "attrs" in conv else {})}
    # The config comes after the file (its CRLFs stay in the index) unless the
    # attributes that name it come with the file.
    config = conv.get("config", {})
    for key, value in config.items() if "attrs" in conv else ():
        git("config", key, value, cwd=repo)
    for rel, text in files.items():
        (repo / rel).write_bytes(text.encode())
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "a file to convert", cwd=repo)
    for key, value in config.items() if "attrs" not in conv else ():
        git("config", key, value, cwd=repo)
    if "later" in conv:
        (repo / ".gitattributes").write_text(conv["later"])
        git("add", ".gitattributes", cwd=repo)
        git("commit", "-q", "-m", "attributes", cwd=repo)
    wt = worktrees(repo, "mv")  # checked out under these rules
    assert git("status", "--porcelain", cwd=wt) == ""
    (wt / "m.txt").write_bytes(_lines([*words, "the agent's line"], eol).encode())
    new = _lines(["an untracked file"], conv.get("new_eol", eol)).encode()
    (wt / "new.txt").write_bytes(new)
    saved = (wt / "m.txt").read_bytes()
    ao("ao-preserve", "mv", cwd=repo)
    if moved == "other file":
        commit_on(repo, "mv", {"other.md": "moved on\n"})
        want = saved
    else:
        commit_on(repo, "mv", {"m.txt": _lines(["ONE", *words[1:]], eol)})
        want = _lines(["ONE", *words[1:], "the agent's line"], eol).encode()
    r = _restore(repo, 0)
    assert r["status"] == "ok", r
    assert "not_as_saved" not in r
    assert ref_of(repo, "mv") is None
    assert states(repo) == {"mv": "live"}
    assert (wt / "m.txt").read_bytes() == want
    assert (wt / "new.txt").read_bytes() == new
    # and prune finds nothing in the trash copy that the save lacks
    ao("ao-prune", "--expire", "now", cwd=repo)
    assert [e for e in trash.entries(os.environ["AO_DATA_DIR"]) if e.session_id == "mv"] == []


def test_a_smudge_filter_that_writes_crlfs_is_not_taken_for_the_saved_lfs(repo, worktrees):
    """The real difference the same reading must still see: the index holds CRLFs
    (staged), the save's worktree file LFs; a smudge filter the branch brought
    writes CRLFs. `git add` keeps them (the index blob holds CRLFs), so the file
    is not the saved one, though `git hash-object` turns them back into LFs."""
    (repo / "m.txt").write_bytes(b"x\r\ny\r\n")
    git("add", "m.txt", cwd=repo)
    git("commit", "-q", "-m", "a CRLF file", cwd=repo)
    git("config", "core.autocrlf", "input", cwd=repo)
    git("config", "filter.crlf.smudge", "sed 's/\\r*$/\\r/'", cwd=repo)
    git("config", "filter.crlf.clean", "cat", cwd=repo)
    wt = worktrees(repo, "mv")
    (wt / "m.txt").write_bytes(b"x\r\ny\r\nz\r\n")
    git("add", "m.txt", cwd=wt)
    (wt / "m.txt").write_bytes(b"x\ny\nz\nw\n")
    ao("ao-preserve", "mv", cwd=repo)
    commit = ref_of(repo, "mv")
    commit_on(repo, "mv", {".gitattributes": "m.txt filter=crlf\n"})
    r = _restore(repo, 3)
    assert (wt / "m.txt").read_bytes() == b"x\r\ny\r\nz\r\nw\r\n"
    assert "other content in the worktree" in r["not_as_saved"]["m.txt"]
    _assert_kept(repo, r, "m.txt", commit)
