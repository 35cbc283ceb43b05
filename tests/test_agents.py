"""git_ao.agents against real processes, and the live-writer helpers of
tests/writers.py. Waits are bounded loops on states, never times."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from git_ao.agents import processes
from git_ao.store import settings
from tests import writers

# A child that ignores SIGTERM (and dies on anything else), once it says so.
DEAF = [sys.executable, "-c", ("import signal, time; signal.signal(signal.SIGTERM, "
                               "signal.SIG_IGN); signal.signal(signal.SIGINT, signal.SIG_DFL); "
                               "print('ready', flush=True); time.sleep(300)")]


@pytest.fixture
def procs():
    """Start processes for a test; every one still running is killed at the end."""
    started: list[subprocess.Popen] = []

    def spawn(argv, *, cwd, ready=False, **kw):
        p = subprocess.Popen([str(a) for a in argv], cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if ready else subprocess.DEVNULL,
                             start_new_session=True, text=True, **kw)
        started.append(p)
        if ready:  # the child prints one line once it holds what the test needs
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        return p

    yield spawn
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()
        if p.stdout:
            p.stdout.close()


def _until(predicate, what, polls=600):
    for _ in range(polls):
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def _running(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def wt(tmp_path):
    d = tmp_path / "wt"
    (d / "sub").mkdir(parents=True)
    (d / "bin").mkdir()
    return d


def test_find_reports_exactly_the_tied_processes_with_their_ties(tmp_path, wt, procs):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy("/bin/sleep", wt / "bin" / "sleep")
    in_cwd = procs(["sleep", "300"], cwd=wt / "sub")
    hold = "import signal, sys; f = open(sys.argv[1], 'a'); print('ready', flush=True); "
    hold += "signal.pause()"
    holder = procs([sys.executable, "-c", hold, wt / "held.txt"],
                   cwd=elsewhere, ready=True)
    exe = procs([wt / "bin" / "sleep", "300"], cwd=elsewhere)
    unrelated = procs(["sleep", "300"], cwd=elsewhere)
    _until(lambda: psutil.Process(exe.pid).exe() == str(wt / "bin" / "sleep"),
           "the copied sleep is running")

    found = {a.pid: a for a in processes.find(str(wt))}
    assert set(found) == {in_cwd.pid, holder.pid, exe.pid}
    assert unrelated.pid not in found
    assert found[in_cwd.pid].ties == ("cwd sub",)
    assert found[holder.pid].ties == ("open file held.txt",)
    assert found[exe.pid].ties == ("executable bin/sleep",)
    assert found[in_cwd.pid].name == "sleep" and found[in_cwd.pid].cmdline == ("sleep", "300")
    # the same scan through a symlink to the worktree, and for several paths at once
    link = tmp_path / "link"
    link.symlink_to(wt)
    many = processes.find_many([str(link), str(elsewhere), str(tmp_path / "none")])
    assert {a.pid for a in many[str(link)]} == {in_cwd.pid, holder.pid, exe.pid}
    assert {a.pid for a in many[str(elsewhere)]} == {holder.pid, exe.pid, unrelated.pid}
    assert many[str(tmp_path / "none")] == []
    # a sibling whose name extends the worktree's is not inside it
    (tmp_path / "wt2").mkdir()
    assert processes.find(str(tmp_path / "wt2")) == []


def test_own_ancestors_are_never_agents_but_are_reported_apart(wt):
    # The shell sitting in the worktree is the scanning process's parent (the
    # `; true` keeps sh from exec'ing python in its place).
    script = ("import json, os, sys; from git_ao.agents import processes; "
              "print(json.dumps([[a.pid for a in processes.find(sys.argv[1])], "
              "[a.pid for a in processes.ancestors_inside(sys.argv[1])], os.getppid()]))")
    out = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" "$1"; true', script, wt],
                         cwd=wt, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent)))
    found, ancestors, shell = json.loads(out.stdout)
    assert found == [] and ancestors == [shell]


def test_this_process_and_its_ancestors_are_skipped_everywhere(tmp_path, procs):
    child = procs(["sleep", "300"], cwd=tmp_path)
    mine = {os.getpid()} | {p.pid for p in psutil.Process().parents()}
    scan = processes.scan(["/"])  # every process of the machine is inside "/"
    found = {a.pid for a in scan.agents["/"]}
    assert not mine & found and child.pid in found  # a child is an agent like any other
    assert {a.pid for a in scan.ancestors_inside["/"]} <= mine


def test_stop_terminates_the_obedient_and_reports_the_deaf_without_killing(wt, procs):
    obedient = procs(["sleep", "300"], cwd=wt)
    deaf = procs(DEAF, cwd=wt, ready=True)
    found = processes.find(str(wt))
    assert {a.pid for a in found} == {obedient.pid, deaf.pid}
    report = processes.stop(found, "stop", timeout=1)
    assert [a.pid for a in report.stopped] == [obedient.pid]
    assert [a.pid for a in report.still_running] == [deaf.pid]
    assert report.command is None and not report.refused
    assert not _running(obedient.pid)  # stop reaped our child: Popen cannot see how it ended
    assert deaf.poll() is None and _running(deaf.pid)  # the fixture kills it


@pytest.mark.parametrize("policy", ["refuse", "report"])
def test_refuse_and_report_touch_nothing(wt, procs, policy):
    p = procs(["sleep", "300"], cwd=wt)
    report = processes.stop(processes.find(str(wt)), policy, timeout=1)
    assert [a.pid for a in report.still_running] == [p.pid] and report.stopped == []
    assert report.refused == (policy == "refuse")
    assert p.poll() is None


def test_a_stop_command_runs_with_the_session_facts_first(tmp_path, wt, procs):
    out = tmp_path / "facts.json"
    agent = procs(DEAF, cwd=wt, ready=True)  # so only the command's SIGINT can stop it
    # The harness's stop command: record its facts, then stop the agent itself.
    code = ("import json, os, signal, sys; "
            "json.dump({k: v for k, v in os.environ.items() if k.startswith('AO_')} | "
            "{'argv': sys.argv[2:], 'cwd': os.getcwd()}, open(sys.argv[1], 'w')); "
            f"os.kill({agent.pid}, signal.SIGINT)")
    cmd = [sys.executable, "-c", code, str(out), "{session_id}"]
    env = {"AO_SESSION_ID": "s1", "AO_WORKTREE": str(wt), "AO_HARNESS": "aider"}
    report = processes.stop(processes.find(str(wt)), "stop", timeout=30, stop_command=cmd, env=env)
    assert report.command is not None and report.command.returncode == 0
    assert [a.pid for a in report.stopped] == [agent.pid] and report.still_running == []
    facts = json.loads(out.read_text())
    assert facts.pop("AO_DATA_DIR") == os.environ["AO_DATA_DIR"]  # os.environ is passed on
    assert facts == {**env, "argv": ["s1"], "cwd": str(wt)}


def test_a_stop_command_that_cannot_start_is_reported_and_sigterm_follows(wt, procs):
    agent = procs(["sleep", "300"], cwd=wt)
    report = processes.stop(processes.find(str(wt)), "stop", timeout=5,
                         stop_command=[str(wt / "no-such-command")], env={})
    assert report.command is not None and report.command.status == "failed-to-start"
    assert [a.pid for a in report.stopped] == [agent.pid]


def test_stop_never_signals_an_ancestor_or_a_recycled_pid(wt, procs):
    me = psutil.Process()
    parent = me.parents()[0]
    other = procs(["sleep", "300"], cwd=wt)
    created = psutil.Process(other.pid).create_time()
    fake = [processes.Agent(parent.pid, parent.name(), (), ("cwd",), parent.create_time()),
            processes.Agent(me.pid, me.name(), (), ("cwd",), me.create_time()),
            # the pid of a process that exited long ago, now someone else's
            processes.Agent(other.pid, "old", (), ("cwd",), created - 1000)]
    report = processes.stop(fake, "stop", timeout=0)
    assert [a.pid for a in report.not_signalled] == [parent.pid, me.pid]
    assert [a.name for a in report.stopped] == ["old"]  # that process is not running
    assert parent.is_running() and other.poll() is None  # and we are still here


def test_policy_defaults_and_overrides(tmp_path):
    cfg = settings.Settings(tmp_path)
    assert processes.policy_for(cfg, "claude", shutdown=True) == "stop"
    assert processes.policy_for(cfg, "claude", shutdown=False) == "refuse"
    assert processes.policy_for(cfg, None, shutdown=False) == "refuse"
    cfg.set("preserve.agents", "report")
    cfg.set("preserve.harness.claude.code.agents", "refuse")
    cfg.set("stop.command", "ao-stop --session {session_id}")
    cfg.set("stop.harness.aider", "aider-stop")
    cfg = settings.Settings(tmp_path)  # read back from the file
    assert cfg.warnings == []
    assert processes.policy_for(cfg, "claude.code", shutdown=True) == "refuse"
    assert processes.policy_for(cfg, "aider", shutdown=True) == "report"
    assert processes.policy_for(cfg, "", shutdown=False) == "report"
    assert processes.stop_command_for(cfg, "aider") == ["aider-stop"]
    assert processes.stop_command_for(cfg, "claude") == ["ao-stop", "--session", "{session_id}"]
    assert cfg.get("preserve.agentTimeout", settings.DEFAULT_AGENT_TIMEOUT) == 10
    with pytest.raises(Exception, match="expected one of stop, refuse, report"):
        cfg.set("preserve.agents", "kill")
    assert settings.key_spec("preserve.agents.claude") is None


# ------------------------------------------------------------ writers


@pytest.mark.parametrize("kind", writers.KINDS)
def test_each_writer_logs_what_it_wrote_and_stops_cleanly_on_sigterm(tmp_path, kind):
    wt = tmp_path / "wt"
    wt.mkdir()
    log = tmp_path / "logs" / f"{kind}.jsonl"
    log.parent.mkdir()
    w = writers.start(kind, wt, log)
    try:
        w.wait_writes(5)
        assert w.stop() == 0
    finally:
        w.kill()
    entries = w.entries()
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert writers.check_writes(log, wt, set()) == []
    assert not (wt / ".notes.txt.swp").exists()


def test_writers_are_agents_and_stop_gets_their_last_writes_in(tmp_path, wt):
    logs = tmp_path / "logs"
    logs.mkdir()
    ws = [writers.start(k, wt, logs / f"{k}.jsonl") for k in writers.KINDS]
    try:
        for w in ws:
            w.wait_writes(3)
        found = {a.pid: a.ties for a in processes.find(str(wt))}
        assert "cwd" in found[ws[0].pid]
        assert "open file transcript.log" in found[ws[2].pid]
        # the abspath and editor writers are tied only between two opens, if at all
        assert set(found) <= {w.pid for w in ws}
        report = processes.stop([processes.Agent(w.pid, w.kind, (), ()) for w in ws], "stop",
                             timeout=30)
        assert report.still_running == [] and len(report.stopped) == 4
    finally:
        for w in ws:
            w.kill()
    for w in ws:
        assert writers.check_writes(w.log, wt, set()) == []


def test_check_writes_names_lost_writes_unless_reported(tmp_path):
    wt = tmp_path / "wt"
    wt.mkdir()
    log = tmp_path / "w.jsonl"
    w = writers.start("cwd", wt, log)
    a = writers.start("append", wt, tmp_path / "a.jsonl")
    try:
        w.wait_writes(4)
        a.wait_writes(2)
        assert w.stop() == 0 and a.stop() == 0
    finally:
        w.kill()
        a.kill()
    last = writers.read_log(log)[-1]["path"]
    (wt / last).write_text("stale\n")
    problems = writers.check_writes(log, wt, set())
    assert len(problems) == 1 and problems[0].startswith(f"{last}: holds 'stale\\n'")
    assert writers.check_writes(log, wt, {last}) == []
    (wt / "transcript.log").write_text("transcript line 1\n")
    problems = writers.check_writes(tmp_path / "a.jsonl", wt, set())
    assert len(problems) == 1 and "appended lines missing" in problems[0]
    shutil.rmtree(wt)
    assert len(writers.check_writes(log, wt, set())) == 3  # three files, all missing


def test_an_ancestor_that_cannot_be_read_keeps_the_ones_found_protected(monkeypatch):
    """The walk up the parent pids stops at an ancestor it cannot read; the ones
    below it are still this process's ancestors (never agents to stop)."""
    parent = os.getppid()
    real = psutil.Process

    class Unreadable(real):  # type: ignore[misc, valid-type]
        def ppid(self):
            if self.pid == parent:
                raise psutil.NoSuchProcess(self.pid)
            return super().ppid()

    monkeypatch.setattr(psutil, "Process", Unreadable)
    me, parents = processes._self_and_ancestors()
    assert me == os.getpid() and parents == {parent}


