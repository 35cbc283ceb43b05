"""What a new user meets from the README alone: pushes checked before anything is
removed, dry runs and records that tell the truth, messages that say where the
work is. Remotes here are bare repositories on disk; a second data dir and a
clone stand for another machine."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.support import PROBE, ao, commit_on, db_path, dirty, git, ref_of, states

REF = "refs/ao/preserved/"


@pytest.fixture
def bare(tmp_path, repo):
    """A bare repository `backup` of `repo`, holding main."""
    path = tmp_path / "backup.git"
    git("init", "-q", "--bare", path, cwd=tmp_path)
    git("remote", "add", "backup", path, cwd=repo)
    git("push", "-q", "backup", "main", cwd=repo)
    return path


@pytest.fixture
def machine_b(tmp_path, bare):
    """Another machine: a clone of `bare` and its own data dir. Returns (clone, env)."""
    clone = tmp_path / "machine-b" / "proj"
    clone.parent.mkdir()
    git("clone", "-q", bare, clone, cwd=tmp_path)
    git("remote", "rename", "origin", "backup", cwd=clone)
    return clone, {"AO_DATA_DIR": str(tmp_path / "aodata-b")}


def remote_refs(bare) -> dict:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", REF, cwd=bare)
    return {ln.split()[0][len(REF):]: ln.split()[1] for ln in out.splitlines()}


def listed(cwd, env=None) -> dict:
    doc = json.loads(ao("ao", "list", "--json", cwd=cwd, env=env).stdout)
    return {s["id"]: s for s in doc["sessions"]}


# ---------------------------------------------------------------- pushing


@pytest.mark.parametrize("how", ["option", "setting", "path"])
def test_a_remote_that_cannot_exist_refuses_before_anything_is_removed(how, repo, worktrees,
                                                                         bare, tmp_path):
    wt = worktrees(repo, "spike")
    other = worktrees(repo, "other")
    dirty(wt)
    dirty(other)
    bad = str(tmp_path / "no-such.git") if how == "path" else "nosuchremote"
    args = ["ao-preserve", "--all"]
    if how == "setting":
        ao("ao", "config", "set", "preserve.push", bad, cwd=repo)
    else:
        args += ["--push", bad]
    res = ao(*args, cwd=repo, rc=1)
    for sid in ("spike", "other"):
        line = next(ln for ln in res.stdout.splitlines() if f"\t{sid}\t" in ln)
        assert line.startswith("preserve\trefused\t"), res.stdout
        assert bad in line and "nothing is removed" in line, line
    assert wt.is_dir() and other.is_dir()
    assert ref_of(repo, "spike") is None
    assert states(repo) == {"spike": "live", "other": "live"}
    # A dry run says the same, exit 1.
    res = ao(*args, "-n", cwd=repo, rc=1)
    assert res.stdout.count("\trefused\t") == 2, res.stdout
    # A good remote works for the same sessions.
    ao("ao-preserve", "--all", "--push", "backup", cwd=repo)
    assert set(remote_refs(bare)) == {"spike", "other"}


def test_a_checkpoint_with_push_pushes_and_says_so(repo, worktrees, bare):
    wt = worktrees(repo, "cp")
    dirty(wt)
    res = ao("ao-preserve", "cp", "--keep-worktree", "--push", "backup", cwd=repo)
    commit = ref_of(repo, "cp")
    assert remote_refs(bare) == {"cp": commit}
    assert f"push\tok\tcp\tpushed {REF}cp ({commit[:12]}) to backup" in res.stdout, res.stdout
    assert wt.is_dir()
    (wt / "more.txt").write_text("more\n")
    res = ao("ao-preserve", "cp", "--keep-worktree", "--push", "backup", "-n", cwd=repo)
    assert f"push\tok\tcp\twould push {REF}cp to backup" in res.stdout, res.stdout


def test_a_session_restored_elsewhere_relaunches_with_its_agent_facts(repo, worktrees, bare,
                                                                     machine_b, tmp_path):
    clone, b = machine_b
    wt = worktrees(repo, "far", harness="claude-code", agent_session_id="7f3a-resume")
    dirty(wt)
    ao("ao-preserve", "far", "--push", "backup", cwd=repo)
    body = git("log", "-1", "--format=%B", REF + "far", cwd=repo)
    assert "Ao-Agent-Session: 7f3a-resume" in body, body
    out = tmp_path / "probe.json"
    argv = " ".join(shlex.quote(a) for a in (sys.executable, "-c", PROBE, "{agent_session_id}"))
    ao("ao", "config", "set", "relaunch.command", argv, cwd=clone, env=b)
    ao("ao-restore", "--from", "backup", cwd=clone, env={**b, "PROBE_OUT": str(out)})
    seen = json.loads(out.read_text())
    assert seen["argv"] == ["7f3a-resume"]
    assert seen["env"]["AO_AGENT_SESSION_ID"] == "7f3a-resume"
    assert listed(clone, b)["far"]["agent_session_id"] == "7f3a-resume"


def test_doctor_recover_keeps_the_agent_session_id(repo, worktrees):
    wt = worktrees(repo, "rec", agent_session_id="abc-123")
    dirty(wt)
    ao("ao-preserve", "rec", cwd=repo)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db_path()}{suffix}"):
            os.unlink(f"{db_path()}{suffix}")
    ao("ao", "doctor", "--recover", "-C", repo, cwd=repo)
    assert listed(repo)["rec"]["agent_session_id"] == "abc-123"


def test_the_boot_restore_deletes_the_remote_copy_within_the_push_bound(repo, worktrees,
                                                                          tmp_path):
    wt = worktrees(repo, "boot")
    dirty(wt)
    with socket.socket() as hole:
        # A server that accepts the connection and never answers: only the bound ends it.
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)
        url = f"git://127.0.0.1:{hole.getsockname()[1]}/proj.git"
        git("remote", "add", "far", url, cwd=repo)
        ao("ao", "config", "set", "preserve.pushTimeout", "1", cwd=repo)
        ao("ao-preserve", "boot", "--push", "far", cwd=repo, rc=3)
        # As if the push had gone through: the remote holds the save.
        db = sqlite3.connect(db_path())
        with db:
            db.execute("UPDATE remote_pushes SET have = want")
        db.close()
        res = ao("ao-restore", cwd=repo, process=True, rc=3)
    assert wt.is_dir() and states(repo)["boot"] == "live"
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))
    assert line.startswith("push\tattention\tboot\tnot deleted from far") and "timed out" in line, \
        line
    page = (Path(__file__).parents[1] / "man" / "git-ao-restore.1").read_text()
    desc = page.split(".SH OPTIONS")[0]
    assert "deletes \\fBrefs/ao/preserved/" in desc and "preserve.pushTimeout" in desc


# ---------------------------------------------------------------- dry runs


def _snapshot_repo(path) -> tuple[str, str]:
    """Every ref and the object count: what a dry run must leave as it was."""
    return (git("for-each-ref", cwd=path), git("count-objects", "-v", cwd=path))


def _files(top: Path) -> dict:
    """Every file under `top` with its size and modification time (but SQLite's
    shared-memory index, which a reader of a WAL database maps and touches)."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in top.rglob("*")
            if p.is_file() and not p.name.endswith("-shm")}


