"""Restore from the trash: the directory preserve took away comes back whole, with
its ignored files, its index and its admin state; a proof decides, and the
checkout-and-apply path is the fallback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from git_ao.store import trash
from tests.conftest import ao, commit_on, git
from tests.support import tmpfs
from tests.worktree_state import differences, state


def _entries(data: Path, sid: str) -> list[trash.Entry]:
    return [e for e in trash.entries(str(data)) if e.session_id == sid]


def _preserved(repo, worktrees, tmp_path, sid, files) -> tuple[Path, trash.Entry]:
    """A session `sid` whose worktree holds `files` ({name: text}), preserved:
    (its worktree path, its trash entry)."""
    wt = worktrees(repo, sid)
    for name, text in files.items():
        (wt / name).write_text(text)
    ao("ao-preserve", sid, cwd=repo)
    [entry] = _entries(tmp_path / "aodata", sid)
    return wt, entry


def _restore_json(repo, rc=0) -> list[dict]:
    """The restore results, each {id, action, status, message, data: {...}}."""
    res = ao("ao-restore", "--json", cwd=repo, rc=rc)
    keys = ("id", "action", "status", "message")
    return [{**{k: r[k] for k in keys}, "data": {k: v for k, v in r.items() if k not in keys}}
            for r in json.loads(res.stdout)["results"] if r["action"] == "restore"]


def test_restore_from_trash_brings_the_directory_back_whole(repo, worktrees, tmp_path):
    wt = worktrees(repo, "whole")
    (wt / "src" / "app.py").write_text("print('mine')\n")
    (wt / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=wt)
    (wt / "new.txt").write_text("untracked\n")
    (wt / "app.log").write_text("ignored log\n")
    (wt / "build").mkdir()
    (wt / "build" / "out.o").write_bytes(b"\0obj")
    git("update-ref", "refs/worktree/mark", "HEAD", cwd=wt)
    before = state(wt)
    ino = os.lstat(wt / "README.md").st_ino
    ao("ao-preserve", "whole", cwd=repo)
    assert not wt.exists()
    ao("ao-restore", cwd=repo)
    after = state(wt)
    assert differences(before, after, skip=()) == []
    # the same files, not copies: one rename brought them back
    assert os.lstat(wt / "README.md").st_ino == ino
    assert (wt / "app.log").read_text() == "ignored log\n"
    assert (wt / "build" / "out.o").read_bytes() == b"\0obj"
    assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""
    assert git("rev-parse", "refs/worktree/mark", cwd=wt).strip()
    # nothing re-hashed: git's stat cache is valid, status writes nothing
    assert "whole" in git("worktree", "list", cwd=repo)
    assert not (wt / ".git").read_text().startswith("gitdir: " + str(tmp_path / "aodata"))
    assert _entries(tmp_path / "aodata", "whole") == []
    assert "locked" not in git("worktree", "list", "--porcelain", cwd=repo)
    # a second restore has nothing to do; the next preserve works
    ao("ao-restore", cwd=repo)
    ao("ao-preserve", "whole", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "app.log").exists()


def test_detached_clean_save_comes_back_from_trash(repo, worktrees, tmp_path):
    wt = worktrees(repo, "det")
    git("checkout", "-q", "--detach", cwd=wt)
    (wt / "secret.log").write_text("SECRET=1\n")
    git("update-index", "--assume-unchanged", "README.md", cwd=wt)
    before = state(wt)
    ao("ao-preserve", "det", cwd=repo)
    out = _restore_json(repo)
    after = state(wt)
    assert differences(before, after, skip=()) == []
    assert (wt / "secret.log").read_text() == "SECRET=1\n"
    assert any(o.get("data", {}).get("from_trash") for o in out), out


def test_late_writes_in_the_trash_come_back_and_are_reported(repo, worktrees, tmp_path):
    wt = worktrees(repo, "late")
    (wt / "a.txt").write_text("captured\n")
    ao("ao-preserve", "late", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "late")
    commit = git("rev-parse", "refs/ao/preserved/late", cwd=repo).strip()
    # an agent still running wrote into the moved directory after the last check
    Path(entry.worktree, "a.txt").write_text("written later\n")
    Path(entry.worktree, "b.txt").write_text("new later\n")
    out = _restore_json(repo)
    assert (wt / "a.txt").read_text() == "written later\n"
    assert (wt / "b.txt").read_text() == "new later\n"
    [o] = out
    assert sorted(o["data"]["late_writes"]) == ["a.txt", "b.txt"]
    # the last capture stays in the ref, and nothing waits on it
    assert git("rev-parse", "refs/ao/preserved/late", cwd=repo).strip() == commit
    ao("ao-restore", cwd=repo)
    ao("ao-preserve", "late", cwd=repo)


def test_a_late_deletion_in_the_trash_keeps_the_ref_until_it_is_dropped(repo, worktrees,
                                                                        tmp_path):
    # An agent's stop handler deleted a file of the trash copy after the capture:
    # the directory (the latest state) comes back without it, and the ref, which
    # alone still has it, is not replaced by the next preserve unasked.
    wt, entry = _preserved(repo, worktrees, tmp_path, "del", {"notes.txt": "precious\n"})
    commit = git("rev-parse", "refs/ao/preserved/del", cwd=repo).strip()
    Path(entry.worktree, "notes.txt").unlink()
    [o] = _restore_json(repo, rc=3)
    assert o["data"]["late_deleted"] == ["notes.txt"]
    assert o["message"].endswith("; notes.txt deleted after it, so the ref stays until you "
                                 "drop it (git stash show -p --include-untracked "
                                 "refs/ao/preserved/del; git ao resolve del)")
    (wt / "more.txt").write_text("later work\n")
    res = ao("ao-preserve", "del", cwd=repo, rc=1)
    assert "still holds work the last restore could not put back" in res.stdout
    assert git("rev-parse", "refs/ao/preserved/del", cwd=repo).strip() == commit
    assert git("show", f"{commit}^3:notes.txt", cwd=repo) == "precious\n"
    git("update-ref", "-d", "refs/ao/preserved/del", commit, cwd=repo)
    ao("ao-preserve", "del", cwd=repo)


def test_every_session_checked_out_again_says_why_not_from_the_trash(repo, worktrees):
    """Branches moved, and a restore killed part way: the rerun finds one worktree
    already checked out at its path and never tries the trash for it, yet says
    why its trash copy is not put back whole, as it does for the others; the dry
    run says it of a save that holds nothing too."""
    from tests.support import KILLED, crash_env, json_results
    for sid in ("k1", "k2", "k3"):
        wt = worktrees(repo, sid)
        if sid != "k3":
            (wt / "notes.txt").write_text(f"{sid}'s notes\n")
    ao("ao-preserve", "--all", cwd=repo)
    for sid in ("k1", "k2", "k3"):
        commit_on(repo, sid, {"other.txt": "upstream\n"}, "upstream")
    dry = {r["id"]: r["message"] for r in json_results(
        ao("ao-restore", "-n", "--json", cwd=repo))}
    assert "(not from the trash: branch 'k3' moved since the save)" in dry["k3"], dry
    res = ao("ao-restore", "-j", "1", cwd=repo, rc=KILLED,
             env=crash_env("restore:during-apply"))
    res = ao("ao-restore", "--json", cwd=repo)
    got = {r["id"]: r for r in json_results(res)}
    assert sorted(got) == ["k1", "k2", "k3"], res.stdout
    for sid, r in got.items():
        why = f"branch '{sid}' moved since the save"
        assert r["trash_skipped"] == why, r
        assert f"(checked out again, not put back whole from the trash: {why})" \
            in r["message"], r


def test_moved_branch_falls_back_and_brings_the_ignored_files(repo, worktrees, tmp_path):
    wt = worktrees(repo, "fb")
    (wt / "src" / "app.py").write_text("print('mine')\n")
    (wt / ".env").write_text("K=V\n")
    (wt / "build").mkdir()
    (wt / "build" / "x.o").write_text("obj\n")
    (wt / "z.log").write_text("log\n")
    ao("ao-preserve", "fb", cwd=repo)
    # upstream made `build` a tracked file: the ignored build/ cannot go there
    commit_on(repo, "fb", {"other.txt": "upstream\n", "build": "a file now\n"}, "upstream")
    # build/ cannot go back: the user decides, so the restore needs attention
    out = _restore_json(repo, rc=3)
    assert (wt / "src" / "app.py").read_text() == "print('mine')\n"
    assert (wt / ".env").read_text() == "K=V\n"  # untracked, so in the ref
    assert (wt / "other.txt").exists()
    assert (wt / "z.log").read_text() == "log\n"
    data = out[0]["data"]
    assert "from_trash" not in data
    assert "moved since the save" in data["trash_skipped"]
    assert data["environment"] == ["z.log"]
    assert data["environment_kept"] == ["build/"]
    assert (wt / "build").read_text() == "a file now\n"
    [entry] = _entries(tmp_path / "aodata", "fb")
    assert Path(entry.worktree, "build", "x.o").read_text() == "obj\n"
    assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == ""


def test_writes_left_in_the_trash_by_a_fallback_are_named_and_kept(repo, worktrees, tmp_path):
    # An agent that ignored SIGTERM went on writing into the trash copy after the
    # preserve; then the branch moved, so the copy cannot come back whole.
    wt = worktrees(repo, "late")
    (wt / "stub.txt").write_text("1\n2\n")
    ao("ao-preserve", "late", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "late")
    with open(Path(entry.worktree, "stub.txt"), "a") as fh:
        fh.write("3\n")
    (Path(entry.worktree) / "after.txt").write_text("new\n")
    commit_on(repo, "late", {"other.txt": "upstream\n"}, "upstream")
    [out] = _restore_json(repo, rc=3)
    assert out["status"] == "attention" and out["data"]["trash_holds_unsaved"] == entry.worktree
    assert out["data"]["trash_changes"] == {"after.txt": "new", "stub.txt": "changed"}
    assert (f"; the trash copy {entry.worktree} changed after the last capture (after.txt new, "
            "stub.txt changed): that did not come back, and prune keeps the copy") in out["message"]
    assert (wt / "stub.txt").read_text() == "1\n2\n"
    res = ao("ao-prune", cwd=repo)
    assert Path(entry.worktree, "stub.txt").read_text() == "1\n2\n3\n", res.stdout
    # Until the copy is dealt with, the session is not simply live: list, show and
    # doctor name the copy and what it holds.
    listed = ao("ao", "list", cwd=repo)
    assert "\tattention\t" in listed.stdout, listed.stdout
    hint = (f"left what was written after the last capture (after.txt, stub.txt) in the "
            f"trash copy {entry.worktree}")
    assert hint in listed.stderr, listed.stderr
    assert hint in ao("ao", "show", "late", cwd=repo).stderr
    assert hint in ao("ao", "doctor", cwd=repo, rc=None).stdout


def _late(copy: Path, change: str) -> str:
    """Make `change` in the trash copy `copy` after the capture, as an agent still
    running would; return the path it touched."""
    if change == "deleted tracked":
        (copy / "README.md").unlink()
        return "README.md"
    if change == "deleted untracked":
        (copy / "notes.txt").unlink()
        return "notes.txt"
    if change == "edit undone":
        (copy / "src" / "app.py").write_text("print('hi')\n")  # HEAD's content again
        return "src/app.py"
    if change == "made executable":
        os.chmod(copy / "stub.txt", 0o755)
        return "stub.txt"
    if change == "file made a symlink":
        (copy / "stub.txt").unlink()
        os.symlink("README.md", copy / "stub.txt")
        return "stub.txt"
    raise AssertionError(change)


@pytest.mark.parametrize("change", ["deleted tracked", "deleted untracked", "edit undone",
                                    "made executable", "file made a symlink"])
def test_every_late_change_in_the_trash_is_named_after_a_fallback(
        repo, worktrees, tmp_path, change):
    # Not only new content: a deletion, an edit taken back to what HEAD holds, a
    # new mode are the agent's latest state as much, and did not come back either.
    wt = worktrees(repo, "late")
    (wt / "stub.txt").write_text("1\n2\n")
    (wt / "notes.txt").write_text("mine\n")
    (wt / "src" / "app.py").write_text("print('mine')\n")
    ao("ao-preserve", "late", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "late")
    touched = _late(Path(entry.worktree), change)
    commit_on(repo, "late", {"other.txt": "upstream\n"}, "upstream")
    [out] = _restore_json(repo, rc=3)
    assert out["data"]["trash_holds_unsaved"] == entry.worktree
    assert touched in out["message"], out["message"]
    assert (wt / "stub.txt").read_text() == "1\n2\n"  # the save came back
    res = ao("ao-prune", "--json", cwd=repo)
    assert os.path.isdir(entry.worktree), res.stdout


def test_a_fallback_with_nothing_late_in_the_trash_says_ok(repo, worktrees, tmp_path):
    wt = worktrees(repo, "calm")
    (wt / "stub.txt").write_text("1\n2\n")
    ao("ao-preserve", "calm", cwd=repo)
    commit_on(repo, "calm", {"other.txt": "upstream\n"}, "upstream")
    [out] = _restore_json(repo)
    assert out["status"] == "ok" and "trash_holds_unsaved" not in out["data"]


def test_a_fallback_of_a_sparse_worktree_with_intent_to_add_says_ok(repo, worktrees, tmp_path):
    # Paths outside the sparse cone are in the saved trees but not on disk, and an
    # intent-to-add entry is in the index only: neither is a late change.
    os.makedirs(repo / "far")
    (repo / "far" / "away.txt").write_text("far\n")
    git("add", "far", cwd=repo)
    git("commit", "-qm", "far", cwd=repo)
    wt = worktrees(repo, "sparse")
    git("sparse-checkout", "set", "--no-cone", "/*", "!/far/", cwd=wt)
    assert not (wt / "far" / "away.txt").exists()
    (wt / "ita.txt").write_text("intent\n")
    git("add", "-N", "ita.txt", cwd=wt)
    (wt / "stub.txt").write_text("1\n")
    os.chmod(wt / "stub.txt", 0o755)
    ao("ao-preserve", "sparse", cwd=repo)
    commit_on(repo, "sparse", {"other.txt": "upstream\n"}, "upstream")
    [out] = _restore_json(repo)
    assert out["status"] == "ok" and "trash_holds_unsaved" not in out["data"], out


def test_a_fallback_of_a_worktree_with_a_submodule_says_ok(repo, make_repo, worktrees, tmp_path):
    sub = make_repo()
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "lib",
        cwd=repo)
    git("commit", "-qm", "add submodule", cwd=repo)
    wt = worktrees(repo, "sm")
    git("-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q", cwd=wt)
    (wt / "README.md").write_text("super edit\n")
    ao("ao-preserve", "sm", cwd=repo)
    commit_on(repo, "sm", {"other.txt": "upstream\n"}, "upstream")
    out = ao("ao-restore", "--json", cwd=repo, rc=None)
    [r] = [r for r in json.loads(out.stdout)["results"] if r["action"] == "restore"]
    assert "trash_holds_unsaved" not in r, r["message"]


def test_failed_proof_moves_the_directory_back_and_falls_back(repo, worktrees, tmp_path):
    wt = worktrees(repo, "pf")
    (wt / "src" / "app.py").write_text("print('mine')\n")
    (wt / ".env").write_text("K=V\n")
    (wt / "run.log").write_text("ignored\n")
    ao("ao-preserve", "pf", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "pf")
    # a damaged admin copy: the index is not the saved one
    git("read-tree", "--empty", cwd=repo, env={"GIT_INDEX_FILE": os.path.join(entry.admin,
                                                                               "index")})
    out = _restore_json(repo)
    data = out[0]["data"]
    assert "trash_skipped" in data, out
    assert "index is not the saved one" in data["trash_skipped"]
    assert (wt / "src" / "app.py").read_text() == "print('mine')\n"
    assert (wt / ".env").read_text() == "K=V\n"
    assert (wt / "run.log").read_text() == "ignored\n"
    assert git("status", "--porcelain", cwd=wt).split("\n")[:2] == [" M src/app.py", "?? .env"]
    [entry] = _entries(tmp_path / "aodata", "pf")
    assert entry.meta.proof_failed and entry.holds_worktree
    assert data["environment"] == ["run.log"]



def test_a_failed_proof_keeps_the_registration_of_a_live_worktree_whose_directory_is_missing(
        repo, worktrees, tmp_path):
    """The undo of a failed proof deregisters with `git worktree prune`, keeping the
    registration of a live session whose directory is missing (its disk not mounted
    yet): which ones those are is asked when that prune runs."""
    away = worktrees(repo, "away")
    (away / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=away)
    moved = away.parent / "away.elsewhere"
    wt = worktrees(repo, "pf2")
    (wt / "src" / "app.py").write_text("print('mine')\n")
    ao("ao-preserve", "pf2", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "pf2")
    git("read-tree", "--empty", cwd=repo, env={"GIT_INDEX_FILE": os.path.join(entry.admin,
                                                                               "index")})
    away.rename(moved)
    try:
        out = {r["id"]: r for r in _restore_json(repo, rc=3)}  # "away" is gone: attention
        assert "index is not the saved one" in out["pf2"]["data"]["trash_skipped"], out
        admin = repo / ".git" / "worktrees" / "away"
        assert (admin / "index").is_file() and not (admin / "locked").exists()
    finally:
        moved.rename(away)
    assert "A  staged.txt" in git("status", "--porcelain", cwd=away)
    assert (wt / "src" / "app.py").read_text() == "print('mine')\n"

def test_prune_keeps_pending_and_unsaved_entries_and_reports_sizes(repo, worktrees, tmp_path):
    a = worktrees(repo, "pa")
    b = worktrees(repo, "pb")
    (a / "f.txt").write_text("a\n")
    (a / "x.log").write_text("ignored a\n")
    (b / "g.txt").write_text("b\n")
    (b / "y.log").write_text("ignored b\n")
    ao("ao-preserve", "pa", "pb", cwd=repo)
    # pb comes back through the fallback: its entry stays, holding copies only
    commit_on(repo, "pb", {"up.txt": "up\n"}, "upstream")
    ao("ao-restore", "pb", cwd=repo)
    [eb] = _entries(tmp_path / "aodata", "pb")
    assert eb.meta.restored
    res = json.loads(ao("ao-prune", "--expire=now", "--json", cwd=repo).stdout)["results"]
    by = {(r["id"], r["action"]): r for r in res}
    kept = by[("pa", "prune-trash")]
    assert kept["status"] == "nothing" and "pending" in kept["message"]
    assert kept["size"] > 0
    gone = by[("pb", "prune-trash")]
    assert gone["status"] == "ok" and gone["size"] > 0 and "deleted" in gone["message"]
    assert not os.path.exists(eb.path)
    # restore pa through the fallback too, then leave a file in its entry that no
    # saved tree has: prune keeps the entry and says why
    commit_on(repo, "pa", {"up.txt": "up\n"}, "upstream")
    ao("ao-restore", "pa", cwd=repo)
    [ea] = _entries(tmp_path / "aodata", "pa")
    Path(ea.worktree, "late.txt").write_text("only here\n")
    res = json.loads(ao("ao-prune", "--expire=now", "--json", cwd=repo).stdout)["results"]
    [r] = [r for r in res if r["action"] == "prune-trash"]
    assert r["status"] == "nothing" and "late.txt" in r["message"]
    assert os.path.exists(ea.path)


def _with_ignored_paths(wt: Path) -> None:
    """An ignored file and an ignored directory (the repository ignores *.log, build/)."""
    (wt / "a.log").write_text("x\n")
    (wt / "build").mkdir()
    (wt / "build" / "o").write_text("o\n")


def _lose_the_trash() -> None:
    for e in trash.entries(os.environ["AO_DATA_DIR"]):
        shutil.rmtree(e.path)


def test_a_trash_entrys_size_is_the_disk_space_it_takes_as_du_counts_it(tmp_path):
    """Many small files take a block each: their byte sizes added up said a
    thousandth of what removing the entry frees."""
    top = tmp_path / "entry"
    (top / "d" / "e").mkdir(parents=True)
    for i in range(300):
        (top / "d" / f"f{i}").write_text("x")
    (top / "big").write_bytes(os.urandom(100_000))
    os.link(top / "big", top / "d" / "e" / "same-big")  # counted once
    os.symlink("big", top / "link")
    du = subprocess.run(["du", "-s", "-x", "-B1", str(top)], capture_output=True, text=True,
                        check=True).stdout.split()[0]
    assert trash.size(str(top)) == int(du)
    assert trash.size(str(top)) >= 300 * 512 + 100_000


def test_show_lists_what_the_trash_keeps(repo, worktrees, tmp_path):
    wt = worktrees(repo, "sh")
    (wt / "f.txt").write_text("a\n")
    _with_ignored_paths(wt)
    ao("ao-preserve", "sh", cwd=repo)
    rec = json.loads(ao("ao", "show", "sh", "--json", cwd=repo).stdout)["session"]
    [t] = rec["trash"]
    assert t["kind"] == "preserved" and t["size"] > 0
    assert t["ignored"] == ["a.log", "build/"] and t["ignored_count"] == 2
    assert "2 ignored: a.log build/" in ao("ao", "show", "sh", cwd=repo).stdout


def test_an_ignored_file_that_cannot_be_put_back_needs_attention_and_is_kept(repo, worktrees,
                                                                           tmp_path):
    """The branch moved on and now tracks .env: the session's own .env cannot go
    back over it, so restore says so (exit 3) and prune keeps the only copy."""
    wt = worktrees(repo, "env")
    (wt / ".gitignore").write_text("*.log\nbuild/\n.env\n")
    git("add", ".gitignore", cwd=wt)
    git("commit", "-qm", "ignore .env", cwd=wt)
    (wt / ".env").write_text("SECRET=mine\n")
    ao("ao-preserve", "env", cwd=repo)
    tmp = tmp_path / "moving-env"
    git("worktree", "add", "-q", tmp, "env", cwd=repo)
    (tmp / ".env").write_text("SECRET=template\n")
    git("add", "-f", ".env", cwd=tmp)
    git("commit", "-qm", "template", cwd=tmp)
    git("worktree", "remove", tmp, cwd=repo)
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "could not be put back" in res.stdout
    assert (wt / ".env").read_text() == "SECRET=template\n"
    res = ao("ao-prune", cwd=repo)
    assert "ignored files restore could not put back, such as .env" in res.stdout
    kept = [p for p in (Path(os.environ["AO_DATA_DIR"]) / "trash").rglob(".env")]
    assert [p.read_text() for p in kept] == ["SECRET=mine\n"]


def test_ignored_paths_lost_with_the_trash_are_named(repo, worktrees):
    # A worktree on a tmpfs keeps its trash there: a reboot clears both. The work
    # comes back from the ref; the ignored environment cannot, and restore says so.
    wt = worktrees(repo, "gone")
    (wt / "work.txt").write_text("saved\n")
    _with_ignored_paths(wt)
    ao("ao-preserve", "gone", cwd=repo)
    _lose_the_trash()
    res = ao("ao-restore", "gone", "--json", cwd=repo)
    [result] = json.loads(res.stdout)["results"]
    assert result["status"] == "ok" and result["environment_lost"] == 2
    assert result["message"].endswith("; the 2 ignored path(s) it held at the save have no "
                                      "trash copy left: they did not come back")
    assert (wt / "work.txt").read_text() == "saved\n" and not (wt / "a.log").exists()


def test_a_dry_run_says_the_ignored_paths_lost_with_the_trash_as_the_real_run(
        repo, worktrees):
    # `git ao-restore -n` said it would check the worktree out again and apply the
    # save, and nothing of the ignored paths the real run then said were gone.
    wt = worktrees(repo, "gone")
    (wt / "work.txt").write_text("saved\n")
    _with_ignored_paths(wt)
    ao("ao-preserve", "gone", cwd=repo)
    _lose_the_trash()
    note = "; the 2 ignored path(s) it held at the save have no trash copy left: they did " \
        "not come back"
    [dry] = json.loads(ao("ao-restore", "gone", "-n", "--json", cwd=repo).stdout)["results"]
    assert note in dry["message"] and dry["environment_lost"] == 2, dry
    quiet = ao("ao-restore", "gone", "-n", cwd=repo).stdout
    assert note in quiet, quiet
    [real] = json.loads(ao("ao-restore", "gone", "--json", cwd=repo).stdout)["results"]
    assert note in real["message"] and real["environment_lost"] == 2, real


def test_a_save_without_ignored_paths_says_nothing_of_them(repo, worktrees):
    wt = worktrees(repo, "bare")
    (wt / "work.txt").write_text("saved\n")
    ao("ao-preserve", "bare", cwd=repo)
    _lose_the_trash()
    for extra in (["-n"], []):
        [result] = json.loads(ao("ao-restore", "bare", *extra, "--json",
                                 cwd=repo).stdout)["results"]
        assert result["status"] == "ok" and "environment_lost" not in result
        assert "ignored path" not in result["message"]


def test_an_agent_left_in_the_trash_copy_cannot_reach_another_worktree(repo, worktrees,
                                                                      tmp_path):
    # The copy's .git named the admin dir git pruned; a new worktree of the same
    # basename takes that name again, and git run in the copy (an agent still
    # running there) would stage and commit onto the other worktree's branch.
    wt, entry = _preserved(repo, worktrees, tmp_path, "s", {"f.txt": "mine\n"})
    other = tmp_path / "elsewhere" / "s"
    git("worktree", "add", "-q", "-b", "other", other, cwd=repo)
    assert (repo / ".git" / "worktrees" / "s").is_dir()
    res = subprocess.run(["git", "add", "-A"], cwd=entry.worktree, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 128 and "not a git repository" in res.stderr, res.stderr
    assert git("status", "--porcelain", cwd=other) == ""
    res = ao("ao-restore", cwd=repo)
    assert "from the trash" in res.stdout
    assert (wt / "f.txt").read_text() == "mine\n"
    assert git("status", "--porcelain", cwd=wt) == "?? f.txt\n"


def test_preserve_says_when_the_ignored_paths_stay_on_a_tmpfs(repo, tmp_path):
    # The trash copy of a worktree on a tmpfs stays on that tmpfs (one rename):
    # the ignored environment is then in nothing a reboot keeps, and preserve says so.
    with tmpfs(tmp_path / "tmpfs") as mnt:
        wt = mnt / "vol"
        git("worktree", "add", "-q", "-b", "vol", wt, cwd=repo)
        ao("ao", "add", wt, "--id", "vol", cwd=repo)
        (wt / "work.txt").write_text("saved\n")
        (wt / "a.log").write_text("ignored\n")
        res = ao("ao-preserve", "vol", "--json", cwd=repo)
        [r] = json.loads(res.stdout)["results"]
        assert r["volatile_trash"] == "tmpfs"
        assert r["message"] == (f"0 changed, 1 untracked saved in {r['preserved_commit'][:12]}; "
                                "its 1 ignored path(s) are only in the trash copy "
                                f"{r['trash']}, on a tmpfs that a reboot clears; worktree "
                                "removed"), r["message"]
        ao("ao-restore", cwd=repo)
        assert (wt / "a.log").read_text() == "ignored\n"


def test_a_sessions_trash_entries_are_read_from_its_own_directories(tmp_path, monkeypatch):
    data = tmp_path / "data"
    root = data / "trash"
    root.mkdir(parents=True)
    made = {}
    for sid in ("a", "a.b", "ab", "a-1"):
        e = trash.new_entry(str(root), sid, trash.Meta(commit="c" * 40))
        os.mkdir(e.worktree)
        made[sid] = e.path
    loaded = []
    real_load = trash.load
    monkeypatch.setattr(trash, "load", lambda p: loaded.append(p) or real_load(p))
    for sid, path in made.items():
        loaded.clear()
        got = trash.latest_for(str(data), sid)
        assert got is not None and got.path == path, sid
        assert [e.path for e in trash.of_session(str(data), sid)] == [path], sid
        # only entries named for it, and for an id it prefixes with a dot ("a" and "a.b")
        assert {os.path.basename(p).rsplit(".", 1)[0] for p in loaded} <= {sid, *(
            s for s in made if s.startswith(sid + "."))}, (sid, loaded)
    assert len(list(trash.entries(str(data)))) == 4


def test_a_worktree_under_a_bind_mount_of_the_same_file_system_goes_to_a_trash_on_it(
        repo, tmp_path):
    from tests.support import bind_mount
    store, disk = tmp_path / "store", tmp_path / "disk"
    store.mkdir()
    with bind_mount(store, disk):
        wt = disk / "inside"
        git("worktree", "add", "-q", "-b", "inside", str(wt), cwd=repo)
        ao("ao", "add", str(wt), "--id", "inside", cwd=repo)
        (wt / "work.txt").write_text("mine\n")
        (wt / "ignored.log").write_text("kept too\n")
        with open(os.path.join(repo, ".git", "info", "exclude"), "a") as fh:
            fh.write("*.log\n")
        res = ao("ao-preserve", "inside", cwd=repo)
        assert not wt.exists(), res.stdout + res.stderr
        res = ao("ao-restore", "inside", cwd=repo)
        assert "from the trash" in res.stdout, res.stdout
        assert (wt / "work.txt").read_text() == "mine\n"
        assert (wt / "ignored.log").read_text() == "kept too\n"
        for root in trash.roots(os.environ["AO_DATA_DIR"]):  # the root lies on the mount
            if root.startswith(str(disk)):
                break
        else:
            raise AssertionError(trash.roots(os.environ["AO_DATA_DIR"]))


def _racy_worktree(repo, worktrees, sid) -> Path:
    """A session's worktree made by `git worktree add` (its files as new as its
    index: racily clean all through), one file changed, once the clock has left
    that second."""
    wt = worktrees(repo, sid)
    (wt / "README.md").write_text("changed\n")
    time.sleep(1.1)  # not timed: so a later write of the index is no longer racy
    return wt


def _trailer(repo: Path, commit: str) -> str | None:
    from git_ao.save import capture
    return capture.parse_trailers(git("cat-file", "commit", commit, cwd=repo)).get(
        capture.INDEX_TRAILER)


def test_the_trash_keeps_the_index_status_refreshed_so_no_file_is_hashed_again(
        repo, worktrees, tmp_path):
    """The index in the trash is the real one's bytes (the commit's checksum) with
    the mtime of the copy the capture's status wrote back: no tracked file is
    racily clean in it, so the restore's proof reads no unchanged file."""
    from git_ao.git import index
    wt = _racy_worktree(repo, worktrees, "racy")
    before = state(wt)
    tracked = git("ls-files", cwd=wt).split()
    ao("ao-preserve", "racy", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "racy")
    admin_index = os.path.join(entry.admin, "index")
    assert index.checksum(admin_index, 40) == _trailer(repo, str(entry.meta.commit))
    newest = max(int(os.lstat(os.path.join(entry.worktree, p)).st_mtime) for p in tracked)
    assert int(os.stat(admin_index).st_mtime) > newest
    [out] = _restore_json(repo)
    assert out["status"] == "ok" and out["data"].get("from_trash"), out
    assert differences(before, state(wt), skip=()) == []


