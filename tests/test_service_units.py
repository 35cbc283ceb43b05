"""contrib/: the systemd user unit and the launchd agent run what they promise."""

import configparser
import os
import plistlib
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from git_ao.store.settings import DEFAULT_AGENT_TIMEOUT
from tests.support import ao, commit_on, states

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "contrib" / "git-ao.service"
PLIST = ROOT / "contrib" / "dev.git-ao.plist"


def _unit():
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str
    cp.read(UNIT)
    return cp


def _exec(value):
    """(failure ignored, argv) of an Exec*= line: systemd.service(5)'s prefixes
    "-" (a failure is recorded but ignored) and "@+!:" (which change how it
    runs, not whether it fails)."""
    ignore = False
    while value and value[0] in "-@+!:":
        ignore = ignore or value[0] == "-"
        value = value[1:]
    return ignore, shlex.split(value)


def _active_after_start(svc, rc):
    """Whether systemd leaves a oneshot unit active (so it runs ExecStop at
    shutdown) after ExecStart exited with `rc`."""
    ignore, _ = _exec(svc["ExecStart"])
    ok = {0} | {int(x) for x in svc.get("SuccessExitStatus", "").split() if x.isdigit()}
    return ignore or rc in ok


def _seconds(text):
    """A systemd time span ("120", "2min", "1min 30s", "90s", "500ms") in seconds."""
    units = {"us": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600,
             "": 1}
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text.strip())
    assert parts, text
    return sum(float(n) * units[u] for n, u in parts)



def test_systemd_unit_restores_on_start_and_preserves_all_on_stop(repo, worktrees):
    unit = _unit()
    svc = unit["Service"]
    assert svc["Type"] == "oneshot" and svc["RemainAfterExit"] == "yes"
    assert unit["Install"]["WantedBy"] == "default.target"
    _, stop = _exec(svc["ExecStop"])
    assert stop[:3] == ["git", "ao-preserve", "--all"]
    wt = worktrees(repo, "svc")
    (wt / "f.txt").write_text("work\n")
    subprocess.run(stop, cwd="/", check=True)
    assert states(repo) == {"svc": "pending"} and not wt.exists()
    subprocess.run(_exec(svc["ExecStart"])[1], cwd="/", check=True)
    assert states(repo) == {"svc": "live"} and (wt / "f.txt").read_text() == "work\n"


def test_a_restore_needing_attention_still_lets_the_shutdown_preserve_run(repo, worktrees):
    """systemd runs ExecStop only for an active unit: a boot restore exiting 3
    (or 1, or 128) must leave the unit active, and the stop must then preserve."""
    svc = _unit()["Service"]
    conf, fine = worktrees(repo, "conf"), worktrees(repo, "fine")
    (conf / "README.md").write_text("mine\n")
    (fine / "f.txt").write_text("work\n")
    ao("ao-preserve", "--all", cwd=repo)
    commit_on(repo, "conf", {"README.md": "theirs\n"}, "theirs")
    # the boot: ExecStart as systemd runs it, from /
    rc = subprocess.run(_exec(svc["ExecStart"])[1], cwd="/", check=False).returncode
    assert rc == 3 and states(repo) == {"conf": "attention", "fine": "live"}
    for status in (rc, 1, 128):
        assert _active_after_start(svc, status), f"a restore exiting {status} skips ExecStop"
    (fine / "f.txt").write_text("more work\n")
    # the shutdown: ExecStop preserves what it can; the session with conflict
    # markers stays as it is (its ref is kept), the other one is saved
    subprocess.run(_exec(svc["ExecStop"])[1], cwd="/", check=False)
    assert states(repo)["fine"] == "pending" and not fine.exists()
    assert "<<<<<<<" in (conf / "README.md").read_text()
    ao("ao-restore", "fine", cwd=repo)
    assert (fine / "f.txt").read_text() == "more work\n"


def _user_manager_default_stop():
    """DefaultTimeoutStopUSec of the running user manager in seconds, or None."""
    if not shutil.which("systemctl"):
        return None
    res = subprocess.run(["systemctl", "--user", "show", "-p", "DefaultTimeoutStopUSec",
                          "--value"], capture_output=True, text=True, timeout=30, check=False)
    return _seconds(res.stdout) if res.returncode == 0 and res.stdout.strip() else None


def _user_at_service_stop():
    """TimeoutStopSec of user@.service (how long the system waits for a whole user
    manager to stop at shutdown) from its unit file, or None."""
    for d in ("/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"):
        f = Path(d) / "user@.service"
        if f.is_file():
            m = re.search(r"^TimeoutStopSec=(.+)$", f.read_text(), re.MULTILINE)
            return _seconds(m.group(1)) if m else None
    return None


# What an agent unit is told to use in the unit's comments and docs/agents.md.
AGENT_UNIT_STOP = 15