def test_restore_from_dry_run_judges_as_the_real_run_and_writes_nothing(repo, bare, machine_b,
                                                                        tmp_path):
    clone, b = machine_b
    home_a = tmp_path / "home-a"
    home_a.mkdir()
    wt = home_a / "away"
    git("worktree", "add", "-q", "-b", "away", wt, cwd=repo)
    ao("ao", "add", wt, "--id", "away", cwd=repo)
    dirty(wt)
    ao("ao-preserve", "away", "--push", "backup", cwd=repo)
    os.rename(home_a, tmp_path / "home-a-gone")  # machine B has no such home directory
    before = _snapshot_repo(clone)
    res = ao("ao-restore", "--from", "backup", "-n", cwd=clone, env=b, rc=1)
    line = next(ln for ln in res.stdout.splitlines() if "\taway\t" in ln)
    assert line.startswith("restore\trefused\taway\t") and "--map-path" in line, res.stdout
    assert not Path(b["AO_DATA_DIR"]).exists()  # no data dir, no database
    assert _snapshot_repo(clone) == before
    real = ao("ao-restore", "--from", "backup", cwd=clone, env=b, rc=1)
    assert "\trefused\taway\t" in real.stdout and "--map-path" in real.stdout
    home_b = tmp_path / "home-b"
    home_b.mkdir()
    res = ao("ao-restore", "--from", "backup", "-n", "--map-path", f"{home_a}={home_b}",
             cwd=clone, env=b)
    assert (f"restore\tok\taway\twould fetch {REF}away" in res.stdout
            and f"and restore it at {home_b / 'away'} (recorded at {wt})" in res.stdout), \
        res.stdout
    assert not (home_b / "away").exists()
    # Below a mapped prefix that exists, the real run creates the missing
    # directories; the dry run says so and creates none.
    deep = home_b / "home-a"
    data_before = _files(Path(b["AO_DATA_DIR"]))
    res = ao("ao-restore", "--from", "backup", "-n", "--map-path", f"{tmp_path}={home_b}",
             cwd=clone, env=b)
    assert f"and restore it at {deep / 'away'} (recorded at {wt}), creating {deep}" \
        in res.stdout, res.stdout
    assert not deep.exists()
    assert _files(Path(b["AO_DATA_DIR"])) == data_before


