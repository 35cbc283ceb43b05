"""The catalogue of hard worktree states: each has a defined outcome,
written in docs/DESIGN.md (Fidelity, catalogue of hard states), and a test here. Real git, real repositories,
the real commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.support import ao, commit_on, dirty, git, ref_of, round_trip, sessions_by_id
from tests.worktree_state import assert_restored, state


def _refused_untouched(repo, wt, sid, *words, saved=False):
    """Preserve refuses: exit 1, one line naming the path, worktree as it was,
    nothing recorded as saved, no ref. saved: a file that would not come back byte
    for byte keeps the worktree, and the rest of the work is saved all the same,
    as a checkpoint: the ref holds it and the line names it."""
    before = state(wt)
    res = ao("ao-preserve", sid, cwd=repo, rc=1)
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if sid in ln or str(wt) in ln]
    assert lines and any(str(wt) in ln for ln in lines), res
    for w in words:
        assert w in res.stdout + res.stderr
    assert state(wt) == before
    assert sessions_by_id(repo)[sid]["state"] == "live"
    if saved:
        ref = ref_of(repo, sid)
        assert ref is not None and f"saved in {ref[:12]}; worktree kept: " in res.stdout, res
        assert "holds them as git checks them out" in res.stdout, res.stdout
    else:
        assert ref_of(repo, sid) is None
    return res


# ---------------------------------------------------------------- HEAD and branches


def test_detached_head_reachable_only_from_worktree(repo, worktrees):
    wt = worktrees(repo, "det")
    (wt / "only.txt").write_text("only here\n")
    git("add", ".", cwd=wt)
    git("commit", "-qm", "only here", cwd=wt)
    git("checkout", "-q", "--detach", cwd=wt)
    git("branch", "-D", "det", cwd=repo)
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "det", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    ao("ao-restore", cwd=repo)
    after = state(wt)
    assert after["branch"] is None
    assert_restored(before, after)


def test_unborn_branch_is_refused(repo, worktrees):
    wt = worktrees(repo, "unborn")
    git("checkout", "-q", "--orphan", "fresh", cwd=wt)
    (wt / "new.txt").write_text("first file\n")
    res = _refused_untouched(repo, wt, "unborn", "unborn")
    assert "--force" not in res.stdout
    # --force is no way around a refusal: preserve has no such switch.
    assert ao("ao-preserve", "--force", "unborn", cwd=repo, rc=None).returncode == 129


def test_branch_deleted_while_saved_is_recreated(repo, worktrees):
    wt = worktrees(repo, "gone")
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "gone", cwd=repo)
    git("branch", "-D", "gone", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


def test_branch_moved_forward_without_conflict(repo, worktrees):
    wt = worktrees(repo, "fwd")
    dirty(wt)
    ao("ao-preserve", "fwd", cwd=repo)
    commit_on(repo, "fwd", {"upstream.txt": "new upstream file\n"})
    ao("ao-restore", cwd=repo)
    assert (wt / "upstream.txt").read_text() == "new upstream file\n"
    assert (wt / "README.md").read_text() == "hello\nstaged line\nunstaged line\n"
    assert "staged line" in git("diff", "--cached", cwd=wt)
    assert (wt / "new dir" / "deep" / "naïve file.txt").exists()
    assert ref_of(repo, "fwd") is None


def test_branch_moved_forward_with_conflict(repo, worktrees):
    wt = worktrees(repo, "cfl")
    (wt / "README.md").write_text("mine\n")
    (wt / "extra.txt").write_text("untracked\n")
    ao("ao-preserve", "cfl", cwd=repo)
    commit_on(repo, "cfl", {"README.md": "theirs\n"})
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "README.md" in res.stdout and "placed" in res.stdout
    assert "<<<<<<<" in (wt / "README.md").read_text()
    assert ref_of(repo, "cfl") is not None


def test_untracked_path_tracked_on_moved_branch(repo, worktrees):
    wt = worktrees(repo, "utr")
    (wt / "notes.txt").write_text("my untracked notes\n")
    (wt / "README.md").write_text("edited\n")
    ao("ao-preserve", "utr", cwd=repo)
    commit_on(repo, "utr", {"notes.txt": "now tracked upstream\n"})
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "notes.txt" in res.stdout and "nothing applied" in res.stdout
    assert (wt / "notes.txt").read_text() == "now tracked upstream\n"
    assert ref_of(repo, "utr") is not None  # the work stays recoverable
    shown = git("stash", "show", "-p", "--include-untracked", "refs/ao/preserved/utr", cwd=wt)
    assert "my untracked notes" in shown


def test_saved_file_under_a_path_now_a_file_is_not_placed(repo, worktrees):
    wt = worktrees(repo, "par")
    (wt / "cfg").mkdir()
    (wt / "cfg" / "local.ini").write_text("x=1\n")
    ao("ao-preserve", "par", cwd=repo)
    commit_on(repo, "par", {"cfg": "cfg is a file upstream\n"})
    res = ao("ao-restore", cwd=repo, rc=3)
    assert "cfg/local.ini" in res.stdout
    assert ref_of(repo, "par") is not None


def test_branch_checked_out_elsewhere_refused_until_freed(repo, worktrees, tmp_path):
    wt = worktrees(repo, "busy")
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "busy", cwd=repo)
    other = tmp_path / "other"
    git("worktree", "add", "-q", other, "busy", cwd=repo)
    res = ao("ao-restore", cwd=repo, rc=1)
    assert str(other) in res.stdout + res.stderr
    assert sessions_by_id(repo)["busy"]["state"] == "pending"
    git("worktree", "remove", other, cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


# ---------------------------------------------------------------- worktree shape


def test_sparse_checkout_patterns_and_out_of_cone_files(repo, worktrees):
    wt = worktrees(repo, "sparse")
    git("sparse-checkout", "set", "--no-cone", "/src/", "/README.md", cwd=wt)
    assert not (wt / "data.bin").exists()
    (wt / "src" / "app.py").write_text("print('sparse edit')\n")
    (wt / "src" / "new.py").write_text("new\n")
    patterns = git("sparse-checkout", "list", cwd=wt)
    before = state(wt)
    ao("ao-preserve", "sparse", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert git("sparse-checkout", "list", cwd=wt) == patterns
    assert not (wt / "data.bin").exists()  # out of cone: still absent, not deleted
    assert "data.bin" in git("ls-files", cwd=wt)
    assert_restored(before, state(wt))


def test_sparse_checkout_with_an_edited_out_of_cone_file(repo, worktrees):
    wt = worktrees(repo, "sparse2")
    git("sparse-checkout", "set", "--no-cone", "/src/", cwd=wt)
    (wt / "data.bin").write_bytes(b"out of cone, edited\n")
    before = state(wt)
    ao("ao-preserve", "sparse2", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "data.bin").read_bytes() == b"out of cone, edited\n"
    assert_restored(before, state(wt))


def test_per_worktree_config_comes_back(repo, worktrees):
    git("config", "extensions.worktreeConfig", "true", cwd=repo)
    wt = worktrees(repo, "wcfg")
    git("config", "--worktree", "user.name", "Worktree Only", cwd=wt)
    ao("ao-preserve", "wcfg", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert git("config", "--worktree", "user.name", cwd=wt).strip() == "Worktree Only"


def _submodule_repo(repo, make_repo):
    sub = make_repo()
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "lib",
        cwd=repo)
    git("commit", "-qm", "add submodule", cwd=repo)
    return sub


def _with_submodule(repo, make_repo, worktrees, name):
    _submodule_repo(repo, make_repo)
    wt = worktrees(repo, name)
    git("submodule", "update", "--init", "-q", cwd=wt)
    return wt


def test_clean_submodule_is_reinitialised(repo, make_repo, worktrees):
    wt = _with_submodule(repo, make_repo, worktrees, "subok")
    (wt / "README.md").write_text("super edit\n")
    before = state(wt)
    ao("ao-preserve", "subok", cwd=repo)
    assert not wt.exists()
    ao("ao-restore", cwd=repo)
    assert (wt / "lib" / "README.md").read_text() == "hello\n"
    assert_restored(before, state(wt))


@pytest.mark.parametrize("path", ["trash", "checkout"])
@pytest.mark.parametrize("branch", ["topic", "main"])
def test_a_submodule_comes_back_on_its_local_branch(repo, make_repo, worktrees, path, branch):
    """A submodule whose HEAD was on a local branch comes back on that branch (the
    superproject records a commit; `git submodule update` leaves it detached),
    from the trash and on the checkout path: a branch only it had, and the
    remote's main, which moved on since (a fresh clone's main is moved back to
    the saved commit; the remote keeps the newer one)."""
    from tests.trash_helpers import checkout_path_only
    sub = _submodule_repo(repo, make_repo)
    wt = worktrees(repo, f"subbr-{path}-{branch}")
    git("-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q", cwd=wt)
    git("checkout", "-q", *(["-b"] if branch == "topic" else []), branch, cwd=wt / "lib")
    (sub / "later.txt").write_text("later\n")
    git("add", "later.txt", cwd=sub)
    git("commit", "-qm", "later", cwd=sub)
    (wt / "README.md").write_text("super edit\n")
    before = state(wt)
    sid = wt.name
    ao("ao-preserve", sid, cwd=repo)
    if path == "checkout":
        checkout_path_only()
    ao("ao-restore", cwd=repo)
    assert git("symbolic-ref", "-q", "HEAD", cwd=wt / "lib").strip() == f"refs/heads/{branch}"
    assert git("rev-parse", "HEAD", cwd=wt / "lib") == git("rev-parse", "HEAD:lib", cwd=wt)
    assert git("status", "--porcelain", cwd=wt) == " M README.md\n"
    assert_restored(before, state(wt))


def test_submodule_with_uncommitted_changes_blocks_removal(repo, make_repo, worktrees):
    wt = _with_submodule(repo, make_repo, worktrees, "subdirty")
    (wt / "lib" / "README.md").write_text("edited inside the submodule\n")
    _refused_untouched(repo, wt, "subdirty", "lib")


def test_submodule_with_local_commits_blocks_removal(repo, make_repo, worktrees):
    wt = _with_submodule(repo, make_repo, worktrees, "sublocal")
    (wt / "lib" / "README.md").write_text("committed locally\n")
    git("commit", "-qam", "local only", cwd=wt / "lib")
    git("add", "lib", cwd=wt)
    git("commit", "-qm", "bump", cwd=wt)
    _refused_untouched(repo, wt, "sublocal", "lib")


def _conflicting_commit(repo, wt):
    git("checkout", "-q", "-b", "side", cwd=repo)
    (repo / "README.md").write_text("side\n")
    git("commit", "-qam", "side", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    (wt / "README.md").write_text("mine\n")
    git("commit", "-qam", "mine", cwd=wt)


def _start(op, repo, wt):
    if op == "merge":
        _conflicting_commit(repo, wt)
        git("merge", "side", cwd=wt, check=False)
    elif op == "rebase":
        _conflicting_commit(repo, wt)
        git("rebase", "side", cwd=wt, check=False)
    elif op == "cherry-pick":
        _conflicting_commit(repo, wt)
        git("cherry-pick", "side", cwd=wt, check=False)
    elif op == "revert":
        (wt / "README.md").write_text("one\n")
        git("commit", "-qam", "one", cwd=wt)
        (wt / "README.md").write_text("two\n")
        git("commit", "-qam", "two", cwd=wt)
        git("revert", "--no-edit", "HEAD~1", cwd=wt, check=False)
    elif op == "am":
        patch = git("format-patch", "-1", "--stdout", "HEAD", cwd=repo)
        git("am", cwd=wt, input=patch.encode(), check=False)
    elif op == "bisect":
        git("bisect", "start", cwd=wt)


@pytest.mark.parametrize("op", ["merge", "rebase", "cherry-pick", "revert", "am", "bisect"])
def test_operation_in_progress_is_refused(repo, worktrees, op):
    wt = worktrees(repo, f"op-{op}")
    _start(op, repo, wt)
    _refused_untouched(repo, wt, f"op-{op}", "in progress")


def test_locked_worktree_is_captured_and_kept(repo, worktrees):
    wt = worktrees(repo, "locked")
    dirty(wt)
    before = state(wt)
    git("worktree", "lock", "--reason", "on a USB disk", wt, cwd=repo)
    res = ao("ao-preserve", "locked", cwd=repo, rc=1)
    assert "locked" in res.stdout
    assert state(wt) == before
    assert sessions_by_id(repo)["locked"]["state"] == "live"


def test_worktree_moved_after_registration_is_refused(repo, worktrees, tmp_path):
    wt = worktrees(repo, "mv")
    dirty(wt)
    elsewhere = tmp_path / "elsewhere"
    git("worktree", "move", wt, elsewhere, cwd=repo)
    before = state(elsewhere)
    res = ao("ao-preserve", "mv", cwd=repo, rc=1)
    assert str(elsewhere) in res.stdout + res.stderr
    assert state(elsewhere) == before
    assert sessions_by_id(repo)["mv"]["state"] == "attention"  # live, not where it was recorded
    git("worktree", "move", elsewhere, wt, cwd=repo)
    round_trip(repo, wt, "mv")


def test_repository_moved_or_deleted(repo, worktrees, tmp_path):
    wt = worktrees(repo, "repomv")
    dirty(wt)
    ao("ao-preserve", "repomv", cwd=repo)
    moved = tmp_path / "moved-repo"
    shutil.move(str(repo), moved)
    res = ao("ao-restore", cwd=tmp_path, rc=1)
    assert "gone" in res.stdout + res.stderr
    assert not wt.exists()
    shutil.move(str(moved), repo)
    ao("ao-restore", cwd=tmp_path)
    assert (wt / "README.md").read_text() == "hello\nstaged line\nunstaged line\n"


def test_a_moved_repository_comes_back_as_the_restore_message_says(repo, worktrees, tmp_path):
    wt = worktrees(repo, "repomv2")
    dirty(wt)
    before = (wt / "README.md").read_text()
    ao("ao-preserve", "repomv2", cwd=repo)
    moved = tmp_path / "moved-repo"
    shutil.move(str(repo), moved)
    res = ao("ao-restore", cwd=tmp_path, rc=1)
    assert "or run git ao doctor --recover -C NEWPATH where it is now" in res.stdout
    ao("ao", "doctor", "--recover", "-C", str(moved), cwd=tmp_path, rc=None)
    ao("ao-restore", cwd=tmp_path)
    assert (wt / "README.md").read_text() == before


def test_preserve_with_repository_gone_touches_nothing(repo, worktrees, tmp_path):
    wt = worktrees(repo, "repogone")
    (wt / "keep.txt").write_text("precious\n")
    shutil.move(str(repo), tmp_path / "away")
    res = ao("ao-preserve", "--all", cwd=tmp_path, rc=1)
    assert "gone" in res.stdout + res.stderr
    assert (wt / "keep.txt").read_text() == "precious\n"


def test_stray_file_at_path_is_refused(repo, worktrees):
    wt = worktrees(repo, "strayf")
    (wt / "a.txt").write_text("work\n")
    ao("ao-preserve", "strayf", cwd=repo)
    wt.write_text("someone else's file\n")
    res = ao("ao-restore", cwd=repo, rc=1)
    assert str(wt) in res.stdout + res.stderr
    assert wt.read_text() == "someone else's file\n"
    assert sessions_by_id(repo)["strayf"]["state"] == "pending"


def test_stray_directory_at_path_is_refused(repo, worktrees):
    wt = worktrees(repo, "strayd")
    (wt / "a.txt").write_text("work\n")
    ao("ao-preserve", "strayd", cwd=repo)
    wt.mkdir()
    (wt / "theirs").write_text("theirs\n")
    os.utime(wt / "theirs", (1_000_000, 1_000_000))  # older than the save
    ao("ao-restore", cwd=repo, rc=1)
    assert os.listdir(wt) == ["theirs"]
    assert sessions_by_id(repo)["strayd"]["state"] == "pending"
    # and the refusal is logged: a boot script has no terminal
    entries = json.loads(ao("ao", "log", "--json", cwd=repo).stdout)["entries"]
    assert any(e["action"] == "restore" and e["session"] == "strayd"
               and e["decision"] == "refused" for e in entries), entries


def test_missing_parent_is_recreated(repo, tmp_path):
    parent = tmp_path / "deep" / "parent"
    parent.mkdir(parents=True)
    wt = parent / "wt"
    git("worktree", "add", "-q", "-b", "par2", wt, cwd=repo)
    ao("ao", "add", wt, "--id", "par2", cwd=repo)
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "par2", cwd=repo)
    shutil.rmtree(tmp_path / "deep")
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))


# ---------------------------------------------------------------- content conversion


def test_reversible_clean_smudge_filter_round_trips(repo, worktrees):
    git("config", "filter.rev.clean", "rev", cwd=repo)
    git("config", "filter.rev.smudge", "rev", cwd=repo)
    (repo / ".gitattributes").write_text("*.rev filter=rev\n")
    (repo / "t.rev").write_text("abc\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "filtered", cwd=repo)
    wt = worktrees(repo, "filt")
    (wt / "t.rev").write_text("changed line\n")
    (wt / "u.rev").write_text("untracked one\n")
    round_trip(repo, wt, "filt")


def test_lossy_filter_keeps_the_worktree_and_saves_the_rest(repo, worktrees):
    git("config", "filter.up.clean", "tr a-z A-Z", cwd=repo)
    git("config", "filter.up.smudge", "cat", cwd=repo)
    wt = worktrees(repo, "lossy")
    (wt / ".gitattributes").write_text("*.up filter=up\n")
    (wt / "note.up").write_text("lower case\n")
    _refused_untouched(repo, wt, "lossy", "note.up", saved=True)


def test_autocrlf_true_round_trips(repo, worktrees):
    git("config", "core.autocrlf", "true", cwd=repo)
    wt = worktrees(repo, "crlf")
    (wt / "README.md").write_bytes(b"hello\r\nedited\r\n")
    (wt / "new.txt").write_bytes(b"one\r\ntwo\r\n")
    round_trip(repo, wt, "crlf")


def test_crlf_hidden_by_autocrlf_input_keeps_the_worktree(repo, worktrees):
    git("config", "core.autocrlf", "input", cwd=repo)
    wt = worktrees(repo, "crlfin")
    (wt / "README.md").write_bytes(b"hello\r\n")  # captured as "hello\n"
    _refused_untouched(repo, wt, "crlfin", "README.md", saved=True)


def test_the_conversion_refusal_names_every_file(repo, worktrees):
    """Several files a filter, end-of-line conversion or core.fileMode would change:
    one refusal names each of them (tracked, staged and untracked), not the first."""
    git("config", "filter.up.clean", "tr a-z A-Z", cwd=repo)
    git("config", "filter.up.smudge", "cat", cwd=repo)
    git("config", "core.autocrlf", "input", cwd=repo)
    wt = worktrees(repo, "many")
    (wt / ".gitattributes").write_text("*.up filter=up\n")
    (wt / "a.up").write_text("lower a\n")
    (wt / "sub").mkdir()
    (wt / "sub" / "b.up").write_text("lower b\n")
    git("add", "sub/b.up", cwd=wt)
    (wt / "README.md").write_bytes(b"hello\r\n")
    res = _refused_untouched(repo, wt, "many", saved=True)
    line = [ln for ln in res.stdout.splitlines() if "byte for byte" in ln]
    assert len(line) == 1, res.stdout
    for rel in ("a.up", "sub/b.up", "README.md"):
        assert f"'{wt / rel}'" in line[0], line[0]


def test_filemode_false_hidden_exec_bit_keeps_the_worktree(repo, worktrees):
    git("config", "core.fileMode", "false", cwd=repo)
    wt = worktrees(repo, "fmode")
    os.chmod(wt / "README.md", 0o755)
    _refused_untouched(repo, wt, "fmode", "README.md", "only the worktree keeps")


@pytest.mark.skipif(shutil.which("git-lfs") is None, reason="git-lfs is not installed")
def test_git_lfs_files_round_trip(repo, worktrees):
    git("lfs", "install", "--local", cwd=repo)
    git("lfs", "track", "*.big", cwd=repo)
    (repo / "a.big").write_bytes(b"large content\n" * 100)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "lfs", cwd=repo)
    wt = worktrees(repo, "lfs")
    assert (wt / "a.big").read_bytes() == b"large content\n" * 100
    (wt / "a.big").write_bytes(b"changed large content\n" * 100)
    (wt / "b.big").write_bytes(b"untracked large\n" * 50)
    round_trip(repo, wt, "lfs")


# ---------------------------------------------------------------- index flags and caches


def test_index_flags_hide_nothing(repo, worktrees):
    wt = worktrees(repo, "flags")
    (wt / "README.md").write_text("hidden by assume-unchanged\n")
    git("update-index", "--assume-unchanged", "README.md", cwd=wt)
    git("update-index", "--skip-worktree", "src/app.py", cwd=wt)
    (wt / "src" / "app.py").write_text("hidden by skip-worktree\n")
    git("update-index", "--skip-worktree", "src/util.py", cwd=wt)
    os.unlink(wt / "src" / "util.py")
    (wt / "ita.txt").write_text("intent to add\n")
    git("add", "-N", "ita.txt", cwd=wt)
    assert git("status", "--porcelain", "-uno", cwd=wt).strip() == "A ita.txt".replace(
        "A ", " A ").strip()
    before = state(wt)
    ao("ao-preserve", "flags", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "README.md").read_text() == "hidden by assume-unchanged\n"
    assert (wt / "src" / "app.py").read_text() == "hidden by skip-worktree\n"
    assert_restored(before, state(wt))


def _same_stat_rewrite(wt, rel, old: bytes, new: bytes, flag: str):
    """Give `rel` the index entry of `old` with the stat data of `new` (same size, same
    inode, mtime set back, ctime in the same second), then hide it with `flag`: git
    takes the entry as matching the file, so only the file's bytes tell the change."""
    assert len(old) == len(new)
    full = wt / rel
    for _ in range(20):
        full.write_bytes(old)
        os.utime(full, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
        git("update-index", "--", rel, cwd=wt)
        first = os.stat(full).st_ctime_ns
        with open(full, "r+b") as fh:  # the same inode
            fh.write(new)
        os.utime(full, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
        if os.stat(full).st_ctime_ns // 10**9 == first // 10**9:
            break
    else:
        pytest.skip("the clock kept crossing a second between two writes")
    git("update-index", flag, "--", rel, cwd=wt)


@pytest.mark.parametrize("how", ["trash", "checkout"])
@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_hidden_file_rewritten_to_the_same_stat_is_saved(repo, worktrees, flag, how):
    # t7012-skip-worktree-writing: a hidden file's change of the same size, its
    # stat data still the entry's; clearing the flag leaves git's stat cache
    # vouching for the old bytes, so the save must read the file itself.
    wt = worktrees(repo, "samestat")
    _same_stat_rewrite(wt, "src/util.py", b"x = 1\n", b"y = 2\n", flag)
    assert git("status", "--porcelain", cwd=wt) == ""
    before = state(wt)
    ao("ao-preserve", "samestat", cwd=repo)
    assert git("show", "refs/ao/history/samestat:src/util.py", cwd=repo) == "y = 2\n"
    if how == "checkout":
        from tests.trash_helpers import checkout_path_only
        checkout_path_only()
    res = ao("ao-restore", "samestat", cwd=repo)
    assert "nothing was saved" not in res.stdout, res.stdout
    assert (f"{wt} from the trash" in res.stdout) == (how == "trash"), res.stdout
    assert (wt / "src" / "util.py").read_bytes() == b"y = 2\n"
    assert_restored(before, state(wt))


@pytest.mark.parametrize("how", ["trash", "checkout"])
def test_intent_to_add_entry_keeps_its_mode(repo, worktrees, how):
    # t2203-add-intent: `git add -N` records the file's mode then; a chmod after it
    # shows as a mode change in the worktree, and a file gone keeps its entry's mode.
    wt = worktrees(repo, "itamode")
    for name, first, then in (("made-exec.sh", 0o644, 0o755), ("made-plain", 0o755, 0o644),
                              ("gone-exec.sh", 0o755, None)):
        (wt / name).write_text(f"{name}\n")
        os.chmod(wt / name, first)
        git("add", "-N", name, cwd=wt)
        if then is None:
            os.unlink(wt / name)
        else:
            os.chmod(wt / name, then)
    before = state(wt)
    assert any(b"100755" in e and b"gone-exec.sh" in e for e in before["index"])
    res = round_trip(repo, wt, "itamode", how=how)
    assert "restored" in res.stdout


def test_fsmonitor_and_untracked_cache_are_bypassed(repo, worktrees, tmp_path):
    hook = tmp_path / "lying-fsmonitor"
    hook.write_text("#!/bin/sh\nprintf '%s\\0' \"${2:-0}\"\n")  # "nothing changed"
    hook.chmod(0o755)
    git("config", "core.fsmonitor", str(hook), cwd=repo)
    git("config", "core.untrackedCache", "true", cwd=repo)
    wt = worktrees(repo, "fsm")
    git("status", cwd=wt)  # prime the fsmonitor token and the untracked cache
    (wt / "README.md").write_text("changed behind the monitor's back\n")
    os.makedirs(wt / "newdir")
    (wt / "newdir" / "f.txt").write_text("untracked\n")
    assert "README.md" not in git("status", "--porcelain", cwd=wt)
    before = state(wt)
    ao("ao-preserve", "fsm", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (wt / "README.md").read_text() == "changed behind the monitor's back\n"
    assert (wt / "newdir" / "f.txt").read_text() == "untracked\n"
    assert before["files"] == state(wt)["files"]


def test_no_user_hook_runs(repo, worktrees, tmp_path):
    marker = tmp_path / "hook-ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    names = ["post-checkout", "reference-transaction", "pre-commit", "post-commit",
             "post-index-change", "post-rewrite", "pre-auto-gc", "post-merge"]
    for name in names:
        for d in (hooks, repo / ".git" / "hooks"):
            h = d / name
            h.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
            h.chmod(0o755)
    wt = worktrees(repo, "hooks")
    if marker.exists():
        marker.unlink()  # `git worktree add` in the fixture ran post-checkout
    git("config", "core.hooksPath", str(hooks), cwd=repo)
    dirty(wt)
    if marker.exists():
        marker.unlink()  # the test's own git add ran post-index-change
    ao("ao-preserve", "hooks", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert not marker.exists(), marker.read_text()


def test_refusal_message_is_one_line(repo, worktrees):
    wt = worktrees(repo, "oneline")
    _start("bisect", repo, wt)
    res = ao("ao-preserve", "oneline", cwd=repo, rc=1)
    assert len([ln for ln in res.stdout.splitlines() if "oneline" in ln]) == 1
    assert subprocess.run(["git", "bisect", "log"], cwd=wt, capture_output=True,
                          check=False).returncode == 0