def test_the_other_commands_of_its_own_pipeline_are_never_agents(repo, worktrees, tmp_path):
    """`git ao-preserve --all | tee | grep` run from a shell sitting in a worktree: tee
    and grep (same parent and process group as the `git` wrapper that runs git-ao)
    keep running, are named apart, and the output is whole; a process of the same
    parent in a process group of its own is an agent like any other, and stopped."""
    from tests.support import ao, dirty
    wt = worktrees(repo, "pipe")
    dirty(wt)
    ao("ao", "config", "set", "preserve.agents", "stop", cwd=repo)
    out, agent = tmp_path / "out", tmp_path / "agent"
    script = ('cd "$1" && { setsid sleep 300 & echo $! > "$3"; } && '
              'git ao-preserve --all 2>&1 | tee "$2" | grep -v "^preserve.ok"; '
              'echo "${PIPESTATUS[*]}"')
    res = subprocess.run(["bash", "-c", script, "bash", wt, out, agent],
                         capture_output=True, text=True, timeout=120, start_new_session=True,
                         check=False)
    pid = int(agent.read_text())
    try:
        status = res.stdout.split()[-3:]
        assert status[:2] == ["0", "0"], (res.stdout, res.stderr, out.read_text())
        text = out.read_text()
        assert "preserve\tok\tpipe" in text and not wt.exists(), text
        assert "other commands of this pipeline" in text and "(tee)" in text, text
        assert "stopped 1 process(es)" in text and f"pid {pid} (sleep)" in text, text
        assert not _running(pid)
    finally:
        if _running(pid):
            os.kill(pid, 9)