def test_restore_dry_run_names_the_way_and_a_moved_branch(repo, worktrees):
    whole = worktrees(repo, "whole")
    moved = worktrees(repo, "moved")
    for wt in (whole, moved):
        (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "--all", cwd=repo)
    commit_on(repo, "moved", {"README.md": "theirs\n"}, "theirs")
    res = ao("ao-restore", "-n", cwd=repo)
    lines = {ln.split("\t")[2]: ln for ln in res.stdout.splitlines()}
    assert f"would put the worktree back at {whole} from the trash (" in lines["whole"], res.stdout
    assert (f"would re-create the worktree at {moved} by a checkout and apply the save"
            in lines["moved"]), res.stdout
    assert "branch 'moved' moved since the save" in lines["moved"]
    assert "may conflict" in lines["moved"]
    # The real run goes each way the dry run said.
    res = ao("ao-restore", cwd=repo, rc=3)
    lines = {ln.split("\t")[2]: ln for ln in res.stdout.splitlines() if ln.startswith("restore")}
    assert "from the trash" in lines["whole"] and "conflict" in lines["moved"], res.stdout


def test_a_dry_run_in_a_new_data_dir_creates_nothing(repo, worktrees, tmp_path):
    wt = worktrees(repo, "fresh", register=False)
    dirty(wt)
    data = tmp_path / "new-data"
    for args in (["ao-preserve", "-n"], ["ao-restore", "-n"], ["ao-prune", "-n"],
                 ["ao", "add", "-n", str(wt)]):
        ao(*args, cwd=wt, env={"AO_DATA_DIR": str(data)}, rc=None)
        assert not data.exists(), args


# ---------------------------------------------------------------- after a conflict


def test_a_conflicted_restore_names_what_is_staged_otherwise_than_saved(repo, worktrees):
    (repo / "b.txt").write_text("b\n")
    (repo / "c.sh").write_text("c\n")
    git("add", "b.txt", "c.sh", cwd=repo)
    git("commit", "-q", "-m", "more files", cwd=repo)
    wt = worktrees(repo, "idx")
    git("rm", "-q", "b.txt", cwd=wt)  # a staged deletion
    os.chmod(wt / "c.sh", 0o755)  # a mode change left unstaged
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "idx", cwd=repo)
    commit_on(repo, "idx", {"README.md": "theirs\n"}, "theirs")
    res = ao("ao-restore", "--json", cwd=repo, rc=3)
    got = next(r for r in json.loads(res.stdout)["results"] if r["action"] == "restore")
    staged = set(git("diff", "--cached", "--name-only", cwd=wt).split())
    expect = []
    if "c.sh" in staged:
        expect.append("c.sh (staged now, not when saved)")
    if "b.txt" not in staged:
        expect.append("b.txt (staged when saved, not now)")
    assert expect, "git kept the index part: nothing to say"
    assert got["index_not_kept"] == sorted(expect)
    assert "the index part could not be kept: " in got["message"], got["message"]


