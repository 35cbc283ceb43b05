"""Agents still writing during the shutdown preserve: every write they logged is
back after the restore, or named in a report.

Each writer (tests/writers.py) logs every write with its content outside the
worktree. A run: start the writer, let it write, run the shutdown preserve
(`git ao-preserve --all`) while it keeps going, stop it, run the boot restore,
and check every logged write against the restored worktree. Each combination
runs ROUNDS times: the race is between the writer's next write and the
capture, the move and the checks after it, and a different moment is hit each
round. No step waits on a clock: the writer is only asked to have written.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests import support, writers
from tests.support import add_submodule, ao, git

ROUNDS = 2


def _reported(*results: subprocess.CompletedProcess) -> set[str]:
    """The worktree-relative paths a preserve or restore named as possibly not
    back (late writes it could not settle, set-aside strays)."""
    out: set[str] = set()
    for res in results:
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            continue
        for o in doc.get("results", []):
            for key in ("still_changing", "set_aside_files", "not_placed"):
                out.update(o.get(key) or [])
    return out


@pytest.fixture
def tmpfs(tmp_path):
    """A tmpfs mounted inside the test's directory (root only), for a worktree on
    another file system than the data dir."""
    with support.tmpfs(tmp_path / "tmpfs", "64m") as mnt:
        yield mnt


def _worktree(repo: Path, base: Path, name: str) -> Path:
    wt = base / name
    git("worktree", "add", "-q", "-b", name, wt, cwd=repo)
    ao("ao", "add", wt, "--id", name, "--harness", "test-agent", cwd=repo)
    return wt


@pytest.mark.parametrize("where", ["same-fs", "tmpfs"])
@pytest.mark.parametrize("kind", writers.KINDS)
def test_every_write_is_back_or_reported(repo, tmp_path, request, kind, where):
    """The agents keep writing through the whole shutdown (policy "report")."""
    _rounds(repo, tmp_path, request, kind, where, "report")


def test_agents_stopped_first_lose_nothing(repo, tmp_path, request):
    """The shutdown default: agents tied to the worktree get SIGTERM first."""
    _rounds(repo, tmp_path, request, "cwd", "same-fs", "stop")


def _rounds(repo, tmp_path, request, kind, where, policy):
    base = request.getfixturevalue("tmpfs") if where == "tmpfs" else tmp_path / "wt"
    base.mkdir(exist_ok=True)
    ao("ao", "config", "set", "preserve.agents", policy, cwd=repo)
    ao("ao", "config", "set", "preserve.agentTimeout", "5", cwd=repo)
    for n in range(ROUNDS):
        name = f"{kind}-{n}"
        wt = _worktree(repo, base, name)
        log = tmp_path / f"{name}.log"
        w = writers.start(kind, wt, log, elsewhere=tmp_path)
        try:
            w.wait_writes(5)
            pres = ao("ao-preserve", "--all", "--json", cwd=repo, rc=None, process=True)
            assert pres.returncode in (0, 3), pres.stdout + pres.stderr
            w.stop()
        finally:
            w.kill()
        rest = ao("ao-restore", "--json", cwd=repo, rc=None, process=True)
        if rest.returncode == 1 and "--set-aside-stray" in rest.stdout:
            # the writer made the directory again by absolute path: the user's call
            rest = ao("ao-restore", "--set-aside-stray", "--json", cwd=repo, rc=None,
                      process=True)
        assert rest.returncode in (0, 3), rest.stdout + rest.stderr
        assert wt.is_dir(), rest.stdout
        problems = writers.check_writes(log, wt, _reported(pres, rest))
        assert problems == [], (n, problems, pres.stdout, rest.stdout)
        assert len(writers.read_log(log)) >= 5
        # a second restore has nothing left to do
        again = ao("ao-restore", "--json", cwd=repo, rc=None)
        assert again.returncode == 0, again.stdout + again.stderr
        ao("ao", "kill", name, cwd=repo, rc=None)


@contextlib.contextmanager
def _paused_at(point: str, argv: list[str], cwd: Path):
    """Run `git <argv>` until it stops itself (SIGSTOP) at the crash point `point`,
    yield while it is stopped, then continue it. The finished process is in
    result[0] (out, err, returncode)."""
    env = dict(os.environ, GIT_AO_CRASH_AT=point, GIT_AO_CRASH_SIGNAL="STOP")
    proc = subprocess.Popen(["git", *argv], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    result: list = []
    try:
        stopped = None
        while stopped is None:  # wait for it to have stopped itself
            family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(True)]
            stopped = next((p for p in family if _status(p) == psutil.STATUS_STOPPED), None)
            time.sleep(0.01)
        yield result
        stopped.resume()
        out, err = proc.communicate(timeout=120)
        result.append((out, err, proc.returncode))
    finally:
        proc.kill()


def _status(p: psutil.Process) -> str | None:
    """The process's status, None once it is gone (a git child that just ended)."""
    try:
        return p.status()
    except psutil.NoSuchProcess:
        return None