def test_the_stop_timeout_covers_the_preserve_and_the_agent_wait():
    svc = _unit()["Service"]
    _, stop = _exec(svc["ExecStop"])
    preserve = float(stop[stop.index("--timeout") + 1])
    ours = _seconds(svc["TimeoutStopSec"])
    # --timeout, then one wait for agents, then the sessions in flight: at least
    # 20 s of margin for those before systemd sends SIGKILL
    assert ours >= preserve + DEFAULT_AGENT_TIMEOUT + 20
    # Without TimeoutStopSec a unit gets the manager's DefaultTimeoutStopSec
    # (90 s upstream when no user manager runs to ask, lower on some
    # distributions): ours is set, and never shorter than that default.
    assert ours >= (_user_manager_default_stop() or 90)
    # At shutdown the system gives the whole user manager user@.service's
    # TimeoutStopSec (120 s in systemd's unit): agent units ordered after ours
    # stop first, so theirs and our sum must fit in it.
    limit = _user_at_service_stop()
    if limit is not None:
        assert ours <= limit
        assert AGENT_UNIT_STOP + preserve + DEFAULT_AGENT_TIMEOUT < limit


def test_the_unit_documents_the_agent_ordering():
    text = UNIT.read_text()
    assert "After=git-ao.service" in text and "--no-block" in text
    assert "systemd-run --user" in text and "--unit=ao-agent-{session_id}" in text
    assert f"TimeoutStopSec={AGENT_UNIT_STOP}s" in text
    doc = (ROOT / "docs" / "agents.md").read_text()
    assert "After=git-ao.service" in doc and "--no-block" in doc


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="no systemd-analyze")
def test_systemd_analyze_verify(tmp_path):
    (tmp_path / "man" / "man1").mkdir(parents=True)
    for page in (ROOT / "man").glob("*.1"):
        shutil.copy(page, tmp_path / "man" / "man1")
    shutil.copy(UNIT, tmp_path)
    res = subprocess.run(["systemd-analyze", "verify", "./git-ao.service"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=False,
                         env=dict(os.environ, MANPATH=str(tmp_path / "man")))
    assert res.returncode == 0, res.stderr
    assert "git-ao.service" not in res.stderr


def _run_launchd_agent(plist, until):
    """Run the agent's program as launchd would, wait for `until()` (a state),
    send SIGTERM as a logout does, and return its exit status."""
    proc = subprocess.Popen(plist["ProgramArguments"], cwd="/")
    try:
        for _ in range(600):
            if until():
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the restore never finished")
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_launchd_agent_preserves_on_sigterm_after_a_restore_needing_attention(
        repo, worktrees):
    with open(PLIST, "rb") as f:
        plist = plistlib.load(f)
    conf, fine = worktrees(repo, "conf"), worktrees(repo, "fine")
    (conf / "README.md").write_text("mine\n")
    (fine / "f.txt").write_text("work\n")
    ao("ao-preserve", "--all", cwd=repo)
    commit_on(repo, "conf", {"README.md": "theirs\n"}, "theirs")  # the restore exits 3
    assert _run_launchd_agent(plist, lambda: (fine / "f.txt").exists()
                              and states(repo) == {"conf": "attention", "fine": "live"}) == 0
    assert states(repo)["fine"] == "pending" and not fine.exists()


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
            if states(repo) == {"mac": "live"}:
                break
            time.sleep(0.1)
        assert (wt / "g.txt").read_text() == "work\n"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert states(repo) == {"mac": "pending"} and not wt.exists()


def _deroff(text):
    return re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\(aq", "'")


def test_every_copy_of_the_unit_in_the_docs_says_what_the_shipped_unit_says():
    """A documented unit is copied as it is written: a copy without the `-` of
    ExecStart= would make a failed restore skip the next shutdown's preserve."""
    shipped = {}
    for line in UNIT.read_text().splitlines():
        if re.match(r"^[A-Z]\w*=", line):
            shipped.setdefault(line.split("=", 1)[0], set()).add(line)
    copies = 0
    for page in (ROOT / "man").glob("*.1"):
        for line in _deroff(page.read_text()).splitlines():
            m = re.match(r"^(Exec\w+|Type|RemainAfterExit|Timeout\w+|Kill\w+)=", line)
            if m:
                copies += 1
                assert line in shipped.get(m.group(1), ()), f"{page.name}: {line}"
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for m in re.finditer(r"`((?:Exec\w+)=[^`]+)`", doc.read_text()):
            if not m.group(1).endswith("="):
                copies += 1
                assert m.group(1) in shipped[m.group(1).split("=", 1)[0]], f"{doc.name}: {m[1]}"
    assert copies >= 7


def test_the_shipped_units_bound_the_boot_and_the_shutdown():
    """Both units give the restore and the preserve a --timeout, so a filter or merge
    driver that hangs holds neither the boot nor the shutdown, and the launchd
    agent's ExitTimeOut covers the preserve's bound."""
    svc = _unit()["Service"]
    for key in ("ExecStart", "ExecStop"):
        _, argv = _exec(svc[key])
        assert "--timeout" in argv, (key, argv)
        assert float(argv[argv.index("--timeout") + 1]) > 0
    with open(PLIST, "rb") as f:
        plist = plistlib.load(f)
    script = plist["ProgramArguments"][-1]
    restore = script[script.index("git ao-restore"):].split(";")[0].split()
    preserve = script[script.index("git ao-preserve"):].split(";")[0].split()
    for argv in (restore, preserve):
        assert "--timeout" in argv, argv
    assert plist["ExitTimeOut"] >= float(preserve[preserve.index("--timeout") + 1]) \
        + DEFAULT_AGENT_TIMEOUT