# ---------------------------------------------------------------- summaries


def test_summaries_count_sessions_and_pushes_apart(repo, worktrees, tmp_path):
    for sid in ("s1", "s2"):
        dirty(worktrees(repo, sid))
    target = tmp_path / "later.git"
    target.mkdir()  # a directory, not yet a repository: the push waits
    git("remote", "add", "later", target, cwd=repo)
    ao("ao", "config", "set", "preserve.push", "later", cwd=repo)
    res = ao("ao-preserve", "s1", cwd=repo, rc=3)
    assert res.stderr.splitlines()[-1] == "preserve: 1 ok; push: 1 attention", res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))
    assert "does not appear to be a git repository" in line, line  # git's reason, not its advice
    git("init", "-q", "--bare", target, cwd=tmp_path)
    # Nothing is preserved; the push left pending from before goes through.
    res = ao("ao-preserve", "--all", "--timeout", "0", cwd=repo, rc=1)
    assert res.stderr.splitlines()[-1] == "preserve: 1 refused; push: 1 ok", res.stderr
    dirty(worktrees(repo, "s3"))
    res = ao("ao-preserve", "--all", cwd=repo)
    assert res.stderr.splitlines()[-1] == "preserve: 2 ok; push: 2 ok", res.stderr


# ---------------------------------------------------------------- ignored files


def test_preserve_says_where_the_ignored_files_are(repo, worktrees):
    (repo / ".gitignore").write_text(".env\n")
    git("add", ".gitignore", cwd=repo)
    git("commit", "-q", "-m", "ignore .env", cwd=repo)
    kept = worktrees(repo, "kept")
    gone = worktrees(repo, "gone")
    for wt in (kept, gone):
        (wt / ".env").write_text("KEY=1\n")
        (wt / "new.txt").write_text("new\n")
    res = ao("ao-preserve", "kept", "--keep-worktree", "--json", cwd=repo)
    [r] = json.loads(res.stdout)["results"]
    assert "1 ignored path(s) not in the ref, left in the worktree; worktree kept" \
        in r["message"], r["message"]
    res = ao("ao-preserve", "gone", "--json", cwd=repo)
    [r] = json.loads(res.stdout)["results"]
    assert "not saved" not in r["message"]
    assert (f"its 1 ignored path(s) are kept in the trash copy {r['trash']}, which "
            "git ao-restore brings back; worktree removed") in r["message"], r["message"]
    assert (Path(r["trash"]) / ".env").read_text() == "KEY=1\n"
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert "## The trash" in readme


# ---------------------------------------------------------------- records in step with refs


def _conflicted(repo, worktrees, sid):
    wt = worktrees(repo, sid)
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", sid, cwd=repo)
    commit_on(repo, sid, {"README.md": "theirs\n"}, "theirs")
    ao("ao-restore", sid, cwd=repo, rc=3)
    assert states(repo)[sid] == "attention"
    return wt


def test_resolve_drops_the_kept_ref_and_the_attention_together(repo, worktrees):
    wt = _conflicted(repo, worktrees, "conf")
    kept = ref_of(repo, "conf")
    res = ao("ao", "resolve", "conf", cwd=repo, rc=1)  # the markers are still there
    assert "still unmerged" in res.stdout and "README.md" in res.stdout, res.stdout
    assert ref_of(repo, "conf") == kept
    (wt / "README.md").write_text("both\n")
    git("add", "README.md", cwd=wt)
    res = ao("ao", "resolve", "conf", "-n", cwd=repo)
    assert f"would drop {REF}conf (was {kept})" in res.stdout
    assert ref_of(repo, "conf") == kept
    res = ao("ao", "resolve", "conf", cwd=repo)
    assert f"resolve\tok\tconf\tdropped {REF}conf (was {kept})" in res.stdout, res.stdout
    assert ref_of(repo, "conf") is None
    got = listed(repo)["conf"]
    assert (got["state"], got["preserve_ref"], got["preserved_commit"]) == ("live", None, None)
    res = ao("ao", "resolve", "conf", cwd=repo)
    assert "resolve\tnothing\tconf\t" in res.stdout
    # Shutdown saves it as usual again.
    (wt / "more.txt").write_text("more\n")
    ao("ao-preserve", "--all", cwd=repo)
    assert not wt.exists()