@pytest.mark.parametrize("change", ["to-directory", "truncated", "removed"])
def test_a_file_changed_between_status_and_the_index_update_is_captured_again(
        repo, worktrees, change):
    """An agent changes a file after `git status` listed it and before git reads it
    for the index: the capture is taken again from a fresh status, never failed or
    saved half."""
    wt = worktrees(repo, "racing")
    (wt / "a.txt").write_text("first\n" * 4096)
    with _paused_at("capture:after-status", ["ao-preserve", "racing"], repo) as result:
        if change == "to-directory":
            (wt / "a.txt").unlink()
            (wt / "a.txt").mkdir()
            (wt / "a.txt" / "inner.txt").write_text("inner\n")
        elif change == "truncated":
            (wt / "a.txt").write_text("second\n")
        else:
            (wt / "a.txt").unlink()
    out, err, rc = result[0]
    assert rc == 0, out + err
    ao("ao-restore", "racing", cwd=repo)
    if change == "to-directory":
        assert (wt / "a.txt" / "inner.txt").read_text() == "inner\n"
    elif change == "truncated":
        assert (wt / "a.txt").read_text() == "second\n"
    else:
        assert not (wt / "a.txt").exists()


@pytest.mark.parametrize("where", ["top", "deep"])
def test_an_ignored_directory_replaced_by_a_file_after_the_capture_is_saved(
        repo, worktrees, where):
    """`cache/` is ignored as a directory: a file named `cache` that takes its place
    after the capture is not ignored, so it is captured again, not taken away
    with what was ignored."""
    wt = worktrees(repo, f"ign-{where}")
    sub = wt / "src" if where == "deep" else wt
    sub.mkdir(exist_ok=True)
    (wt / ".gitignore").write_text("cache/\n")
    (sub / "cache").mkdir()
    (sub / "cache" / "blob.bin").write_text("regenerated\n")
    (wt / "a.txt").write_text("work\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", f"ign-{where}", "--json"],
                    repo) as result:
        shutil.rmtree(sub / "cache")
        (sub / "cache").write_text("notes an agent wrote\n")
    out, err, rc = result[0]
    rel = "src/cache" if where == "deep" else "cache"
    assert rc == 0 and json.loads(out)["results"][0].get("captured_late") == [rel], out + err
    ao("ao-restore", f"ign-{where}", cwd=repo)
    assert (sub / "cache").read_text() == "notes an agent wrote\n"


def test_a_worktree_made_inside_after_the_capture_keeps_its_registration(repo, worktrees):
    """A linked worktree made inside the session's directory between the capture and
    the move goes to the trash with it: its registration (its index, with staged
    work in no commit, and its HEAD) is not pruned, the outcome names it, and the
    restore brings it back whole."""
    wt = worktrees(repo, "late-inner")
    (wt / "a.txt").write_text("work\n")
    inner = wt / "inner"
    with _paused_at("preserve:after-capture", ["ao-preserve", "late-inner", "--json"],
                    repo) as result:
        git("worktree", "add", "-q", "--no-checkout", "-b", "inner-b", str(inner), cwd=repo)
        (inner / "s.txt").write_text("staged\n")
        git("add", "s.txt", cwd=inner)
        (inner / "s.txt").write_text("in the worktree\n")
    out, err, rc = result[0]
    outcome = json.loads(out)["results"][0]
    assert rc == 3 and outcome["status"] == "attention", out + err
    assert "inner" in outcome["message"], out
    ao("ao-prune", cwd=repo)  # (git's prune would drop the registration: it keeps it)
    ao("ao-restore", "late-inner", cwd=repo)
    assert (inner / "s.txt").read_text() == "in the worktree\n"
    assert git("show", ":s.txt", cwd=inner) == "staged\n"


