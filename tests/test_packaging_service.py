"""contrib/: the systemd user unit and the launchd agent run what they promise."""

import configparser
import json
import os
import plistlib
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ao

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "contrib" / "git-ao.service"
PLIST = ROOT / "contrib" / "dev.git-ao.plist"


def _unit():
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str
    cp.read(UNIT)
    return cp


def _states(repo):
    return {s["id"]: s["state"]
            for s in json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]}


def test_systemd_unit_restores_on_start_and_preserves_all_on_stop(repo, worktrees):
    unit = _unit()
    svc = unit["Service"]
    assert svc["Type"] == "oneshot" and svc["RemainAfterExit"] == "yes"
    assert unit["Install"]["WantedBy"] == "default.target"
    stop = shlex.split(svc["ExecStop"])
    assert stop[:3] == ["git", "ao-preserve", "--all"]
    # systemd's stop timeout leaves room beyond git-ao's own --timeout
    assert int(svc["TimeoutStopSec"]) > float(stop[stop.index("--timeout") + 1])
    wt = worktrees(repo, "svc")
    (wt / "f.txt").write_text("work\n")
    subprocess.run(stop, cwd="/", check=True)
    assert _states(repo) == {"svc": "pending"} and not wt.exists()
    subprocess.run(shlex.split(svc["ExecStart"]), cwd="/", check=True)
    assert _states(repo) == {"svc": "live"} and (wt / "f.txt").read_text() == "work\n"


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="no systemd-analyze")
def test_systemd_analyze_verify(tmp_path):
    (tmp_path / "man" / "man1").mkdir(parents=True)
    for page in (ROOT / "man").glob("*.1"):
        shutil.copy(page, tmp_path / "man" / "man1")
    shutil.copy(UNIT, tmp_path)
    res = subprocess.run(["systemd-analyze", "verify", "./git-ao.service"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, MANPATH=str(tmp_path / "man")))
    assert res.returncode == 0, res.stderr
    assert "git-ao.service" not in res.stderr


def test_launchd_agent_restores_at_load_and_preserves_on_sigterm(repo, worktrees):
    with open(PLIST, "rb") as f:
        plist = plistlib.load(f)
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] is False
    assert plist["ExitTimeOut"] >= 90
    wt = worktrees(repo, "mac")
    (wt / "g.txt").write_text("work\n")
    ao("ao-preserve", "--all", cwd=repo)
    proc = subprocess.Popen(plist["ProgramArguments"], cwd="/")
    try:
        for _ in range(600):  # wait for the restore to finish (a state, not a time)
            if _states(repo) == {"mac": "live"}:
                break
            time.sleep(0.1)
        assert (wt / "g.txt").read_text() == "work\n"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _states(repo) == {"mac": "pending"} and not wt.exists()