def test_resolve_drops_the_remote_copy_a_conflicted_restore_kept(repo, worktrees, bare):
    wt = worktrees(repo, "far")
    (wt / "README.md").write_text("mine\n")
    ao("ao-preserve", "far", "--push", "backup", cwd=repo)
    commit_on(repo, "far", {"README.md": "theirs\n"}, "theirs")
    ao("ao-restore", "far", cwd=repo, rc=3)
    assert set(remote_refs(bare)) == {"far"}  # kept with the local ref
    (wt / "README.md").write_text("both\n")
    git("add", "README.md", cwd=wt)
    res = ao("ao", "resolve", "far", cwd=repo)
    assert f"push\tok\tfar\tdeleted {REF}far" in res.stdout, res.stdout
    assert remote_refs(bare) == {}
    assert res.stderr.splitlines()[-1] == "resolve: 1 ok; push: 1 ok"


def test_a_ref_dropped_by_hand_leaves_list_show_and_prune_in_step(repo, worktrees):
    _conflicted(repo, worktrees, "hand")
    kept = ref_of(repo, "hand")
    git("update-ref", "-d", REF + "hand", cwd=repo)  # the README's old advice
    got = listed(repo)["hand"]
    assert (got["state"], got["preserve_ref"], got["preserved_commit"]) == ("live", None, None)
    plain = ao("ao", "list", cwd=repo).stdout
    assert plain.rstrip("\n").endswith("\t-"), plain
    shown = ao("ao", "show", "hand", cwd=repo).stdout
    assert kept not in shown and "README.md |" not in shown, shown
    res = ao("ao-prune", "-n", cwd=repo)
    assert f"would stop naming {REF}hand ({kept[:12]}) in the record" in res.stdout, res.stdout
    res = ao("ao-prune", cwd=repo)
    assert f"stopped naming {REF}hand" in res.stdout
    again = ao("ao-prune", cwd=repo).stdout.splitlines()
    # said once, then in step (the trash keeps its entry two weeks, and says so)
    assert [ln for ln in again if "hand" in ln and not ln.startswith("prune-trash")] == []
    # resolve brings a record in step too.
    _conflicted(repo, worktrees, "hand2")
    git("update-ref", "-d", REF + "hand2", cwd=repo)
    res = ao("ao", "resolve", "hand2", cwd=repo)
    assert f"{REF}hand2 was already deleted; the record stops naming it" in res.stdout


def test_list_notices_a_live_session_whose_worktree_is_gone(repo, worktrees):
    import shutil
    gone = worktrees(repo, "gone")
    worktrees(repo, "here")
    shutil.rmtree(gone)
    assert states(repo) == {"gone": "attention", "here": "live"}
    res = ao("ao", "list", cwd=repo)
    assert "gone\tworker\t-\tattention\t" in res.stdout
    assert (f"hint: gone: live, but its worktree {gone} is gone (removed): git ao-preserve "
            "gone records that, then git ao-restore re-creates it from its branch") \
        in res.stderr, res.stderr
    ao("ao-preserve", "gone", cwd=repo)
    assert states(repo)["gone"] == "pending"


# ---------------------------------------------------------------- doctor