def test_a_repository_made_inside_after_the_capture_is_named(repo, worktrees, tmp_path):
    """A repository moved into the session's directory between the capture and the
    move is no file of the save: the outcome names it (exit 3), and the trash copy
    that holds it is kept."""
    wt = worktrees(repo, "late-nest")
    (wt / "a.txt").write_text("work\n")
    src = tmp_path / "nest-src"
    git("init", "-q", str(src), cwd=tmp_path)
    (src / "n.txt").write_text("uncommitted\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", "late-nest", "--json"],
                    repo) as result:
        os.rename(src, wt / "nest")
    out, err, rc = result[0]
    outcome = json.loads(out)["results"][0]
    assert rc == 3 and outcome["status"] == "attention", out + err
    assert "nest" in outcome["message"], out
    ao("ao-restore", "late-nest", cwd=repo)
    assert (wt / "nest" / "n.txt").read_text() == "uncommitted\n"


def test_a_clean_nested_clone_comes_back_with_the_trash_copy(repo, worktrees):
    """A clone nested in the worktree, ignored, clean and with every commit on its
    remote, goes to the trash with it; the restore puts the trash copy back whole,
    clone included, rather than checking the save out and leaving it behind."""
    wt = worktrees(repo, "with-clone")
    (wt / "a.txt").write_text("work\n")
    (wt / ".gitignore").write_text("/lib/\n")
    git("clone", "-q", str(repo), str(wt / "lib"), cwd=wt)
    ao("ao-preserve", "with-clone", cwd=repo)
    assert not wt.exists()
    ao("ao-restore", "with-clone", cwd=repo)
    assert (wt / "a.txt").read_text() == "work\n"
    assert git("status", "--porcelain", cwd=wt / "lib") == ""
    assert (wt / "lib" / ".git").is_dir()


def test_a_new_worktree_at_a_pending_path_moved_by_hand_keeps_its_registration(
        repo, worktrees, tmp_path):
    """A pending save's directory is gone and a new worktree was made at its path,
    then moved by hand: its registration is not the one the save's run took away,
    so a later preserve leaves it (its index holds staged work in no commit)."""
    wt = worktrees(repo, "first")
    (wt / "a.txt").write_text("work\n")
    ao("ao-preserve", "first", cwd=repo)
    git("worktree", "add", "-q", "-b", "second", str(wt), cwd=repo)
    _staged_and_moved_survives_a_preserve(repo, worktrees, wt, tmp_path)


def _staged_and_moved_survives_a_preserve(repo, worktrees, wt, tmp_path) -> None:
    """Stage a file in the worktree `wt`, move it by hand, preserve another session
    of the repository: `git worktree repair` still finds its index."""
    (wt / "s.txt").write_text("staged only\n")
    git("add", "s.txt", cwd=wt)
    moved = tmp_path / "moved-here"
    os.rename(wt, moved)
    other = worktrees(repo, "taken")
    (other / "b.txt").write_text("work\n")
    ao("ao-preserve", "taken", cwd=repo)
    git("worktree", "repair", str(moved), cwd=moved)
    assert git("show", ":s.txt", cwd=moved) == "staged only\n"


def test_preserve_prunes_no_registration_but_its_own(repo, worktrees, tmp_path):
    """A worktree the user moved by hand and has not repaired yet (`git worktree
    repair`) has a registration whose directory is missing: its index holds staged
    work in no commit. A preserve of another session of the repository deregisters
    only the worktree it took away."""
    other = worktrees(repo, "moved-by-hand")
    ao("ao", "forget", "moved-by-hand", cwd=repo)
    _staged_and_moved_survives_a_preserve(repo, worktrees, other, tmp_path)


def test_committed_files_removed_after_the_capture_are_no_loss(repo, worktrees):
    """A committed directory replaced by a file after the capture: its files are
    as HEAD has them, so the save taken again, without them, holds no less work
    than the first capture (no "holds less", exit 0)."""
    wt = worktrees(repo, "late-dir")
    (wt / "src" / "c").mkdir(parents=True)
    for n in (1, 2, 3):
        (wt / "src" / "c" / f"f{n}").write_text(f"committed {n}\n")
    git("add", "src", cwd=wt)
    git("commit", "-qm", "src", cwd=wt)
    (wt / "a.txt").write_text("work\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", "late-dir", "--json"],
                    repo) as result:
        shutil.rmtree(wt / "src" / "c")
        (wt / "src" / "c").write_text("a file now\n")
    out, err, rc = result[0]
    outcome = json.loads(out)["results"][0]
    assert rc == 0 and "holds_less_than" not in outcome, out + err
    assert "src/c" in outcome["captured_late"], out


