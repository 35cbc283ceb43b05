"""Reading the ao daemon's database leaves its directory exactly as it was, and works
for a database git-ao cannot write (another user's, the daemon stopped)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sqlite3
import tempfile

import pytest

from git_ao.errors import Fatal
from git_ao.importers import daemon_db as ddb
from tests.daemon_schema import daemon_db, daemon_session
from tests.support import ao

NOBODY = 65534


def _snapshot(d):
    """Every entry of `d`: name -> (bytes, mtime_ns)."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        with open(p, "rb") as f:
            out[name] = (f.read(), os.stat(p).st_mtime_ns)
    return out


@pytest.mark.parametrize("wal", [True, False], ids=["wal", "rollback"])
@pytest.mark.parametrize("running", [False, True], ids=["stopped", "running"])
def test_the_daemon_directory_is_left_as_it_was(wal, running, repo, worktrees, tmp_path):
    w1 = worktrees(repo, "ao-1", register=False)
    w2 = worktrees(repo, "ao-2", register=False)
    daemon_dir = tmp_path / "daemon"
    daemon_dir.mkdir()
    db = daemon_db(daemon_dir / "ao.db", 103, wal=wal, projects=[("ao", str(repo))],
                   sessions=[daemon_session("ao-1", "ao", w1)])
    live = None
    if running:
        # The daemon at work: a connection held open that has written since the last
        # checkpoint (in WAL mode the row is only in ao.db-wal).
        live = sqlite3.connect(db)
        live.execute("PRAGMA wal_autocheckpoint = 0")
        live.execute("INSERT INTO sessions (id, project_id, num, workspace_path, branch) "
                     "VALUES ('ao-2', 'ao', 2, ?, 'ao-2')", (str(w2),))
        live.commit()
    try:
        before = _snapshot(daemon_dir)
        if wal and running:
            assert {"ao.db-wal", "ao.db-shm"} <= set(before)
        else:
            assert set(before) == {"ao.db"}
        ao("ao", "import", "-n", "--from", db, cwd=repo)
        assert _snapshot(daemon_dir) == before
        res = ao("ao", "import", "--json", "--from", db, cwd=repo)
        assert _snapshot(daemon_dir) == before
    finally:
        if live is not None:
            live.close()
    want = {"ao-1", "ao-2"} if running else {"ao-1"}
    assert {r["id"] for r in json.loads(res.stdout)["results"]} == want


def _as_nobody(fn):
    """Run fn() in a forked child as uid/gid nobody; returns ('ok', value) or
    ('fatal', message). The code is already loaded, so nothing is read from a
    directory nobody cannot reach."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            try:
                res = ("ok", fn())
            except Fatal as exc:
                res = ("fatal", str(exc))
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                res = ("error", repr(exc))
            os.write(w, pickle.dumps(res))
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return pickle.loads(data)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (nobody)")
def test_another_users_database_and_an_unsearchable_directory(tmp_path):
    top = tempfile.mkdtemp(prefix="ao-daemon-")  # under /tmp: reachable by nobody
    try:
        os.chmod(top, 0o755)
        db = daemon_db(os.path.join(top, "ao.db"), 103, projects=[("ao", "/srv/x")],
                       sessions=[daemon_session("ao-1", "ao", "/srv/x/wt")])
        os.chmod(db, 0o644)
        before = _snapshot(top)
        status, value = _as_nobody(lambda: [s.id for s in ddb.read(db).sessions])
        assert (status, value) == ("ok", ["ao-1"])
        assert _snapshot(top) == before
        os.chmod(top, 0o700)
        status, value = _as_nobody(lambda: ddb.read(db))
        assert status == "fatal"
        assert value == (f"cannot reach ao daemon database '{db}': permission denied (a "
                         "directory on the way cannot be searched)")
        os.chmod(top, 0o755)
        os.chmod(db, 0o600)
        status, value = _as_nobody(lambda: ddb.read(db))
        assert value == f"cannot read ao daemon database '{db}': permission denied"
    finally:
        shutil.rmtree(top)