def test_doctor_suggests_a_command_that_works_and_recover_says_only_what_is_left(repo,
                                                                                worktrees):
    wt = worktrees(repo, "orph")
    worktrees(repo, "other")
    dirty(wt)
    ao("ao-preserve", "orph", cwd=repo)
    ao("ao", "forget", "--force", "orph", cwd=repo)  # the record is lost, the ref stays
    res = ao("ao", "doctor", cwd=repo, rc=1)
    line = next(ln for ln in res.stdout.splitlines() if "orphaned refs" in ln)
    suggested = line.split("(git ao doctor --recover -C ", 1)[1].split(" rebuilds")[0]
    assert suggested == str(repo), line
    res = ao("ao", "doctor", "--recover", "-C", suggested, cwd=wt.parent)
    assert "recover\tok\torph\t" in res.stdout
    assert "  ok  " not in res.stdout and "   note  " not in res.stdout, res.stdout
    assert "git ao doctor shows every check" in res.stderr
    assert states(repo)["orph"] == "pending"
    # The git dir names the repository as well.
    ao("ao", "forget", "--force", "orph", cwd=repo)
    res = ao("ao", "doctor", "--recover", "-C", repo / ".git", cwd=wt.parent)
    assert "recover\tok\torph\t" in res.stdout, res.stdout + res.stderr


def test_a_remote_with_a_relative_url_is_pushed_to_and_restored_from(repo, worktrees, tmp_path):
    # `git remote add backup ../backup.git`, as a user types it in the main worktree.
    git("init", "-q", "--bare", tmp_path / "rel.git", cwd=tmp_path)
    rel = os.path.relpath(tmp_path / "rel.git", repo)
    git("remote", "add", "rel", rel, cwd=repo)
    wt = worktrees(repo, "relu")
    dirty(wt)
    res = ao("ao-preserve", "relu", "--push", "rel", cwd=repo)
    assert f"push\tok\trelu\tpushed {REF}relu" in res.stdout, res.stdout
    assert remote_refs(tmp_path / "rel.git") == {"relu": ref_of(repo, "relu")}
    ao("ao-restore", "relu", cwd=repo)
    assert remote_refs(tmp_path / "rel.git") == {}
    git("remote", "set-url", "rel", "../no-such.git", cwd=repo)
    res = ao("ao-preserve", "relu", "--push", "rel", cwd=repo, rc=1)
    assert "no repository is there" in res.stdout and wt.is_dir(), res.stdout


@pytest.mark.parametrize("why", ["locked", "fifo", "nested"])
def test_a_preserve_dry_run_says_when_the_real_run_keeps_the_worktree(why, repo, worktrees):
    wt = worktrees(repo, "keep")
    dirty(wt)
    if why == "locked":
        git("worktree", "lock", "--reason", "on a stick", wt, cwd=repo)
    elif why == "fifo":
        os.mkfifo(wt / "pipe")
    else:
        inner = wt / "inner"
        git("init", "-q", inner, cwd=wt)
        (inner / "f").write_text("local only\n")
        git("add", "f", cwd=inner)
        git("commit", "-q", "-m", "local", cwd=inner)
        with open(wt / ".gitignore", "a") as fh:
            fh.write("inner/\n")
    dry = ao("ao-preserve", "keep", "-n", cwd=repo, rc=1)
    assert dry.stdout.startswith("preserve\trefused\tkeep\twould save ("), dry.stdout
    assert "and keep the worktree: " in dry.stdout
    real = ao("ao-preserve", "keep", cwd=repo, rc=1)
    assert "worktree kept: " in real.stdout and wt.is_dir(), real.stdout
    # The dry run names what the real run names.
    assert dry.stdout.split("keep the worktree: ", 1)[1] == \
        real.stdout.split("worktree kept: ", 1)[1], (dry.stdout, real.stdout)


def test_the_remote_check_reads_the_push_url(repo, worktrees, bare, tmp_path):
    # A remote whose fetch URL is elsewhere and whose pushurl is the backup.
    git("remote", "add", "split", str(tmp_path / "fetch-only.git"), cwd=repo)
    git("config", "remote.split.pushurl", str(bare), cwd=repo)
    wt = worktrees(repo, "split")
    dirty(wt)
    res = ao("ao-preserve", "split", "--push", "split", cwd=repo)
    assert f"push\tok\tsplit\tpushed {REF}split" in res.stdout, res.stdout
    assert set(remote_refs(bare)) == {"split"}


def _data_dir_state() -> dict:
    """Every name under the data dir with its size and mtime (and the dir's own)."""
    top = os.environ["AO_DATA_DIR"]
    out = {}
    for root, dirs, files in os.walk(top):
        for name in [".", *dirs, *files]:
            p = os.path.join(root, name)
            st = os.lstat(p)
            out[os.path.relpath(p, top)] = (st.st_size, st.st_mtime_ns)
    return out


