"""Preserve to a git remote, restore on another machine, keep the remote clean.

A real git server on this machine (`git daemon` on 127.0.0.1, a free port) and
plain path remotes; two data dirs and two clones stand for two machines. No
test asserts a time: the bounded push is checked by the command finishing and
saying the push is pending.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ao, commit_on, dirty, git
from tests.support import db_path
from tests.worktree_state import differences, state

REF = "refs/ao/preserved/"
# Generous bounds: only a hang ever reaches them.
START_WAIT = 15
COMMAND_WAIT = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Daemon:
    """`git daemon` serving `base` on 127.0.0.1:`port`, pushes allowed."""

    def __init__(self, base: Path, port: int):
        self.base, self.port, self.proc = base, port, None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["git", "daemon", "--listen=127.0.0.1", f"--port={self.port}", "--reuseaddr",
             f"--base-path={self.base}", "--export-all", "--enable=receive-pack",
             "--informative-errors", str(self.base)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + START_WAIT
        while not _listening(self.port):
            assert self.proc.poll() is None, "git daemon exited"
            assert time.monotonic() < end, "git daemon did not start listening"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=START_WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=START_WAIT)
        self.proc = None


@pytest.fixture
def daemon(tmp_path):
    base = tmp_path / "served"
    base.mkdir()
    d = Daemon(base, _free_port())
    d.start()
    yield d
    d.stop()


@pytest.fixture
def machines(tmp_path, repo, daemon):
    """Machine A: `repo` (the default data dir) with remote origin on the daemon.
    Machine B: a clone of origin with its own data dir. Returns (clone, env of B)."""
    git("init", "-q", "--bare", daemon.base / "proj.git", cwd=tmp_path)
    git("remote", "add", "origin", daemon.url("proj.git"), cwd=repo)
    git("push", "-q", "origin", "main", cwd=repo)
    clone = tmp_path / "machine-b" / "proj"
    clone.parent.mkdir()
    git("clone", "-q", daemon.url("proj.git"), clone, cwd=tmp_path)
    return clone, {"AO_DATA_DIR": str(tmp_path / "aodata-b")}


def remote_refs(repo, remote="origin") -> dict:
    out = git("ls-remote", "--refs", remote, REF + "*", cwd=repo)
    return {ln.split("\t")[1][len(REF):]: ln.split("\t")[0] for ln in out.splitlines()}


def local_ref(repo, sid):
    return git("rev-parse", "-q", "--verify", REF + sid, cwd=repo, check=False).strip() or None


def listed(cwd, env=None) -> dict:
    doc = json.loads(ao("ao", "list", "--json", cwd=cwd, env=env).stdout)
    return {s["id"]: s for s in doc["sessions"]}


def bounded(*args, cwd, env=None) -> subprocess.CompletedProcess:
    """ao(), with a generous bound so a hang fails the test instead of stalling it."""
    return subprocess.run(["git", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=COMMAND_WAIT, check=False)


def test_push_at_preserve_then_restore_on_another_machine(repo, worktrees, machines):
    clone, b = machines
    wt = worktrees(repo, "s1", harness="claude-code")
    dirty(wt)
    before = state(wt)
    res = ao("ao-preserve", "--all", "--push", "origin", cwd=repo)
    assert f"pushed {REF}s1" in res.stdout, res.stdout + res.stderr
    assert not wt.exists()
    assert remote_refs(repo) == {"s1": local_ref(repo, "s1")}
    # Machine B: a fresh clone knows nothing; the commit's trailers are enough. Its
    # dry run says of the ignored files what the real run says.
    elsewhere = "stay on the machine that saved it (ignored files are never pushed)"
    dry = ao("ao-restore", "--from", "origin", "--no-launch", "-n", cwd=clone, env=b)
    assert elsewhere in dry.stdout, dry.stdout
    res = ao("ao-restore", "--from", "origin", "--no-launch", cwd=clone, env=b)
    # Another machine has no trash copy: ignored files stay behind, the rest is exact.
    assert differences(before, state(wt)) == []
    got = listed(clone, b)["s1"]
    assert (got["state"], got["workspace_path"], got["harness"]) == ("live", str(wt),
                                                                     "claude-code")
    # Restored in full: the remote copy is gone, and so is the local one on B.
    assert remote_refs(repo) == {}
    assert local_ref(clone, "s1") is None
    assert f"deleted {REF}s1" in res.stdout, res.stdout
    # Never a trash copy here: the ignored files stay on machine A, never pushed.
    assert "stay on the machine that saved it (ignored files are never pushed)" in res.stdout
    assert "no trash copy" not in res.stdout, res.stdout


def test_a_clean_session_whose_agent_committed_its_work_is_pushed_too(
        repo, worktrees, machines):
    # Nothing uncommitted, but the branch holds commits no remote has: the save
    # (a commit with no changes) carries them, and the other machine has them back.
    clone, b = machines
    wt = worktrees(repo, "done")
    (wt / "result.txt").write_text("the agent's result\n")
    git("add", "result.txt", cwd=wt)
    git("commit", "-q", "-m", "agent work", cwd=wt)
    tip = git("rev-parse", "HEAD", cwd=wt).strip()
    for extra in (["-n"], []):
        res = ao("ao-preserve", "done", "--push", "origin", *extra, cwd=repo)
        assert f"push {REF}done" in res.stdout.replace("would push", "push")\
            .replace("pushed", "push"), (extra, res.stdout)
    assert set(remote_refs(repo)) == {"done"}
    ao("ao-restore", "--from", "origin", "--no-launch", cwd=clone, env=b)
    assert git("rev-parse", "HEAD", cwd=wt).strip() == tip
    assert (wt / "result.txt").read_text() == "the agent's result\n"


def test_restore_from_brings_back_permission_bits_and_empty_directories(
        repo, worktrees, machines):
    # What a worktree keeps outside its commits travels in the save's own message:
    # the other machine has no record and no history of the session.
    clone, b = machines
    wt = worktrees(repo, "s1")
    (wt / "id_key").write_text("secret\n")
    os.chmod(wt / "id_key", 0o600)
    (wt / "emptydir").mkdir()
    ao("ao-preserve", "s1", "--push", "origin", cwd=repo)
    ao("ao-restore", "--from", "origin", "--no-launch", cwd=clone, env=b)
    assert oct(os.stat(wt / "id_key").st_mode & 0o777) == "0o600"
    assert (wt / "emptydir").is_dir()


def test_restore_from_maps_an_impossible_path(repo, machines, tmp_path):
    clone, b = machines
    home_a = tmp_path / "home-a"
    home_a.mkdir()
    wt = home_a / "s2"
    git("worktree", "add", "-q", "-b", "s2", wt, cwd=repo)
    ao("ao", "add", wt, "--id", "s2", cwd=repo)
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "s2", "--push", "origin", cwd=repo)
    shutil.rmtree(home_a)  # machine B has no such home directory
    res = ao("ao-restore", "--from", "origin", "--no-launch", cwd=clone, env=b, rc=1)
    line = [ln for ln in res.stdout.splitlines() if "s2" in ln]
    assert len(line) == 1 and "--map-path" in line[0], res.stdout
    assert "s2" not in listed(clone, b) and local_ref(clone, "s2") is None
    assert remote_refs(repo) == {"s2": local_ref(repo, "s2")}  # nothing lost
    home_b = tmp_path / "home-b"
    home_b.mkdir()
    ao("ao-restore", "--from", "origin", "--no-launch", "--map-path", f"{home_a}={home_b}",
       cwd=clone, env=b)
    assert differences(before, state(home_b / "s2")) == []
    assert listed(clone, b)["s2"]["workspace_path"] == str(home_b / "s2")
    assert remote_refs(repo) == {}


def test_map_path_setting_is_used(repo, machines, tmp_path):
    clone, b = machines
    home_a = tmp_path / "home-a"
    home_a.mkdir()
    wt = home_a / "s3"
    git("worktree", "add", "-q", "-b", "s3", wt, cwd=repo)
    ao("ao", "add", wt, "--id", "s3", cwd=repo)
    (wt / "new.txt").write_text("new\n")
    ao("ao-preserve", "s3", "--push", "origin", cwd=repo)
    shutil.rmtree(home_a)
    (tmp_path / "home-b").mkdir()
    ao("ao", "config", "set", "restore.mapPath", f"{home_a}={tmp_path / 'home-b'}", cwd=clone,
       env=b)
    ao("ao-restore", "--from", "origin", "s3", "--no-launch", cwd=clone, env=b)
    assert (tmp_path / "home-b" / "s3" / "new.txt").read_text() == "new\n"


def test_map_path_creates_missing_directories_below_an_existing_prefix(repo, machines,
                                                                        tmp_path):
    clone, b = machines
    home_a = tmp_path / "home-a"
    wt = home_a / "src" / "team" / "s6"
    wt.parent.mkdir(parents=True)
    git("worktree", "add", "-q", "-b", "s6", wt, cwd=repo)
    ao("ao", "add", wt, "--id", "s6", cwd=repo)
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "s6", "--push", "origin", cwd=repo)
    shutil.rmtree(home_a)
    # A mapped prefix that does not exist is not made: the refusal names it.
    gone = tmp_path / "no-such-home"
    res = ao("ao-restore", "--from", "origin", "--no-launch", "--map-path", f"{home_a}={gone}",
             cwd=clone, env=b, rc=1)
    assert "parent directory is missing" in res.stdout, res.stdout
    assert not gone.exists()
    # Below a prefix that exists, the missing directories are created.
    home_b = tmp_path / "home-b"
    home_b.mkdir()
    ao("ao-restore", "--from", "origin", "--no-launch", "--map-path", f"{home_a}={home_b}",
       cwd=clone, env=b)
    assert differences(before, state(home_b / "src" / "team" / "s6")) == []
    assert remote_refs(repo) == {}


def test_unreachable_remote_at_shutdown_is_pushed_later(repo, worktrees, machines, daemon):
    wt = worktrees(repo, "s4")
    dirty(wt)
    ao("ao", "config", "set", "preserve.push", "origin", cwd=repo)
    ao("ao", "config", "set", "preserve.pushTimeout", "1", cwd=repo)
    daemon.stop()
    # A server that accepts the connection and never answers: only our bound ends it.
    with socket.socket() as hole:
        hole.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hole.bind(("127.0.0.1", daemon.port))
        hole.listen(8)
        # A shutdown script's `git ao-preserve --all -q || logger ...` learns it.
        res = bounded("ao-preserve", "--all", "-q", cwd=repo)
    assert res.returncode == 3, res.stdout + res.stderr
    assert res.stdout == "", res.stdout
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("push\t"))
    assert line.startswith("push\tattention\ts4\tnot pushed to origin") and "timed out" in line \
        and "on this machine only" in line, line
    assert not wt.exists() and local_ref(repo, "s4")  # the local save is complete
    assert listed(repo)["s4"]["state"] == "pending"
    daemon.start()
    res = bounded("ao-prune", cwd=repo)  # the next command that can retries
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"pushed {REF}s4" in res.stdout, res.stdout
    assert remote_refs(repo) == {"s4": local_ref(repo, "s4")}


def test_rejected_push_keeps_the_local_save(repo, worktrees, tmp_path):
    plain = tmp_path / "plain.git"
    git("init", "-q", "--bare", plain, cwd=tmp_path)
    hook = plain / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho no refs here >&2\nexit 1\n")
    hook.chmod(0o755)
    git("remote", "add", "plain", plain, cwd=repo)
    wt = worktrees(repo, "s5")
    dirty(wt)
    res = ao("ao-preserve", "s5", "--push", "plain", cwd=repo, rc=3)
    assert "rejected" in res.stdout and "pre-receive hook declined" in res.stdout, res.stdout
    assert not wt.exists() and local_ref(repo, "s5")
    assert remote_refs(repo, "plain") == {}
    hook.unlink()
    # A push the remote refused is no longer tried by every command: doctor names it,
    # and a command about that remote (or that session) tries it again.
    res = ao("ao-prune", cwd=repo)
    assert "push\t" not in res.stdout, res.stdout
    res = ao("ao", "doctor", cwd=repo, rc=1)
    assert "push: s5: its push to plain has not gone through; the last try was refused by " \
        "the remote: plain refused" in res.stdout, res.stdout
    res = ao("ao-prune", "--remote", "plain", cwd=repo)
    assert f"pushed {REF}s5" in res.stdout, res.stdout
    assert remote_refs(repo, "plain") == {"s5": local_ref(repo, "s5")}


def test_two_machines_with_one_session_id_never_replace_each_other(repo, worktrees,
                                                                   machines, tmp_path):
    clone, b = machines
    wt = worktrees(repo, "same")
    (wt / "from-a.txt").write_text("machine a\n")
    ao("ao-preserve", "same", "--push", "origin", cwd=repo)
    a_commit = local_ref(repo, "same")
    wt_b = tmp_path / "machine-b" / "same"
    git("worktree", "add", "-q", "-b", "same", wt_b, cwd=clone)
    ao("ao", "add", wt_b, "--id", "same", cwd=clone, env=b)
    (wt_b / "from-b.txt").write_text("machine b\n")
    res = ao("ao-preserve", "same", "--push", "origin", cwd=clone, env=b, rc=3)
    assert "another machine" in res.stdout, res.stdout
    assert remote_refs(repo) == {"same": a_commit}  # A's work is still there
    assert local_ref(clone, "same") and local_ref(clone, "same") != a_commit
    assert listed(clone, b)["same"]["state"] == "pending"  # B's save stands


def test_restore_drops_the_remote_ref_and_prune_cleans_the_namespace(repo, worktrees,
                                                                     machines):
    clone, b = machines
    w1 = worktrees(repo, "r1")
    dirty(w1)
    w2 = worktrees(repo, "r2")
    (w2 / "keep.txt").write_text("only here\n")
    w3 = worktrees(repo, "r3")
    (w3 / "README.md").write_text("hello\ncommitted later\n")
    git("add", "README.md", cwd=w3)
    ao("ao-preserve", "--all", "--push", "origin", cwd=repo)
    assert set(remote_refs(repo)) == {"r1", "r2", "r3"}
    # Restored on this machine: its remote copy goes too.
    ao("ao-restore", "r1", "--no-launch", cwd=repo)
    assert set(remote_refs(repo)) == {"r2", "r3"}
    # r3's work is committed on its branch afterwards: its copy is no longer needed.
    commit_on(repo, "r3", {"README.md": "hello\ncommitted later\n"})
    res = ao("ao-prune", "--remote", "origin", "-n", cwd=repo)
    assert f"would delete {REF}r3" in res.stdout and "committed on r3" in res.stdout, \
        res.stdout
    assert f"kept {REF}r2" in res.stdout, res.stdout
    assert set(remote_refs(repo)) == {"r2", "r3"}  # -n changes nothing
    # Machine B does not know r2 and its work is nowhere else: another machine's
    # pending save is never deleted.
    res = ao("ao-prune", "--remote", "origin", cwd=clone, env=b)
    assert f"kept {REF}r2" in res.stdout, res.stdout
    res = ao("ao-prune", "--remote", "origin", cwd=repo)
    assert f"deleted {REF}r3" in res.stdout, res.stdout
    assert set(remote_refs(repo)) == {"r2"}
    assert git("for-each-ref", "refs/ao/incoming/", cwd=repo) == ""



def _prune_lines(res) -> dict:
    """{session id: [its prune-remote lines]} of a git ao-prune --remote."""
    out: dict = {}
    for ln in res.stdout.splitlines():
        if ln.startswith("prune-remote\t"):
            out.setdefault(ln.split("\t")[2], []).append(ln)
    return out


@pytest.mark.parametrize("where", ["saved", "other"])
def test_two_clones_of_one_remote_judge_each_remote_ref_once(repo, worktrees, tmp_path, where):
    """Two clones of one remote hold sessions: each remote ref is judged once, over
    both, and the dry run says exactly the line the real run says, run from either."""
    plain = tmp_path / "plain.git"
    git("init", "-q", "--bare", plain, cwd=tmp_path)
    git("remote", "add", "origin", plain, cwd=repo)
    git("push", "-q", "origin", "main", cwd=repo)
    other = tmp_path / "other"
    git("clone", "-q", plain, other, cwd=tmp_path)
    worktrees(other, "c1")  # the other clone holds a session too
    w3 = worktrees(repo, "r3")
    (w3 / "README.md").write_text("hello\ncommitted later\n")
    w2 = worktrees(repo, "r2")
    (w2 / "keep.txt").write_text("only here\n")
    ao("ao-preserve", "r2", "r3", "--push", "origin", cwd=repo)
    commit_on(repo, "r3", {"README.md": "hello\ncommitted later\n"})
    cwd = repo if where == "saved" else other
    dry = _prune_lines(ao("ao-prune", "--remote", "origin", "-n", cwd=cwd))
    assert set(remote_refs(repo)) == {"r2", "r3"}
    real = _prune_lines(ao("ao-prune", "--remote", "origin", cwd=cwd))
    assert [len(v) for v in dry.values()] == [1, 1], dry
    assert dry["r3"][0].startswith(f"prune-remote\tok\tr3\twould delete {REF}r3"), dry
    assert "committed on r3" in dry["r3"][0], dry
    assert dry["r2"][0].startswith(f"prune-remote\tnothing\tr2\tkept {REF}r2"), dry
    assert real["r2"] == dry["r2"], (dry, real)
    assert [ln.replace("would delete", "deleted") for ln in dry["r3"]] == real["r3"], \
        (dry, real)
    assert set(remote_refs(repo)) == {"r2"}


def test_a_prune_dry_run_says_the_pushes_the_real_run_makes_first(repo, worktrees, tmp_path):
    """The real run pushes what is pending, then judges the remote as that leaves it:
    the dry run says those pushes and judges the remote the same way."""
    plain = _plain_remote(repo, tmp_path)
    w1 = worktrees(repo, "d1")
    (w1 / "new.txt").write_text("first\n")
    ao("ao-preserve", "d1", "--push", "plain", cwd=repo)
    hook = plain / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    ao("ao-restore", "d1", "--no-launch", cwd=repo, rc=3)  # its delete is refused: pending
    (worktrees(repo, "p2") / "new.txt").write_text("second\n")
    ao("ao-preserve", "p2", "--push", "plain", cwd=repo, rc=3)  # refused: pending
    hook.unlink()

    def lines(*extra):
        res = ao("ao-prune", "--remote", "plain", *extra, cwd=repo)
        return [ln for ln in res.stdout.splitlines()
                if ln.startswith(("push\t", "prune-remote\t"))]

    dry = lines("-n")
    assert set(remote_refs(repo, "plain")) == {"d1"}
    real = lines()
    # What the hook refused last time, the dry run says it cannot judge.
    cannot = "; plain refused {ref}: [remote rejected] (pre-receive hook declined) last " \
        "time, which a dry run cannot judge: the real run tries again"
    assert all(cannot.format(ref=REF + ln.split("\t")[2]) in ln for ln in dry
               if ln.startswith("push\t")), dry
    assert [re.sub("; plain refused .* the real run tries again", "", ln)
            .replace("would ", "").replace("\tpush ", "\tpushed ")
            .replace("\tdelete ", "\tdeleted ") for ln in dry] == real, (dry, real)
    assert any(ln.startswith(f"push\tok\td1\tdeleted {REF}d1") for ln in real), real
    assert any(ln.startswith(f"prune-remote\tnothing\tp2\tkept {REF}p2") for ln in real), real
    assert set(remote_refs(repo, "plain")) == {"p2"}

def test_config_set_preserve_push_warns_about_untracked_files(repo):
    res = ao("ao", "config", "set", "preserve.push", "origin", cwd=repo)
    assert "untracked file" in res.stderr and "remote" in res.stderr, res.stderr
    ao("ao", "config", "set", "preserve.push", "-x", cwd=repo, rc=129)


def test_schema_3_database_gains_the_push_table(repo, worktrees):
    from git_ao.store import database as store_mod
    wt = worktrees(repo, "old")
    (wt / "new.txt").write_text("saved under schema 3\n")
    ao("ao-preserve", "old", cwd=repo)
    db = os.path.join(os.environ["AO_DATA_DIR"], "git-ao.db")
    conn = sqlite3.connect(db)
    # Back to schema 3: without the push table (4) and the explicit states (5).
    conn.executescript("ALTER TABLE sessions DROP COLUMN tool; ALTER TABLE sessions DROP COLUMN tool_id; "
                       "ALTER TABLE sessions DROP COLUMN tmux_session; "
                       "ALTER TABLE session_worktrees DROP COLUMN holds_less_than; "
                       "ALTER TABLE session_worktrees DROP COLUMN removed_by; "
                       "DROP TABLE remote_pushes; "
                       "ALTER TABLE session_worktrees DROP COLUMN pending; "
                       "ALTER TABLE session_worktrees DROP COLUMN ref_held; "
                       "PRAGMA user_version = 3;")
    conn.close()
    assert listed(repo)["old"]["state"] == "pending"
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(store_mod.MIGRATIONS) >= 4
    assert conn.execute("SELECT count(*) FROM remote_pushes").fetchone()[0] == 0
    conn.close()
    ao("ao-restore", "--no-launch", cwd=repo)
    assert (wt / "new.txt").read_text() == "saved under schema 3\n"


def test_push_branch_pushes_the_branch_never_forced(repo, worktrees, tmp_path):
    plain = tmp_path / "plain.git"
    git("init", "-q", "--bare", plain, cwd=tmp_path)
    git("remote", "add", "plain", plain, cwd=repo)
    wt = worktrees(repo, "pb")
    (wt / "new.txt").write_text("new\n")
    ao("ao-preserve", "pb", "--push", "plain", "--push-branch", cwd=repo)
    head = git("rev-parse", "refs/heads/pb", cwd=repo).strip()
    assert git("rev-parse", "refs/heads/pb", cwd=plain).strip() == head
    ao("ao-preserve", "--push-branch", cwd=repo, rc=129)  # needs a remote
    ao("ao-restore", "--map-path", "/a=/b", cwd=repo, rc=129)  # needs --from


def test_restore_from_takes_the_timeout_and_the_stray_option(repo, worktrees, machines):
    """`--from` restores as any restore: `--timeout` bounds it (0: nothing starts,
    the session stays pending) and a stray directory is moved only when asked."""
    clone, b = machines
    wt = worktrees(repo, "s9")
    (wt / "new.txt").write_text("saved\n")
    ao("ao-preserve", "s9", "--push", "origin", cwd=repo)
    wt.mkdir()
    (wt / "mine.txt").write_text("the user's\n")
    res = ao("ao-restore", "--from", "origin", "--no-launch", "--timeout", "0",
             "--set-aside-stray", cwd=clone, env=b, rc=1)
    assert "--timeout spent" in res.stdout, res.stdout
    assert listed(clone, b)["s9"]["state"] == "pending"
    res = ao("ao-restore", "--from", "origin", "--no-launch", cwd=clone, env=b, rc=1)
    assert "--set-aside-stray" in res.stdout and (wt / "mine.txt").exists()
    ao("ao-restore", "--from", "origin", "--no-launch", "--set-aside-stray", cwd=clone,
       env=b, rc=3)
    assert listed(clone, b)["s9"]["state"] == "live"
    assert (wt / "new.txt").read_text() == "saved\n" and not (wt / "mine.txt").exists()


def test_a_session_another_machine_restored_is_pushed_again(repo, worktrees, machines):
    """Machine B restores (and so deletes) the remote copy; this machine's next save
    is pushed under the lease that nothing is there, and B's own later push, which
    would replace it, is refused naming what each side holds."""
    clone, b = machines
    wt = worktrees(repo, "again")
    (wt / "work.txt").write_text("precious\n")
    ao("ao-preserve", "--keep-worktree", "--push", "origin", "again", cwd=repo)
    first = local_ref(repo, "again")
    # The worktree stays here (a checkpoint): B puts its copy elsewhere.
    ao("ao-restore", "--from", "origin", "--no-launch", "-q", "--map-path",
       f"{wt.parent}={clone.parent}", cwd=clone, env=b)
    assert remote_refs(repo) == {}
    (wt / "work.txt").write_text("precious\nmore precious\n")
    res = ao("ao-preserve", "--all", "--push", "origin", cwd=repo)
    assert f"pushed {REF}again" in res.stdout and "gone from there" in res.stdout, res.stdout
    second = local_ref(repo, "again")
    assert second != first and remote_refs(repo) == {"again": second}
    # Nothing left to push: the prune pushes nothing and the doctor names nothing.
    res = ao("ao-prune", "--remote", "origin", cwd=repo)
    assert "push\t" not in res.stdout, res.stdout
    assert "push:" not in ao("ao", "doctor", cwd=repo, rc=None).stdout
    # B saves its own copy of the session: the remote holds this machine's save, B
    # last saw nothing there (it deleted it), so B's is refused, and truly said.
    b_wt = clone.parent / "again"
    assert listed(clone, b)["again"]["workspace_path"] == str(b_wt)
    (b_wt / "b.txt").write_text("machine b\n")
    res = ao("ao-preserve", "again", "--push", "origin", cwd=clone, env=b, rc=3)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))
    assert f"holds {second[:12]}" in line and "last saw nothing there" in line, line
    assert f"--force-with-lease={REF}again:{second}" in line, line
    assert remote_refs(repo) == {"again": second}  # never replaced
    res = ao("ao", "doctor", cwd=clone, env=b, rc=1)
    assert "push: again: its push to origin has not gone through" in res.stdout, res.stdout
    # The user keeps B's save, as the line says how; the next retry sees it there.
    mine = local_ref(clone, "again")
    git("push", "-q", f"--force-with-lease={REF}again:{second}", "origin", f"{mine}:{REF}again",
        cwd=clone)
    res = ao("ao-prune", "--remote", "origin", cwd=clone, env=b, rc=3)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))
    # B's history is a chain of its own: the remote keeps this machine's, and the
    # line, never ok while a ref it pushed is not there, says so.
    assert line.startswith("push\tattention\tagain\torigin already holds"), line
    assert "refs/ao/history/again not pushed: origin holds" in line, line
    assert git("rev-parse", "refs/ao/history/again", cwd=repo) == \
        git("ls-remote", "origin", "refs/ao/history/again", cwd=repo).split("\t")[0] + "\n"
    assert "push:" not in ao("ao", "doctor", cwd=clone, env=b, rc=None).stdout


def test_a_delete_whose_commit_was_replaced_keeps_the_new_save(repo, worktrees, tmp_path):
    """A restore's delete of the remote copy waits (a hook refuses it); meanwhile the
    session is saved and pushed again: the delete, leased on the old commit, never
    removes the new one, and is dropped with the reason rather than retried forever."""
    plain = tmp_path / "plain.git"
    git("init", "-q", "--bare", plain, cwd=tmp_path)
    git("remote", "add", "plain", plain, cwd=repo)
    wt = worktrees(repo, "d1")
    (wt / "new.txt").write_text("first\n")
    ao("ao-preserve", "d1", "--push", "plain", cwd=repo)
    first = local_ref(repo, "d1")
    hook = plain / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    ao("ao-restore", "d1", "--no-launch", cwd=repo, rc=3)  # the delete is refused
    hook.unlink()
    # As another machine would: a newer save of the id replaces the copy on the remote.
    other = git("commit-tree", "-m", "other machine", f"{first}^{{tree}}", cwd=repo).strip()
    git("push", "-q", f"--force-with-lease={REF}d1:{first}", "plain", f"{other}:{REF}d1",
        cwd=repo)
    res = ao("ao-prune", "--remote", "plain", cwd=repo, rc=3)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))
    assert f"not deleted: plain holds {other[:12]}" in line, line
    assert remote_refs(repo, "plain") == {"d1": other}
    res = ao("ao-prune", "--remote", "plain", cwd=repo)  # said once: nothing is retried
    assert "push\t" not in res.stdout, res.stdout


def test_a_local_pending_save_is_restored_and_the_remotes_other_commit_named(
        repo, worktrees, machines, tmp_path):
    clone, b = machines
    wt_b = tmp_path / "machine-b" / "same"
    git("worktree", "add", "-q", "-b", "same", wt_b, cwd=clone)
    ao("ao", "add", wt_b, "--id", "same", cwd=clone, env=b)
    (wt_b / "from-b.txt").write_text("machine b\n")
    ao("ao-preserve", "same", cwd=clone, env=b)
    b_commit = local_ref(clone, "same")
    wt = worktrees(repo, "same")
    (wt / "from-a.txt").write_text("machine a\n")
    ao("ao-preserve", "same", "--push", "origin", cwd=repo)
    a_commit = local_ref(repo, "same")
    assert a_commit != b_commit
    look = (f"git fetch origin {REF}same && git stash show -p --include-untracked "
            "FETCH_HEAD")
    res = ao("ao-restore", "--from", "origin", "-n", cwd=clone, env=b, rc=3)
    assert a_commit[:12] in res.stdout and look in res.stdout, res.stdout
    res = ao("ao-restore", "--from", "origin", "--no-launch", cwd=clone, env=b, rc=3)
    assert a_commit[:12] in res.stdout and look in res.stdout, res.stdout
    assert (wt_b / "from-b.txt").read_text() == "machine b\n"  # its own save, kept
    assert not (wt_b / "from-a.txt").exists()
    assert remote_refs(repo) == {"same": a_commit}  # the remote's save is left alone


def _plain_remote(repo, tmp_path):
    """A bare repository beside `repo`, its remote 'plain'."""
    plain = tmp_path / "plain.git"
    git("init", "-q", "--bare", plain, cwd=tmp_path)
    git("remote", "add", "plain", plain, cwd=repo)
    return plain


def test_a_history_retention_rewrote_reaches_the_remote_under_a_lease(repo, worktrees,
                                                                      tmp_path):
    """Retention rewrites the history this machine pushed: the next push replaces that
    chain on the remote, under a lease on what this machine last pushed there, so a
    chain someone else pushed there since is kept, and the line is attention."""
    plain = _plain_remote(repo, tmp_path)
    ao("ao", "config", "set", "preserve.push", "plain", cwd=repo)
    wt = worktrees(repo, "h1")
    hist = "refs/ao/history/h1"

    def checkpoint(text, rc=0):
        (wt / "f.txt").write_text(text)
        res = ao("ao-preserve", "--keep-worktree", "h1", cwd=repo, rc=rc)
        return next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))

    for n in range(3):
        checkpoint(f"{n}\n")
    pushed = git("rev-parse", hist, cwd=repo).strip()
    assert git("rev-parse", hist, cwd=plain).strip() == pushed
    ao("ao", "config", "set", "history.keep", "1", cwd=repo)
    assert "prune-history\tok\th1\tdropped 2 of the 3" in ao("ao-prune", cwd=repo).stdout
    line = checkpoint("later\n")
    assert line.startswith("push\tok\th1\tpushed") and "not pushed" not in line, line
    assert f"{hist} (" in line and f"the chain this machine last pushed ({pushed[:12]})" in line
    now = git("rev-parse", hist, cwd=repo).strip()
    assert git("rev-parse", hist, cwd=plain).strip() == now
    # Another chain lands there (another machine's of the same id): this machine's
    # next rewrite is not forced over it, and the line says what to do.
    theirs = git("commit-tree", "-m", "another machine's history", f"{now}^{{tree}}",
                 cwd=repo).strip()
    git("push", "-q", "--force", "plain", f"{theirs}:{hist}", cwd=repo)
    ao("ao-prune", cwd=repo)
    line = checkpoint("again\n", rc=3)
    assert line.startswith("push\tattention\th1\tpushed refs/ao/preserved/h1"), line
    assert f"{hist} not pushed: plain holds {theirs[:12]}" in line, line
    assert f"--force-with-lease={hist}:{theirs}" in line, line
    assert git("rev-parse", hist, cwd=plain).strip() == theirs



def test_a_history_push_whose_record_was_lost_goes_through(repo, worktrees, tmp_path):
    """The lease on the history is what this machine last recorded pushing; when the
    remote holds an older state of this chain (a push a kill left unrecorded) or
    nothing (deleted there), the push goes again at once under a lease on that."""
    plain = _plain_remote(repo, tmp_path)
    wt = worktrees(repo, "h2")
    hist = "refs/ao/history/h2"
    first = None
    for n in range(3):
        (wt / "f.txt").write_text(f"{n}\n")
        ao("ao-preserve", "--keep-worktree", "--push", "plain", "h2", cwd=repo)
        first = first or git("rev-parse", hist, cwd=repo).strip()
    db = sqlite3.connect(db_path())
    with db:  # as if a kill had lost the record of the last two pushes
        db.execute("UPDATE remote_histories SET pushed = ?", (first,))
    db.close()
    ao("ao", "config", "set", "history.keep", "1", cwd=repo)
    ao("ao-prune", cwd=repo)
    (wt / "f.txt").write_text("later\n")
    res = ao("ao-preserve", "--keep-worktree", "--push", "plain", "h2", cwd=repo, rc=3)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))
    # The rewritten chain does not continue what the remote holds, and the lease is
    # not on it: kept there, and said.
    assert line.startswith("push\tattention\th2\t") and f"{hist} not pushed: plain holds" \
        in line, line
    # Without retention, what the remote holds is an older state of this chain.
    git("push", "-q", "--force", "plain", f"{hist}~1:{hist}", cwd=repo)
    (wt / "f.txt").write_text("later still\n")
    line = next(ln for ln in ao("ao-preserve", "--keep-worktree", "--push", "plain", "h2",
                                cwd=repo).stdout.splitlines() if ln.startswith("push\t"))
    assert line.startswith("push\tok\th2\tpushed") and "not pushed" not in line, line
    assert git("rev-parse", hist, cwd=plain) == git("rev-parse", hist, cwd=repo)
    # Gone from there: pushed again on the condition that nothing is there.
    git("push", "-q", "plain", f":{hist}", cwd=repo)
    (wt / "f.txt").write_text("last\n")
    ao("ao-preserve", "--keep-worktree", "--push", "plain", "h2", cwd=repo)
    assert git("rev-parse", hist, cwd=plain) == git("rev-parse", hist, cwd=repo)

def test_a_branch_the_remote_refuses_is_never_reported_ok(repo, worktrees, tmp_path):
    plain = _plain_remote(repo, tmp_path)
    wt = worktrees(repo, "pb2")
    (wt / "new.txt").write_text("new\n")
    ao("ao-preserve", "pb2", "--keep-worktree", "--push", "plain", "--push-branch", cwd=repo)
    # The branch moves on there (another machine's commit); here it moves elsewhere.
    other = git("commit-tree", "-p", "refs/heads/pb2", "-m", "elsewhere", "refs/heads/pb2^{tree}",
                cwd=repo).strip()
    git("push", "-q", "plain", f"{other}:refs/heads/pb2", cwd=repo)
    (wt / "mine.txt").write_text("mine\n")
    git("add", "mine.txt", cwd=wt)
    git("commit", "-q", "-m", "here", cwd=wt)
    res = ao("ao-preserve", "pb2", "--keep-worktree", "--push", "plain", "--push-branch",
             cwd=repo, rc=3)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t"))
    assert line.startswith("push\tattention\tpb2\tpushed refs/ao/preserved/pb2"), line
    assert "branch pb2 not pushed: [rejected]" in line, line
    assert git("rev-parse", "refs/heads/pb2", cwd=plain).strip() == other


def _push_line(res, sid):
    return next(ln for ln in res.stdout.splitlines() if ln.startswith("push\t") and
                ln.split("\t")[2] == sid)


def test_a_preserve_kept_for_a_file_that_would_not_come_back_saves_and_pushes_the_work(
        repo, worktrees, tmp_path):
    """A file that would not come back byte for byte keeps the worktree; the rest of
    the work is saved all the same (as a checkpoint), and that save is what goes to
    the remote, not the checkpoint before it."""
    _plain_remote(repo, tmp_path)
    git("config", "core.autocrlf", "true", cwd=repo)
    wt = worktrees(repo, "s2x")
    (wt / "newmix.txt").write_bytes(b"new\r\nfile\n")
    ao("ao", "checkpoint", "s2x", cwd=repo)
    older = local_ref(repo, "s2x")
    (wt / "README.md").write_text("latest edit\n")
    dry = ao("ao-preserve", "s2x", "--push", "plain", "-n", cwd=repo, rc=1)
    assert "would save (1 changed, 1 untracked" in dry.stdout, dry.stdout
    assert _push_line(dry, "s2x").startswith(f"push\tok\ts2x\twould push {REF}s2x"), dry.stdout
    res = ao("ao-preserve", "s2x", "--push", "plain", cwd=repo, rc=1)
    saved = local_ref(repo, "s2x")
    assert saved != older
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("preserve\t"))
    assert line.startswith(f"preserve\trefused\ts2x\t1 changed, 1 untracked saved in "
                           f"{saved[:12]}; worktree kept: "), line
    assert f"'{wt / 'README.md'}' and '{wt / 'newmix.txt'}' would not come back" in line, line
    assert git("show", f"{saved}:README.md", cwd=repo) == "latest edit\n"
    assert listed(repo)["s2x"]["state"] == "live" and wt.is_dir()
    assert _push_line(res, "s2x").startswith(f"push\tok\ts2x\tpushed {REF}s2x ({saved[:12]})")
    assert remote_refs(repo, "plain") == {"s2x": saved}
    hist = git("ao", "history", "s2x", cwd=repo).splitlines()
    assert hist[0].split("\t")[2:4] == ["preserve", saved], hist


def test_a_push_of_a_save_older_than_the_worktree_says_so(repo, worktrees, tmp_path):
    """A preserve that saves nothing (refused) still sends the save on record: its
    push line says that is not the worktree as it is, never plain ok."""
    _plain_remote(repo, tmp_path)
    wt = worktrees(repo, "old")
    (wt / "a.txt").write_text("one\n")
    ao("ao", "checkpoint", "old", cwd=repo)
    older = local_ref(repo, "old")
    (wt / "README.md").write_text("latest edit\n")
    admin = git("rev-parse", "--git-dir", cwd=wt).strip()
    head = git("rev-parse", "HEAD", cwd=wt).strip()
    Path(admin, "MERGE_HEAD").write_text(head + "\n")  # a merge in progress: refused
    for extra, verb in ((["-n"], "would push"), ([], "pushed")):
        res = ao("ao-preserve", "old", "--push", "plain", *extra, cwd=repo, rc=1)
        line = _push_line(res, "old")
        assert line.startswith(f"push\tattention\told\t{verb} {REF}old ({older[:12]})"), line
        assert "not the worktree as it is now: this run saved nothing of it (refused)" \
            in line, line
    assert remote_refs(repo, "plain") == {"old": older}


def _another_machines_save(repo, remote, sid):
    """As another machine's push of the session id would: a commit of its own at
    refs/ao/preserved/<sid> on `remote`. Returns it."""
    other = git("commit-tree", "-m", "another machine's save", "HEAD^{tree}", cwd=repo).strip()
    git("push", "-q", remote, f"{other}:{REF}{sid}", cwd=repo)
    return other


def test_a_push_the_remote_refused_is_tried_again_only_where_it_concerns_the_command(
        repo, worktrees, tmp_path):
    """Another machine saved the session id: the push is refused once, said, and
    named by doctor; an unrelated preserve or restore neither tries it again nor
    turns attention for it; a command about that remote tries it, and its dry run
    says the refusal the real run meets."""
    _plain_remote(repo, tmp_path)
    other = _another_machines_save(repo, "plain", "same")
    (worktrees(repo, "same") / "mine.txt").write_text("this machine's\n")
    dry = ao("ao-preserve", "same", "--push", "plain", "-n", cwd=repo, rc=3)
    assert _push_line(dry, "same").startswith(
        f"push\tattention\tsame\tpush would be rejected: plain holds {other[:12]}"), dry.stdout
    res = ao("ao-preserve", "same", "--push", "plain", cwd=repo, rc=3)
    assert _push_line(res, "same").startswith("push\tattention\tsame\tpush rejected: "), \
        res.stdout
    (worktrees(repo, "s1") / "x.txt").write_text("unrelated\n")
    for argv in (["ao-preserve", "s1"], ["ao-restore", "s1", "-n"],
                 ["ao-restore", "s1", "--no-launch"]):
        res = ao(*argv, cwd=repo)  # exit 0: nothing about it
        assert "push\t" not in res.stdout, (argv, res.stdout)
    res = ao("ao", "doctor", cwd=repo, rc=1)
    assert "push: same: its push to plain has not gone through; the last try was refused " \
        f"by the remote: plain holds {other[:12]}" in res.stdout, res.stdout
    dry = ao("ao-prune", "--remote", "plain", "-n", cwd=repo, rc=3)
    real = ao("ao-prune", "--remote", "plain", cwd=repo, rc=3)
    line = _push_line(dry, "same")
    assert line.startswith(f"push\tattention\tsame\tpush would be rejected: plain holds "
                           f"{other[:12]} for {REF}same"), line
    assert line.replace("push would be rejected", "push rejected") == _push_line(real, "same")
    assert _prune_lines(dry) == _prune_lines(real), (dry.stdout, real.stdout)
    assert "would delete" not in dry.stdout, dry.stdout
    assert remote_refs(repo, "plain") == {"same": other}


def test_a_refused_push_names_the_save_this_machine_holds_now(repo, worktrees, tmp_path):
    """Checkpoints after a refused push move the local save on: the line and the
    command it suggests name that save; once a prune deleted the local save, the
    line says it is gone and the push, with nothing left to send, is dropped."""
    _plain_remote(repo, tmp_path)
    other = _another_machines_save(repo, "plain", "cp")
    wt = worktrees(repo, "cp")
    (wt / "README.md").write_text("one\n")
    ao("ao-preserve", "cp", "--keep-worktree", "--push", "plain", cwd=repo, rc=3)
    pushed = local_ref(repo, "cp")
    (wt / "README.md").write_text("two\n")
    ao("ao", "checkpoint", "cp", cwd=repo)
    now = local_ref(repo, "cp")
    assert now != pushed
    (wt / "README.md").write_text("three\n")  # the save's work is no longer in the worktree
    line = _push_line(ao("ao-prune", "--remote", "plain", cwd=repo, rc=3), "cp")
    assert f"the local save is now {now[:12]} (this push carried {pushed[:12]}" in line, line
    assert f"git push --force-with-lease={REF}cp:{other} plain {now}:{REF}cp" in line, line
    assert "the local save stands" not in line and pushed not in line, line
    (wt / "README.md").write_text("two\n")
    git("add", "README.md", cwd=wt)
    git("commit", "-q", "-m", "the work, committed", cwd=wt)
    ao("ao-prune", cwd=repo)  # its work is on the branch: the local save goes
    assert local_ref(repo, "cp") is None
    dry = _push_line(ao("ao-prune", "--remote", "plain", "-n", cwd=repo, rc=3), "cp")
    line = _push_line(ao("ao-prune", "--remote", "plain", cwd=repo, rc=3), "cp")
    for got in (dry, line):
        assert f"this machine's save of it is gone ({REF}cp no longer exists here)" in got, got
        assert "stands" not in got and "to replace it" not in got, got
    assert line.endswith("the push is dropped. To look at it: git fetch plain "
                         f"{REF}cp && git stash show -p --include-untracked FETCH_HEAD"), line
    assert "push\t" not in ao("ao-prune", "--remote", "plain", cwd=repo).stdout
    assert "push:" not in ao("ao", "doctor", cwd=repo, rc=None).stdout
    assert remote_refs(repo, "plain") == {"cp": other}


def test_dry_runs_say_the_real_runs_words_of_a_rewritten_history(repo, worktrees, tmp_path):
    """Retention's dry run names the tip it would drop entries from, as the real run
    does; a pending push's dry run says the history it would force over the chain
    this machine pushed before, as the real push says it did."""
    plain = _plain_remote(repo, tmp_path)
    wt = worktrees(repo, "h3")
    hist = "refs/ao/history/h3"
    for n in range(3):
        (wt / "f.txt").write_text(f"{n}\n")
        ao("ao-preserve", "--keep-worktree", "--push", "plain", "h3", cwd=repo)
    tip = git("rev-parse", hist, cwd=repo).strip()
    ao("ao", "config", "set", "history.keep", "1", cwd=repo)

    def line(res, action):
        return next(ln for ln in res.stdout.splitlines() if ln.startswith(f"{action}\t"))

    dry = line(ao("ao-prune", "-n", cwd=repo), "prune-history")
    real = line(ao("ao-prune", cwd=repo), "prune-history")
    assert dry.endswith(f"(was {tip})") and dry.replace("would drop", "dropped") == real, \
        (dry, real)
    ao("ao", "config", "set", "history.keep", "100", cwd=repo)  # no rewrite below
    hook = plain / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    (wt / "f.txt").write_text("later\n")
    ao("ao-preserve", "--keep-worktree", "--push", "plain", "h3", cwd=repo, rc=3)
    hook.unlink()
    dry = line(ao("ao-prune", "--remote", "plain", "-n", cwd=repo), "push")
    real = line(ao("ao-prune", "--remote", "plain", cwd=repo), "push")
    now = git("rev-parse", hist, cwd=repo).strip()
    assert f"{hist} ({now[:12]}) would replace there the chain this machine last pushed " \
        f"({tip[:12]})" in dry, dry
    assert re.sub("; plain refused .* the real run tries again", "", dry).replace(
        "would push", "pushed").replace("would replace", "replaced") == real, (dry, real)
    assert real.startswith(f"push\tok\th3\tpushed {REF}h3"), real


def test_a_restore_dry_run_says_the_delete_of_the_remote_copy(repo, worktrees, tmp_path):
    """The real restore deletes the remote copy of a session back in full: its dry
    run says so in the same words, the verb aside, and deletes nothing."""
    _plain_remote(repo, tmp_path)
    (worktrees(repo, "r1") / "new.txt").write_text("saved\n")
    ao("ao-preserve", "r1", "--push", "plain", cwd=repo)
    saved = local_ref(repo, "r1")
    dry = _push_line(ao("ao-restore", "r1", "-n", cwd=repo), "r1")
    assert remote_refs(repo, "plain") == {"r1": saved}
    real = _push_line(ao("ao-restore", "r1", "--no-launch", cwd=repo), "r1")
    assert dry == f"push\tok\tr1\twould delete {REF}r1 (was {saved[:12]}) from plain", dry
    assert dry.replace("would delete", "deleted") == real, (dry, real)
    assert remote_refs(repo, "plain") == {}


def _machine_b(repo, tmp_path, remote="plain"):
    """A clone of `remote` with a data dir of its own: another machine."""
    git("push", "-q", remote, "main", cwd=repo)
    url = git("remote", "get-url", remote, cwd=repo).strip()
    clone = tmp_path / "machine-b" / "proj"
    clone.parent.mkdir()
    git("clone", "-q", "-o", remote, url, clone, cwd=tmp_path)
    return clone, {"AO_DATA_DIR": str(tmp_path / "aodata-b")}


def test_restore_from_a_path_in_the_way_is_refused_by_the_dry_run_and_registers_nothing(
        repo, worktrees, tmp_path):
    """A directory stands where the session was: the dry run refuses in the real
    run's words, the real run registers nothing (so --map-path then works), and the
    refusal names --map-path."""
    _plain_remote(repo, tmp_path)
    clone, b = _machine_b(repo, tmp_path)
    wt = worktrees(repo, "s9")
    (wt / "new.txt").write_text("saved\n")
    ao("ao-preserve", "s9", "--push", "plain", cwd=repo)
    wt.mkdir()
    (wt / "mine.txt").write_text("the user's\n")
    dry = ao("ao-restore", "--from", "plain", "-n", cwd=clone, env=b, rc=1)
    real = ao("ao-restore", "--from", "plain", "--no-launch", cwd=clone, env=b, rc=1)
    line = next(ln for ln in real.stdout.splitlines() if ln.startswith("restore\t"))
    assert line.startswith(f"restore\trefused\ts9\t'{wt}' exists and is not a worktree"), line
    assert f"git ao-restore --from plain --map-path {wt.parent}=NEW s9" in line, line
    assert "git ao-restore --from plain --set-aside-stray s9" in line, line
    assert "still pending" not in line, line
    assert dry.stdout == real.stdout, (dry.stdout, real.stdout)
    assert "s9" not in listed(clone, b) and local_ref(clone, "s9") is None
    assert git("for-each-ref", "refs/ao/", cwd=clone) == ""  # nor its history
    res = ao("ao-restore", "--from", "plain", "--set-aside-stray", "-n", cwd=clone, env=b,
             rc=3)
    assert f"would set aside the directory at {wt}" in res.stdout, res.stdout
    other = tmp_path / "other"
    other.mkdir()
    ao("ao-restore", "--from", "plain", "--no-launch", "--map-path", f"{wt.parent}={other}",
       cwd=clone, env=b)
    assert (other / "s9" / "new.txt").read_text() == "saved\n"
    assert (wt / "mine.txt").read_text() == "the user's\n"
    assert listed(clone, b)["s9"]["workspace_path"] == str(other / "s9")


def test_restore_from_brings_the_history_and_prune_remote_deletes_it_after_the_save(
        repo, worktrees, tmp_path):
    """The history pushed with a save comes with it to the other machine (--at works
    there); the remote keeps a history only while its save is there: prune
    --remote deletes it with the save, or once the save is gone, when this
    machine holds that chain, and keeps another machine's."""
    plain = _plain_remote(repo, tmp_path)
    clone, b = _machine_b(repo, tmp_path)
    wt = worktrees(repo, "s7")
    for text in ("first\n", "second\n"):
        (wt / "f.txt").write_text(text)
        ao("ao", "checkpoint", "s7", cwd=repo)
    (wt / "f.txt").write_text("third\n")
    ao("ao-preserve", "s7", "--push", "plain", cwd=repo)
    pushed = git("rev-parse", "refs/ao/history/s7", cwd=repo).strip()
    dry = ao("ao-restore", "--from", "plain", "-n", cwd=clone, env=b)
    assert f"would fetch {REF}s7 (" in dry.stdout and \
        f") and its history refs/ao/history/s7 ({pushed[:12]}) from plain" in dry.stdout, \
        dry.stdout
    res = ao("ao-restore", "--from", "plain", "--no-launch", cwd=clone, env=b)
    assert "its history came with it (refs/ao/history/s7: git ao history s7)" in res.stdout, \
        res.stdout
    assert git("rev-parse", "refs/ao/history/s7", cwd=clone).strip() == pushed
    assert len(git("ao", "history", "s7", cwd=clone, env=b).splitlines()) == 3
    ao("ao-restore", "s7", "--at", "2", cwd=clone, env=b)  # the second checkpoint, there
    assert (wt.parent / "s7" / "f.txt").read_text() == "second\n"
    assert remote_refs(repo, "plain") == {}  # the save went with the restore; not its history
    # Another session's save goes with its history; another machine's history stays.
    w2 = worktrees(repo, "c1")
    (w2 / "README.md").write_text("hello\ncommitted later\n")
    ao("ao-preserve", "c1", "--push", "plain", "--keep-worktree", cwd=repo)
    saved, c1_hist = local_ref(repo, "c1"), git("rev-parse", "refs/ao/history/c1",
                                                   cwd=repo).strip()
    git("commit", "-q", "-am", "the work, committed", cwd=w2)
    foreign = git("commit-tree", "-m", "another machine's history", "HEAD^{tree}",
                  cwd=repo).strip()
    git("push", "-q", "plain", f"{foreign}:refs/ao/history/zz", cwd=repo)
    lines = {}
    for extra in (["-n"], []):
        lines[bool(extra)] = _prune_lines(ao("ao-prune", "--remote", "plain", *extra,
                                             cwd=repo))
    assert lines[True] == {sid: [ln.replace("\tdeleted ", "\twould delete ") for ln in got]
                           for sid, got in lines[False].items()}, lines
    real = {sid: got[0] for sid, got in lines[False].items()}
    assert real["s7"] == (f"prune-remote\tok\ts7\tdeleted refs/ao/history/s7 (was {pushed}) "
                          f"from plain: {REF}s7 is gone from there, and this machine's history "
                          "of s7 holds it"), real
    assert real["c1"].startswith(f"prune-remote\tok\tc1\tdeleted {REF}c1 (was {saved}) and "
                                 f"refs/ao/history/c1 (was {c1_hist}) from plain: its work "
                                 "is committed on c1"), real
    assert real["zz"].startswith(f"prune-remote\tnothing\tzz\tkept refs/ao/history/zz "
                                 f"({foreign[:12]}) on plain: {REF}zz is gone from there"), real
    assert git("for-each-ref", "--format=%(refname)", "refs/ao/", cwd=plain).split() == \
        ["refs/ao/history/zz"]