def test_an_index_status_gave_stat_data_of_its_own_stays_as_it_was_in_the_trash(
        repo, worktrees, tmp_path):
    """A tracked file touched (same bytes, new times): status writes new stat data
    into its copy, which is then no longer the index the save names; the trash
    keeps the real index as it was, and the restore proves it as before."""
    from git_ao.git import index
    wt = _racy_worktree(repo, worktrees, "touched")
    os.utime(wt / ".gitignore")
    time.sleep(1.1)
    real = os.stat(os.path.join(git("rev-parse", "--absolute-git-dir", cwd=wt).strip(), "index"))
    before = state(wt)
    ao("ao-preserve", "touched", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "touched")
    admin_index = os.path.join(entry.admin, "index")
    assert index.checksum(admin_index, 40) == _trailer(repo, str(entry.meta.commit))
    assert os.stat(admin_index).st_mtime_ns == real.st_mtime_ns
    [out] = _restore_json(repo)
    assert out["status"] == "ok" and out["data"].get("from_trash"), out
    assert differences(before, state(wt), skip=()) == []


def test_an_index_written_after_the_capture_copied_it_keeps_its_time(tmp_path):
    """The trash's copy of the index takes the time status wrote the capture's copy
    back only while it is still the index status read."""
    from git_ao.preserve import removal
    admin = tmp_path / "entry" / "admin"
    admin.mkdir(parents=True)
    (admin / "index").write_bytes(b"an index an agent wrote")
    os.utime(admin / "index", ns=(10**18, 10**18))
    removal._refresh_mtime(trash.Entry(str(tmp_path / "entry")), "1" * 40, 2 * 10**18)
    assert os.stat(admin / "index").st_mtime_ns == 10**18


def test_an_index_with_entries_git_overlooks_keeps_its_time_in_the_trash(
        repo, worktrees, tmp_path):
    """An assume-unchanged entry is marked up to date by status unread: the trash's
    index keeps the real index's time, so no time vouches for it."""
    wt = worktrees(repo, "overlooked")
    (wt / "README.md").write_text("changed\n")
    git("update-index", "--assume-unchanged", ".gitignore", cwd=wt)
    index_file = os.path.join(git("rev-parse", "--absolute-git-dir", cwd=wt).strip(), "index")
    # Every entry racily clean: the index no newer than its newest file.
    newest = max(os.lstat(wt / p).st_mtime_ns for p in git("ls-files", cwd=wt).split())
    os.utime(index_file, ns=(newest, newest))
    time.sleep(1.1)
    real = os.stat(index_file)
    before = state(wt)
    ao("ao-preserve", "overlooked", cwd=repo)
    [entry] = _entries(tmp_path / "aodata", "overlooked")
    assert os.stat(os.path.join(entry.admin, "index")).st_mtime_ns == real.st_mtime_ns
    [out] = _restore_json(repo)
    assert out["status"] == "ok" and out["data"].get("from_trash"), out
    assert differences(before, state(wt), skip=()) == []