def test_dry_runs_and_reads_leave_the_data_dir_as_it_was(repo, worktrees):
    """SQLite makes git-ao.db-wal and -shm when a WAL database is opened, even
    read-only: a dry run or a read-only command must not, nor touch any mtime."""
    wt = worktrees(repo, "dry")
    (wt / "f").write_text("x")
    ao("ao-preserve", "dry", cwd=repo, process=True)
    wt2 = worktrees(repo, "live")
    (wt2 / "g").write_text("y")
    data = os.environ["AO_DATA_DIR"]
    assert not os.path.exists(os.path.join(data, "git-ao.db-wal"))
    before = _data_dir_state()
    for args in (("ao-preserve", "-n", "live"), ("ao-restore", "-n"), ("ao-prune", "-n"),
                 ("ao", "list"), ("ao", "list", "--all", "--json"), ("ao", "show", "dry")):
        ao(*args, cwd=repo)
        assert _data_dir_state() == before, args
    # While another git-ao holds the database open (its -wal is there), a read
    # sees what it committed.
    other = sqlite3.connect(os.path.join(data, "git-ao.db"))
    try:
        other.execute("UPDATE sessions SET harness = 'seen' WHERE id = 'dry'")
        other.commit()
        assert os.path.exists(os.path.join(data, "git-ao.db-wal"))
        shown = json.loads(ao("ao", "show", "--json", "dry", cwd=repo).stdout)
        assert "seen" in json.dumps(shown)
    finally:
        other.close()
    # And once it is closed (-wal gone, the change checkpointed), a read that
    # started before it still sees the new state.
    assert not os.path.exists(os.path.join(data, "git-ao.db-wal"))
    before = _data_dir_state()
    shown = json.loads(ao("ao", "show", "--json", "dry", cwd=repo).stdout)
    assert "seen" in json.dumps(shown) and _data_dir_state() == before


def test_a_worktree_not_at_its_path_gets_one_true_advice_from_list_restore_doctor(
        repo, worktrees, tmp_path):
    # Moved by git worktree move, removed, emptied: each says what is true and what
    # brings it back, in the same words from list, restore and doctor, and preserve
    # does what the advice says.
    moved = worktrees(repo, "dash")
    new = tmp_path / "moved"
    git("worktree", "move", moved, new, cwd=repo)
    removed = worktrees(repo, "rm")
    import shutil
    shutil.rmtree(removed)
    emptied = worktrees(repo, "tmpfs")
    shutil.rmtree(emptied)
    emptied.mkdir()
    want = {
        "dash": (f"live, but its worktree {moved} was moved to {new} (git worktree move); "
                 f"git worktree move {new} {moved} moves it back (git ao-preserve refuses "
                 "it until then)"),
        "rm": (f"live, but its worktree {removed} is gone (removed): git ao-preserve rm "
               "records that, then git ao-restore re-creates it from its branch"),
        "tmpfs": (f"live, but its worktree {emptied} is empty (a tmpfs cleared by a "
                  "reboot?): git ao-preserve tmpfs records that, then git ao-restore "
                  "re-creates it from its branch"),
    }
    hints = ao("ao", "list", cwd=repo).stderr
    checks = json.loads(ao("ao", "doctor", "--json", cwd=repo, rc=1).stdout)["checks"]
    for sid, advice in want.items():
        assert f"hint: {sid}: {advice}\n" in hints, hints
        res = ao("ao-restore", sid, cwd=repo, rc=3)
        assert res.stdout == f"restore\tattention\t{sid}\t{advice}\n"
        assert [c for c in checks if c["detail"] == f"{sid}: {advice}"], checks
    res = ao("ao-preserve", "dash", cwd=repo, rc=None)
    assert f"git worktree move {new} {moved} moves it back" in res.stdout + res.stderr
    git("worktree", "move", new, moved, cwd=repo)
    assert states(repo)["dash"] == "live"
    ao("ao-preserve", "rm", "tmpfs", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert (removed / "README.md").exists() and (emptied / "README.md").exists()