def test_only_what_the_last_save_lacks_is_named_as_not_in_it(repo, worktrees):
    """An agent ignores a file and writes to it after the capture: the capture taken
    again holds the new .gitignore but not the file, and only the file is named as
    not in the ref (its latest state is in the trash copy)."""
    wt = worktrees(repo, "late-ign")
    (wt / "u.txt").write_text("untracked\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", "late-ign", "--json"],
                    repo) as result:
        (wt / ".gitignore").write_text("u.txt\n")
        with open(wt / "u.txt", "a") as fh:
            fh.write("late\n")
    out, err, rc = result[0]
    outcome = json.loads(out)["results"][0]
    assert rc == 3 and outcome["still_changing"] == ["u.txt"], out + err
    assert "not all in the ref (u.txt)" in outcome["message"], out


def test_a_mount_made_inside_after_the_walk_is_named(repo, worktrees, tmp_path):
    """A bind mount made inside an ignored directory of the worktree after the walk
    (which refuses one) goes to the trash with it: the outcome names it (exit 3),
    and nothing is deleted across it."""
    if os.geteuid() != 0:
        pytest.skip("mounts need root")
    wt = worktrees(repo, "late-mnt")
    (wt / ".gitignore").write_text("cache/\n")
    (wt / "cache" / "mp").mkdir(parents=True)
    (wt / "a.txt").write_text("work\n")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep").write_text("not the worktree's\n")
    try:
        with _paused_at("preserve:after-capture", ["ao-preserve", "late-mnt", "--json"],
                        repo) as result:
            subprocess.run(["mount", "--bind", str(precious), str(wt / "cache" / "mp")],
                           check=True)
        out, err, rc = result[0]
        outcome = json.loads(out)["results"][0]
        assert rc == 3 and outcome["still_changing"] == ["cache/mp/"], out + err
        ao("ao-prune", "--expire", "now", cwd=repo, rc=None)
        assert (precious / "keep").read_text() == "not the worktree's\n"
    finally:
        from git_ao.fs import walk
        for point in walk.mount_points():
            if point.startswith(str(tmp_path) + "/") and point.endswith("/mp"):
                subprocess.run(["umount", "-l", point], check=False)
    assert (precious / "keep").read_text() == "not the worktree's\n"


def test_a_file_git_cannot_store_written_after_the_capture_is_named(repo, worktrees):
    """A FIFO made after the capture, before the move: the capture taken again from
    the moved copy cannot hold it, so preserve says the worktree did not settle
    (never that it was saved) and the trash entry that holds it is kept."""
    wt = worktrees(repo, "fifo-late")
    (wt / "a.txt").write_text("work\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", "fifo-late", "--json"],
                    repo) as result:
        os.mkfifo(wt / "pipe")
    out, err, rc = result[0]
    assert rc == 3, out + err
    outcome = json.loads(out)["results"][0]
    assert outcome["status"] == "attention" and outcome["still_changing"] == ["pipe"], out
    assert "(pipe)" in outcome["message"] and "\0" not in outcome["message"], out
    pruned = ao("ao-prune", "--json", cwd=repo, rc=None)
    assert os.path.exists(outcome["trash"]), pruned.stdout


def test_a_write_captured_after_the_move_is_named_by_the_commit_the_ref_holds(
        repo, worktrees):
    """A file written after the first capture is captured again from the moved copy:
    the outcome names the commit the ref holds at the end, not the first one."""
    wt = worktrees(repo, "late-id")
    (wt / "a.txt").write_text("first\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", "late-id", "--json"],
                    repo) as result:
        (wt / "late.txt").write_text("late\n")
    out, err, rc = result[0]
    assert rc == 0, out + err
    outcome = json.loads(out)["results"][0]
    held = git("rev-parse", "refs/ao/preserved/late-id", cwd=repo).strip()
    assert outcome["captured_late"] == ["late.txt"], out
    assert outcome["preserved_commit"] == held, out
    assert f"saved in {held[:12]}" in outcome["message"], out