def _raced_row(repo, worktrees, tmp_path, want):
    """A session 'race' pushed to 'plain' (the remote holds its save Z), then a row
    asking for `want` ('new': a newer checkpoint X; 'delete': the copy deleted),
    not sent yet. Returns (Context, the stale pending rows, Z, X or '', worktree)."""
    from git_ao.context import Context
    from git_ao.remote import pushes
    from git_ao.store.database import Store
    _plain_remote(repo, tmp_path)
    wt = worktrees(repo, "race")
    (wt / "one.txt").write_text("one\n")
    ao("ao-preserve", "race", "--keep-worktree", "--push", "plain", cwd=repo)
    z = local_ref(repo, "race")
    assert remote_refs(repo, "plain") == {"race": z}
    x = ""
    if want == "new":
        (wt / "two.txt").write_text("two\n")
        ao("ao-preserve", "race", "--keep-worktree", cwd=repo)
        x = local_ref(repo, "race")
        assert x != z
    ctx = Context(Store())
    [row] = [r for r in pushes.rows(ctx.store) if r.session_id == "race"]
    pushes.set_want(ctx.store, "race", row.remote, row.repo, x)
    return ctx, pushes.pending_rows(ctx.store), z, x, wt


@pytest.mark.parametrize("want", ["new", "delete"])
def test_a_push_given_up_while_it_is_sent_leaves_nothing_to_undo(repo, worktrees, tmp_path,
                                                                  want):
    """`git ao forget --push` while a background prune sends that push (the racing
    order, in-process): the push goes through and records what the remote holds
    now; the row never asks to undo it (push back the older save, or push again
    the copy just deleted)."""
    from git_ao.remote import pushes
    ctx, stale, z, x, _ = _raced_row(repo, worktrees, tmp_path, want)
    [row] = stale
    assert pushes.give_up(ctx, "race").status == "ok"
    out = pushes._push_group(ctx, row.repo, row.remote, stale, 60)
    assert [o.status for o in out] == ["ok"], out
    assert remote_refs(repo, "plain") == ({"race": x} if x else {})
    assert pushes.pending_rows(ctx.store) == []
    assert pushes.push_pending(ctx, timeout=60) == []
    assert remote_refs(repo, "plain") == ({"race": x} if x else {})
    assert local_ref(repo, "race") == (x or z)  # the local save stays


def test_forget_push_gives_up_only_what_it_read(repo, worktrees, tmp_path):
    """A preserve records a newer push between what `git ao forget --push` read and
    its write (the racing order, in-process): that push is not given up, and the
    line says so."""
    from git_ao.remote import pushes
    ctx, stale, z, x, wt = _raced_row(repo, worktrees, tmp_path, "new")
    [row] = stale
    (wt / "three.txt").write_text("three\n")
    ao("ao-preserve", "race", "--keep-worktree", cwd=repo)
    w = local_ref(repo, "race")
    assert w not in (x, z)
    pushes.set_want(ctx.store, "race", row.remote, row.repo, w)  # the preserve's
    out = pushes._give_up(ctx, "race", stale)
    assert out.status == "attention", out
    assert "not given up" in out.message and "changed" in out.message, out.message
    [now] = pushes.rows(ctx.store)
    assert (now.want, now.have) == (w, x)  # the preserve pushed X on its way
