"""contrib/demo.sh, run as the README runs it: it checks what is true now and
shows the demo's own sessions wherever it is started."""

import os
import re
import subprocess

from tests.support import ROOT

SESSIONS = ("orchestrator", "worker-json", "worker-async", "worker-idle")


def _run_demo(cwd, tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    return subprocess.run(["bash", str(ROOT / "contrib" / "demo.sh")], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, timeout=300)


def _section(out, title):
    return out.split(f"== {title}", 1)[1].split("\n== ", 1)[0]


def test_the_demo_started_in_another_repository_lists_its_sessions_and_passes_its_checks(
        repo, tmp_path):
    # The README runs the demo from a clone of git-ao: a repository of its own.
    res = _run_demo(repo, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    for title, state in (("shutdown", "pending"), ("boot", "live")):
        listed = re.findall(r"^(\S+)\t\S+\t\S+\t(\S+)\t", _section(res.stdout, title), re.MULTILINE)
        assert sorted(listed) == sorted((s, state) for s in SESSIONS), res.stdout
    assert "not listed" not in res.stdout + res.stderr
    checks = _section(res.stdout, "check").strip().splitlines()
    assert "FAIL" not in res.stdout and "DIFF" not in res.stdout
    assert [c for c in checks if c.startswith("ok")] == [
        *(f"ok   {s}" for s in SESSIONS),
        "ok   ignored files came back from the trash",
        "ok   ignored build output came back too",
        "ok   every session is live again",
        "ok   no preserve ref left behind",
    ], res.stdout


def test_a_check_the_demo_makes_fails_its_exit_status(repo, tmp_path):
    """A check that does not hold says FAIL and the demo exits 1: no check line
    may vanish in silence."""
    script = (ROOT / "contrib" / "demo.sh").read_text()
    broken = tmp_path / "demo.sh"
    # The restore's ignored file replaced by another: the check must notice.
    broken.write_text(script.replace('say "check: every session',
                                     'echo other > "$demo/sessions/orchestrator/server.log"\n'
                                     'say "check: every session', 1))
    env = dict(os.environ, TMPDIR=str(tmp_path))
    res = subprocess.run(["bash", str(broken)], cwd=repo, env=env, capture_output=True,
                         text=True, check=False, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL ignored files came back from the trash" in res.stdout