# An agent whose stop handler throws its work away, as a harness that cleans up
# its temporary worktree on exit does: `reset` undoes the edits, `empty`
# truncates the files, `remove` takes the worktree itself.
_CLEANER = ("import signal, subprocess, sys, time\n"
            "def stop(*_):\n"
            "    if sys.argv[1] == 'reset':\n"
            "        subprocess.run(['git', 'checkout', '-q', '--', '.'], check=True)\n"
            "        subprocess.run(['git', 'clean', '-fdq'], check=True)\n"
            "    elif sys.argv[1] == 'empty':\n"
            "        for name in ('README.md', 'notes.txt'):\n"
            "            open(name, 'w').close()\n"
            "    else:\n"
            "        subprocess.run(['git', 'worktree', 'remove', '--force', '.'], check=True)\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, stop)\n"
            "print('ready', flush=True)\n"
            "time.sleep(300)\n")


@contextlib.contextmanager
def _agent(wt: Path, script: str, *args: str):
    """An agent (`python -c script args`) working in `wt` for the block, which starts
    once it said it is ready; killed after."""
    agent = subprocess.Popen([sys.executable, "-c", script, *args], cwd=wt, text=True,
                             stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        assert agent.stdout is not None and agent.stdout.readline() == "ready\n"
        yield agent
    finally:
        agent.kill()
        agent.wait()
        if agent.stdout is not None:
            agent.stdout.close()


def _preserve_beside_cleaner(repo: Path, wt: Path, how: str) -> dict:
    """`git ao-preserve --all --json` (exit 3) while an agent that throws its work
    away (`how`, see _CLEANER) when stopped runs in `wt`; the session's result."""
    with _agent(wt, _CLEANER, how):
        res = ao("ao-preserve", "--all", "--json", cwd=repo, rc=3)
    [r] = [r for r in json.loads(res.stdout)["results"] if r["id"] == "cleaner"]
    return r


def test_a_preserve_killed_while_its_agents_stopped_says_so_when_run_again(repo, tmp_path):
    # Killed once the stop handler had emptied the work (a stop timeout at a
    # shutdown): the next run keeps and names the state before the stop, as the
    # run that is not killed does.
    from tests.support import KILLED, crash_env
    wt = _worktree(repo, tmp_path / "wt", "cleaner")
    (wt / "README.md").write_text("the agent's edit\n")
    (wt / "notes.txt").write_text("its notes\n")
    with _agent(wt, _CLEANER, "empty"):
        res = ao("ao-preserve", "--all", cwd=repo, rc=None,
                 env=crash_env("preserve:after-agents"))
        assert res.returncode == KILLED, res
    res = ao("ao-preserve", "--all", "--json", cwd=repo, rc=3)
    [r] = [r for r in json.loads(res.stdout)["results"] if r["id"] == "cleaner"]
    assert r["status"] == "attention" and "changed while its agents stopped" in r["message"]
    kept = git("rev-parse", "refs/ao/before-stop/cleaner", cwd=repo).strip()
    assert git("show", f"{kept}^3:notes.txt", cwd=repo) == "its notes\n"


@pytest.mark.parametrize("how", ["reset", "empty", "remove"])
def test_an_agent_that_discards_its_work_when_stopped_loses_nothing(repo, tmp_path, how):
    wt = _worktree(repo, tmp_path / "wt", "cleaner")
    (wt / "README.md").write_text("the agent's edit\n")
    (wt / "notes.txt").write_text("its notes\n")
    r = _preserve_beside_cleaner(repo, wt, how)
    kept = r["before_stop"]
    assert "changed while its agents stopped" in r["message"], r["message"]
    assert git("show", f"{kept}:README.md", cwd=repo) == "the agent's edit\n"
    assert git("show", f"{kept}^3:notes.txt", cwd=repo) == "its notes\n"
    ao("ao-restore", cwd=repo, rc=None)
    res = ao("ao-prune", cwd=repo, rc=None)
    # kept, and said, until the user drops it
    ref = "refs/ao/before-stop/cleaner"
    assert git("rev-parse", ref, cwd=repo).strip() == kept
    assert (f"prune-ref\tnothing\tcleaner\tkept {ref} ({kept[:12]}): the worktree before its "
            "agents were stopped; see it with git stash show -p --include-untracked "
            f"{ref}, drop it with git update-ref -d {ref}\n") in res.stdout


@pytest.mark.parametrize("how", ["reset", "empty"])
def test_a_save_holding_less_than_the_state_before_the_stop_is_named_until_resolved(
        repo, tmp_path, how):
    """The stop handler wiped the work: the boot's restore is not a plain ok, and the
    restore, list and show name the history entry of the state before the stop and
    the --at that brings it back, until that is done (or resolved)."""
    wt = _worktree(repo, tmp_path / "wt", "cleaner")
    (wt / "notes.txt").write_text("its notes\n")
    r = _preserve_beside_cleaner(repo, wt, how)
    before, n = r["before_stop"], r["holds_less_entry"]
    assert r["holds_less_than"] == before and n is not None, r
    assert f"after git ao-restore cleaner, git ao-restore cleaner --at {n} brings it back" \
        in r["message"], r["message"]
    [entry] = [e for e in json.loads(ao("ao", "history", "cleaner", "--json", cwd=repo).stdout)
               ["entries"] if e["number"] == n]
    assert git("show", f"{entry['commit']}^3:notes.txt", cwd=repo) == "its notes\n"
    dry = support.json_results(ao("ao-restore", "-n", "--json", cwd=repo, rc=3))
    assert f"git ao-restore cleaner --at {n} brings it back" in dry[0]["message"], dry
    res = ao("ao-restore", "--json", cwd=repo, rc=3)
    [r] = support.json_results(res)
    assert r["status"] == "attention" and r["holds_less_entry"] == n, r
    assert "before its agents were stopped" in r["message"], r["message"]
    # (README.md, emptied too, is as HEAD has it: committed, not lost work)
    assert "not in the save: notes.txt;" in r["message"], r["message"]
    assert f"git ao-restore cleaner --at {n} brings it back" in r["message"], r["message"]
    listed = ao("ao", "list", cwd=repo)
    assert "\tattention\t" in listed.stdout, listed.stdout
    assert f"hint: cleaner: the save holds less than the worktree held before its agents " \
        f"were stopped (entry {n} of its history" in listed.stderr, listed.stderr
    assert f"git ao-restore cleaner --at {n} brings it back" in listed.stderr
    shown = ao("ao", "show", "cleaner", cwd=repo)
    assert f"holds_less_than:          {before}" in shown.stdout, shown.stdout
    assert f"git ao-restore cleaner --at {n} brings it back" in shown.stderr, shown.stderr
    # a timer's checkpoint meanwhile does not end it
    ao("ao", "checkpoint", "cleaner", "--trigger", "timer", cwd=repo)
    assert support.states(repo)["cleaner"] == "attention"
    [r] = support.json_results(ao("ao-restore", "cleaner", "--json", cwd=repo, rc=3))
    m = r["holds_less_entry"]
    if how == "reset":
        ao("ao-restore", "cleaner", "--at", str(m), cwd=repo)
        assert (wt / "notes.txt").read_text() == "its notes\n"
    else:  # not wanted after all: resolve ends it, the entry and the ref stay
        res = ao("ao", "resolve", "cleaner", cwd=repo)
        assert "ended the note that the save holds less" in res.stdout, res.stdout
        assert git("rev-parse", "refs/ao/before-stop/cleaner", cwd=repo).strip() == before
    assert support.states(repo)["cleaner"] == "live"
    listed = ao("ao", "list", cwd=repo)
    assert "hint" not in listed.stderr, listed.stderr


def test_a_file_deleted_after_the_first_capture_is_named_by_its_history_entry(
        repo, worktrees):
    """Captured, then deleted before the move, so the capture taken again from the
    moved copy lacks it: only the history entry of the first capture holds it, and
    the preserve and the restore name that entry and the --at that brings it back."""
    wt = worktrees(repo, "deleted-late")
    (wt / "keep.txt").write_text("keep\n")
    (wt / "gone.txt").write_text("the only copy\n")
    with _paused_at("preserve:after-capture", ["ao-preserve", "deleted-late", "--json"],
                    repo) as result:
        (wt / "gone.txt").unlink()
    out, err, rc = result[0]
    assert rc == 3, out + err
    [r] = json.loads(out)["results"]
    n = r["holds_less_entry"]
    assert r["status"] == "attention" and n == 1, r
    assert "at the preserve's first capture, before a late write" in r["message"], r
    assert "not in the save: gone.txt" in r["message"], r["message"]
    assert "after git ao-restore deleted-late, git ao-restore deleted-late --at 1 brings it " \
        "back" in r["message"], r["message"]
    [r] = support.json_results(ao("ao-restore", "--json", cwd=repo, rc=3))
    assert r["status"] == "attention" and r["holds_less_entry"] == 1, r
    assert not (wt / "gone.txt").exists()
    ao("ao-restore", "deleted-late", "--at", "1", cwd=repo)
    assert (wt / "gone.txt").read_text() == "the only copy\n"
    assert support.states(repo)["deleted-late"] == "live"


# An agent whose stop handler writes its last notes: the worktree changes while
# it stops, and nothing of the checkpoint is lost.
_LAST_WORDS = ("import signal, sys, time\n"
               "def stop(*_):\n"
               "    open('last.txt', 'w').write('written while stopping\\n')\n"
               "    sys.exit(0)\n"
               "signal.signal(signal.SIGTERM, stop)\n"
               "print('ready', flush=True)\n"
               "time.sleep(300)\n")


@pytest.mark.parametrize("inside", ["submodule", "nested"])
def test_a_preserve_refused_after_its_agents_stopped_claims_no_change_the_stop_did_not_make(
        repo, tmp_path, inside):
    # The checkpoint before the stop leaves a submodule's own work (or a nested
    # repository) out; the preserve then refuses it. With no save to compare, the
    # line said "the worktree changed while its agents stopped" and kept a
    # before-stop ref for an agent that changed nothing.
    wt = _worktree(repo, tmp_path / "wt", "quiet")
    if inside == "submodule":
        add_submodule(wt, tmp_path / "lib-src")
        git("commit", "-qm", "submodule", cwd=wt)
        (wt / "lib" / "l.txt").write_text("edited inside\n")
    else:
        git("init", "-q", str(wt / "dep"), cwd=wt)
    (wt / "notes.txt").write_text("its notes\n")
    with _agent(wt, _QUIET):
        res = ao("ao-preserve", "--all", "--json", cwd=repo, rc=1)
    [r] = [r for r in json.loads(res.stdout)["results"] if r["id"] == "quiet"]
    assert r["status"] == "refused" and "changed while its agents stopped" not in r["message"], r
    assert git("for-each-ref", "refs/ao/before-stop/", cwd=repo) == ""
    assert (wt / "notes.txt").read_text() == "its notes\n"


_QUIET = ("import signal, sys, time\n"
          "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
          "print('ready', flush=True)\n"
          "time.sleep(300)\n")


def test_a_checkpoint_kept_before_a_stop_that_lost_nothing_exits_0_as_the_page_says(
        repo, tmp_path):
    """The checkpoint is kept under refs/ao/before-stop/ID whenever the stop changed
    the worktree, but the exit status is 3 only when the final capture lacks what it
    held: the man page's EXIT STATUS says what its DESCRIPTION and the code say."""
    from tests.support import man_source_text
    wt = _worktree(repo, tmp_path / "wt", "talker")
    (wt / "notes.txt").write_text("its notes\n")
    with _agent(wt, _LAST_WORDS):
        res = ao("ao-preserve", "--all", "--json", cwd=repo, rc=0)
    [r] = [r for r in json.loads(res.stdout)["results"] if r["id"] == "talker"]
    assert r["status"] == "ok" and r["before_stop"], r
    assert git("rev-parse", "refs/ao/before-stop/talker", cwd=repo).strip() == r["before_stop"]
    page = man_source_text((support.ROOT / "man" / "git-ao-preserve.1").read_text())
    status = page[page.index(".SH EXIT STATUS"):]
    three = status[status.index(".B 3"):status.index(".B 128")]
    assert "refs/ao/before-stop/id whose state the final capture lacks" in \
        " ".join(three.split()), three


def test_a_session_another_run_preserved_while_its_agents_stopped_claims_no_change(
        repo, tmp_path):
    """Two shutdown runs at once: the second checkpointed the session before stopping
    its agents, then found it preserved by the first. Judged against no save at all,
    it said the worktree changed while the agents stopped, kept a before-stop ref
    and exited 3; the first run's save holds the same state."""
    wt = _worktree(repo, tmp_path / "wt", "twice")
    (wt / "README.md").write_text("the agent's edit\n")
    (wt / "notes.txt").write_text("its notes\n")
    with _agent(wt, _QUIET), \
            _paused_at("preserve:after-agents", ["ao-preserve", "--all", "--json"],
                       repo) as second:
        first = ao("ao-preserve", "--all", "--json", cwd=repo, rc=0)
        [r] = [r for r in json.loads(first.stdout)["results"] if r["id"] == "twice"]
        assert r["status"] == "ok", r
    out, err, rc = second[0]
    [r] = [r for r in json.loads(out)["results"] if r["id"] == "twice"]
    assert "changed while its agents stopped" not in r["message"], r
    assert rc == 0 and r["status"] != "attention", (rc, r, err)
    assert git("for-each-ref", "refs/ao/before-stop/", cwd=repo) == ""


_STUBBORN = ("import signal, sys\n"
             "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
             "print('ready', flush=True)\n"
             "sys.stdin.readline()\n"
             "open('result.txt', 'w').write('written after the move\\n')\n"
             "open('README.md', 'a').write('appended after the move\\n')\n"
             "print('done', flush=True)\n")


@contextlib.contextmanager
def _stubborn(repo: Path, wt: Path):
    """An agent in `wt` that ignores SIGTERM (preserve.agentTimeout short), ready;
    `_go(agent)` makes it write, after which it says done. Killed at the end."""
    ao("ao", "config", "set", "preserve.agentTimeout", "0.2", cwd=repo)
    agent = subprocess.Popen([sys.executable, "-c", _STUBBORN], cwd=wt, text=True,
                             stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                             start_new_session=True)
    try:
        assert agent.stdout is not None and agent.stdin is not None
        assert agent.stdout.readline() == "ready\n"
        yield agent
    finally:
        agent.kill()
        agent.communicate()


def _go(agent: subprocess.Popen) -> None:
    assert agent.stdout is not None and agent.stdin is not None
    agent.stdin.write("go\n")
    agent.stdin.flush()
    assert agent.stdout.readline() == "done\n"


def test_an_agent_still_running_when_its_worktree_is_moved_needs_attention(repo, tmp_path):
    """An agent that ignores SIGTERM outlives the stop and writes into the trash copy
    after the checks: the preserve says so (exit 3, pid and name), and the restore
    from the trash brings those writes back and names them."""
    wt = _worktree(repo, tmp_path / "wt", "stubborn")
    with _stubborn(repo, wt) as agent:
        res = ao("ao-preserve", "--all", "--json", cwd=repo, rc=None)
        [r] = support.json_results(res)
        assert res.returncode == 3 and r["status"] == "attention", res.stdout
        assert f"pid {agent.pid}" in r["message"] and "still running" in r["message"], r
        assert r["trash"] in r["message"] and "git ao-restore" in r["message"], r
        assert r["running_in_trash"] == [agent.pid], r
        _go(agent)
    res = ao("ao-restore", "--json", cwd=repo, rc=None)
    [r] = support.json_results(res)
    assert (wt / "result.txt").read_text() == "written after the move\n", res.stdout
    assert (wt / "README.md").read_text().endswith("appended after the move\n")
    assert "result.txt" in r.get("late_writes", []), res.stdout
    assert "README.md" in r.get("late_writes", []), res.stdout
    assert "result.txt" in r["message"], r["message"]


def test_a_checkout_restore_names_an_agent_still_working_in_the_trash_copy(repo, tmp_path):
    """The branch moved, so the restore checks out again: an agent still running in
    the trash copy writes there, not into the worktree. The restore names it
    (exit 3), and prune keeps the copy once it wrote there."""
    wt = _worktree(repo, tmp_path / "wt", "stubborn")
    (wt / "notes.txt").write_text("its notes\n")
    with _stubborn(repo, wt) as agent:
        ao("ao-preserve", "--all", cwd=repo, rc=3)
        support.commit_on(repo, "stubborn", {"other.txt": "upstream\n"})
        res = ao("ao-restore", "--json", cwd=repo, rc=3)
        [r] = support.json_results(res)
        assert r["running_in_trash"] == [agent.pid], r
        assert f"pid {agent.pid}" in r["message"] and "trash copy" in r["message"], r
        assert (wt / "notes.txt").read_text() == "its notes\n"
        _go(agent)
    assert not (wt / "result.txt").exists()
    res = ao("ao-prune", "-n", "--expire=now", cwd=repo, rc=None)
    assert "kept" in res.stdout and "result.txt" in res.stdout, res.stdout
