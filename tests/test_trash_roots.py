"""The trash roots git-ao reads and the entries prune deletes: a root on a file
system not mounted is no trash copy gone, and prune deletes only what git-ao made."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from git_ao.store import trash
from tests.support import ao, git, states

OLD = 1577836800  # 2020-01-01: older than any --expire a test gives


def _with_ignored(repo: Path, wt: Path) -> None:
    with open(os.path.join(repo, ".git", "info", "exclude"), "a") as fh:
        fh.write("*.log\n")
    (wt / "work.txt").write_text("mine\n")
    (wt / "i.log").write_text("ignored, only here\n")


def _results(res) -> list[dict]:
    return json.loads(res.stdout)["results"]


def _on_a_disk(repo: Path, tmp_path: Path):
    """A session 'bm' whose worktree is on a bind mount (`disk`, of `store`), with
    work and an ignored file, preserved into the trash root on that mount. Returns
    (store, disk, worktree, the root)."""
    from tests.support import bind_mount
    store, disk = tmp_path / "store", tmp_path / "disk"
    store.mkdir()
    with bind_mount(store, disk):
        wt = disk / "wt"
        git("worktree", "add", "-q", "-b", "bm", wt, cwd=repo)
        ao("ao", "add", wt, "--id", "bm", cwd=repo)
        _with_ignored(repo, wt)
        ao("ao-preserve", "bm", cwd=repo)
        [root] = [r for r in trash.roots(os.environ["AO_DATA_DIR"])
                  if r.startswith(str(disk) + "/")]
        assert os.path.isdir(root) and not wt.exists()
    return store, disk, wt, root


def test_a_trash_root_on_a_disk_not_mounted_keeps_the_session_pending(repo, tmp_path):
    """The restore took the unmounted root for a trash copy gone: it checked the
    worktree out again on the file system under the mount point and said the
    ignored file had no trash copy left (exit 0). It refuses the session, naming
    the root and what to do, and once the disk is mounted again puts it back whole."""
    from tests.support import bind_mount
    store, disk, wt, root = _on_a_disk(repo, tmp_path)
    for extra in (["-n"], []):
        res = ao("ao-restore", "bm", *extra, "--json", cwd=repo, rc=1)
        [r] = _results(res)
        assert r["status"] == "refused", r
        msg = r["message"]
        assert f"trash root {root} is missing" in msg and "not mounted?" in msg, msg
        assert "mount it and run git ao-restore again" in msg, msg
        assert "no trash copy left" not in msg, msg
    assert not wt.exists() and states(repo) == {"bm": "pending"}
    with bind_mount(store, disk):
        res = ao("ao-restore", "bm", cwd=repo)
        assert "from the trash" in res.stdout, res.stdout
        assert (wt / "i.log").read_text() == "ignored, only here\n"
        assert (wt / "work.txt").read_text() == "mine\n"


def test_a_trash_root_cleared_on_a_file_system_mounted_again_is_a_copy_gone(repo, tmp_path):
    """A tmpfs after a reboot: mounted again, empty. The root's file system is
    there, so the copy is gone: the restore goes on from the ref, as before."""
    from tests.support import tmpfs
    disk = tmp_path / "disk"
    with tmpfs(disk):
        wt = disk / "wt"
        git("worktree", "add", "-q", "-b", "bm", wt, cwd=repo)
        ao("ao", "add", wt, "--id", "bm", cwd=repo)
        _with_ignored(repo, wt)
        ao("ao-preserve", "bm", cwd=repo)
    with tmpfs(disk):
        [r] = _results(ao("ao-restore", "bm", "--json", cwd=repo))
        assert r["status"] == "ok" and r["environment_lost"] == 1, r
        assert (wt / "work.txt").read_text() == "mine\n"


def test_a_root_given_up_by_hand_then_back_keeps_its_entry_from_prune(repo, tmp_path):
    """Refused, the user drops the root's line (the disk is gone, they say) and the
    restore goes on without the copy; then the disk is back and a later preserve
    lists the root again: prune keeps the entry, whose ignored file never came
    back, and says so."""
    from tests.support import bind_mount
    store, disk, wt, root = _on_a_disk(repo, tmp_path)
    data = os.environ["AO_DATA_DIR"]
    ao("ao-restore", "bm", cwd=repo, rc=1)
    listed = Path(data, "trash-roots")
    lines = listed.read_text()
    listed.write_text("".join(ln for ln in lines.splitlines(True) if ln.strip() != root))
    [r] = _results(ao("ao-restore", "bm", "--json", cwd=repo))
    assert r["environment_lost"] == 1, r
    shutil.rmtree(wt)  # on the file system under the mount point: away before mounting
    listed.write_text(lines)
    with bind_mount(store, disk):
        for extra in (["-n"], []):
            out = ao("ao-prune", "--expire=now", *extra, cwd=repo).stdout
            assert "never came back" in out and "i.log" in out, out
        [entry] = [e for e in trash.entries(data, "bm")]
        assert (Path(entry.worktree) / "i.log").read_text() == "ignored, only here\n"


def test_prune_keeps_the_entry_whose_ignored_files_no_restore_brought_back(repo, worktrees,
                                                                          tmp_path):
    """The same without a mount: the entry was away while the session was restored
    (its ignored file said to have no copy left), then it came back. The session is
    live and its restore never read the entry: prune keeps it, named."""
    wt = worktrees(repo, "away")
    _with_ignored(repo, wt)
    ao("ao-preserve", "away", cwd=repo)
    [entry] = trash.entries(os.environ["AO_DATA_DIR"], "away")
    hidden = tmp_path / "hidden"
    os.rename(entry.path, hidden)
    [r] = _results(ao("ao-restore", "away", "--json", cwd=repo))
    assert r["environment_lost"] == 1, r
    os.rename(hidden, entry.path)
    for extra in (["-n"], []):
        out = ao("ao-prune", "--expire=now", *extra, cwd=repo).stdout
        assert f"kept {entry.path}" in out and "never came back" in out, out
    assert (Path(entry.worktree) / "i.log").read_text() == "ignored, only here\n"


def _old_dir(path: Path, content: str = "keep\n") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "keep").write_text(content)
    os.utime(path, (OLD, OLD))
    return path


def test_prune_deletes_nothing_in_the_trash_that_git_ao_did_not_make(repo, worktrees,
                                                                      tmp_path):
    """`mystuff` in the data dir's trash, a directory named as an entry but holding
    no entry.json (or another session's), and anything under a root listed by hand
    (`/tmp/fakeroot`) or in a `.git-ao-trash-<uid>` root: prune deleted each as
    an expired entry. Each is kept and named once as not git-ao's, dry run too."""
    worktrees(repo, "sess")
    data = Path(os.environ["AO_DATA_DIR"])
    mine = _old_dir(data / "trash" / "mystuff")
    named = _old_dir(data / "trash" / "sess.1577836800000000000")
    lying = _old_dir(data / "trash" / "other.1577836800000000000")
    (lying / "entry.json").write_text(json.dumps({"session": "third", "created_ns": 1}))
    os.utime(lying, (OLD, OLD))
    fake = tmp_path / "fakeroot"
    olddir = _old_dir(fake / "olddir")
    top = tmp_path / "fstop" / f".git-ao-trash-{os.getuid()}"
    anything = _old_dir(top / "anything")
    with open(data / "trash-roots", "a") as fh:
        fh.write(f"{fake}\n{top}\n")
    for extra in (["-n"], []):
        out = ao("ao-prune", "--expire", "now", *extra, cwd=repo).stdout
        for kept in (mine, named, lying, anything):
            assert out.count(f"kept {kept}") == 1, (kept, out)
            assert f"kept {kept}: not git-ao's" in out, out
        assert str(olddir) not in out, out
        assert out.count(f"kept {fake}: not a trash root git-ao makes") == 1, out
        assert "prune-trash\tok" not in out, out
    for kept in (mine, named, lying, olddir, anything):
        assert (kept / "keep").read_text() == "keep\n", kept
    assert fake.as_posix() not in trash.roots(str(data)), trash.roots(str(data))
