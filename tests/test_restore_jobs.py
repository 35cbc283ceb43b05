"""`git ao-restore -j N`: sessions restored in parallel come back exactly as they do
one at a time; two sessions wanting one branch of one repository never both get
it (the per-repository lock of lifecycle.restore_one); a signal lets the sessions
in flight finish and leaves the rest pending."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.support import (
    add_work,
    ao,
    assert_all_restored,
    assert_work_safe,
    commit_on,
    dirty,
    git,
    init_repo,
    integrity_ok,
    json_results,
    make_sessions,
    ref_of,
    states,
)
from tests.worktree_state import assert_restored, state


def _add_session(repo, base, sid, mix, env=None, branch=None):
    """A linked worktree base/sid on branch `branch` (default sid) with work of kind
    `mix` (0 the full dirty() fixture, 1 untracked only, 2 staged only, 3 clean),
    registered as session `sid`. Returns its path."""
    wt = Path(base) / sid
    git("worktree", "add", "-q", "-b", branch or sid, wt, cwd=repo)
    add_work(wt, mix, sid)
    ao("ao", "add", wt, "--id", sid, cwd=repo, env=env)
    return wt



def test_twelve_sessions_over_three_repositories_with_four_jobs(repo, make_repo, tmp_path):
    repos = [repo, make_repo(), make_repo()]
    base = tmp_path / "wt"
    base.mkdir()
    sessions = {}
    for i in range(12):
        sid = f"p{i:02d}"
        r = repos[i % 3]
        sessions[sid] = (r, _add_session(r, base, sid, (i // 3) % 4))
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    ao("ao-preserve", "--all", cwd=repo)
    pending = states(repo)
    assert set(pending.values()) == {"pending"}
    res = ao("ao-restore", "-j", "4", "--json", cwd=repo)
    results = json_results(res)
    # Outcomes stay in input order (the database's order), whatever finished first.
    assert [r["id"] for r in results] == list(pending)
    assert {r["status"] for r in results} == {"ok"}, results
    for sid, (r, wt) in sessions.items():
        assert_restored(before[sid], state(wt))
        assert ref_of(r, sid) is None, sid
    assert set(states(repo).values()) == {"live"}
    integrity_ok()


def test_two_sessions_wanting_one_branch_one_wins(repo, worktrees, tmp_path):
    # a is saved on branch b; then a second worktree on the same (now free) branch
    # is registered as bb and saved too: two pending sessions want branch b.
    a = worktrees(repo, "a", branch="b")
    dirty(a)
    before = {"a": state(a)}
    ao("ao-preserve", "a", cwd=repo)
    bb = tmp_path / "wt" / "bb"
    git("worktree", "add", "-q", bb, "b", cwd=repo)
    (bb / "other.txt").write_text("bb's work\n")
    ao("ao", "add", bb, "--id", "bb", cwd=repo)
    before["bb"] = state(bb)
    ao("ao-preserve", "bb", cwd=repo)
    assert states(repo) == {"a": "pending", "bb": "pending"}
    res = ao("ao-restore", "-j", "2", "--json", cwd=repo, rc=1)
    results = {r["id"]: r for r in json_results(res)}
    won = [sid for sid, r in results.items() if r["status"] == "ok"]
    assert len(won) == 1, results
    winner, loser = won[0], ({"a", "bb"} - set(won)).pop()
    path = {"a": a, "bb": bb}
    # Refused by git-ao's own check under the lock, naming the worktree that won,
    # not failed by git's `worktree add` halfway.
    assert results[loser]["status"] == "refused", results
    assert f"branch 'b' is checked out in {path[winner]}" in results[loser]["message"]
    assert states(repo) == {winner: "live", loser: "pending"}
    assert_restored(before[winner], state(path[winner]))
    assert not path[loser].exists()
    assert ref_of(repo, winner) is None and ref_of(repo, loser) is not None
    assert_work_safe({sid: (repo, p) for sid, p in path.items()}, before, tmp_path)


def test_two_processes_wanting_one_branch_one_wins(repo, worktrees, tmp_path):
    """The lock is a flock in the data dir, not only a lock of one run: two
    `git ao-restore` processes started together, one per session, never both put a
    worktree on the branch."""
    import subprocess
    a = worktrees(repo, "a", branch="b")
    dirty(a)
    ao("ao-preserve", "a", cwd=repo)
    bb = tmp_path / "wt" / "bb"
    git("worktree", "add", "-q", bb, "b", cwd=repo)
    (bb / "other.txt").write_text("bb's work\n")
    ao("ao", "add", bb, "--id", "bb", cwd=repo)
    ao("ao-preserve", "bb", cwd=repo)
    procs = [subprocess.Popen(["git", "ao-restore", sid, "--json"], cwd=repo, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for sid in ("a", "bb")]
    ends = {}
    for p in procs:
        out, _ = p.communicate(timeout=120)
        (r,) = json_results(subprocess.CompletedProcess(p.args, p.returncode, out))
        ends[r["id"]] = (p.returncode, r["status"])
    assert sorted(ends.values()) == [(0, "ok"), (1, "refused")], ends
    branches = [ln for ln in git("worktree", "list", "--porcelain", cwd=repo).splitlines()
                if ln == "branch refs/heads/b"]
    assert len(branches) == 1


def _mixed_scenario(root, env):
    """Two repositories, four sessions each, restored to four different ends: full
    work (ok), clean (ok), a conflict with its moved branch (attention), a branch
    checked out elsewhere (refused). Returns {id: path} once all are pending."""
    os.makedirs(root)
    repos = []
    for name in ("r0", "r1"):
        r = Path(root) / name
        r.mkdir()
        git("init", "-q", "-b", "main", cwd=r)
        repos.append(init_repo(r))
    paths = {}
    for n, r in enumerate(repos):
        for mix, end in ((0, "full"), (3, "clean"), (2, "conflict"), (1, "taken")):
            sid = f"{end}{n}"
            paths[sid] = _add_session(r, Path(root) / "wt", sid, mix, env=env)
    ao("ao-preserve", "--all", cwd=repos[0], env=env)
    for n, r in enumerate(repos):
        # The conflict: the session's branch moved on, changing its staged line.
        commit_on(r, f"conflict{n}", {"README.md": "hello\nmoved on\n"})
        git("worktree", "add", "-q", Path(root) / f"holder{n}", f"taken{n}", cwd=r)
    return paths


def _normalised(res, root):
    out = []
    for r in json_results(res):
        msg = re.sub(r"\b[0-9a-f]{7,40}\b", "<oid>", r["message"].replace(str(root), "<root>"))
        out.append((r["id"], r["action"], r["status"], msg))
    return out


def test_one_job_and_four_jobs_give_the_same_outcomes(tmp_path):
    got = {}
    for jobs in ("1", "4"):
        root = tmp_path / f"j{jobs}"
        env = {"AO_DATA_DIR": str(tmp_path / f"data-j{jobs}")}
        paths = _mixed_scenario(root, env)
        res = ao("ao-restore", "-j", jobs, "--json", cwd=root / "r0", env=env, rc=1)
        got[jobs] = _normalised(res, root)
        ends = {r[0]: r[2] for r in got[jobs]}
        assert ends == {"full0": "ok", "clean0": "ok", "conflict0": "attention",
                        "taken0": "refused", "full1": "ok", "clean1": "ok",
                        "conflict1": "attention", "taken1": "refused"}, got[jobs]
        assert not paths["taken0"].exists() and paths["conflict1"].is_dir()
    assert got["1"] == got["4"]


def test_sigterm_during_a_parallel_restore(repo, make_repo, worktrees, tmp_path):
    sessions = make_sessions(repo, worktrees, 6, other=make_repo(), detached=False)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    ao("ao-preserve", "--all", cwd=repo)
    refs = {sid: ref_of(r, sid) for sid, (r, _) in sessions.items()}
    # The signal arrives when the first session has its worktree back and has not
    # applied its work yet; no session can have ended before that moment.
    res = ao("ao-restore", "-j", "2", cwd=repo, rc=143,
             env={"GIT_AO_CRASH_AT": "restore:after-reinstate", "GIT_AO_CRASH_SIGNAL": "TERM"})
    # Plain output: one `action<TAB>status<TAB>id<TAB>message` record per session.
    results = [dict(zip(("action", "status", "id", "message"), ln.split("\t", 3), strict=True))
               for ln in res.stdout.splitlines()]
    assert len(results) == len(sessions), res.stdout
    started = [r for r in results if not r["message"].startswith("not started")]
    assert 1 <= len(started) <= 2, results  # at most the two in flight
    got = states(repo)
    for r in results:
        sid, (repo_of, wt) = r["id"], sessions[r["id"]]
        if r in started:  # ran to its end
            assert r["status"] == "ok", r
            assert got[sid] == "live"
            assert_restored(before[sid], state(wt))
        else:
            assert r["message"] == ("not started: interrupted by a signal; the session "
                                    "stays pending"), r
            assert got[sid] == "pending" and not wt.exists()
            assert ref_of(repo_of, sid) == refs[sid]
    left = len(results) - len(started)
    assert f"restore: interrupted by SIGTERM: {left} session(s) not started, still pending" \
        in res.stderr
    with open(os.path.join(os.environ["AO_DATA_DIR"], "logs", "git-ao.log")) as fh:
        assert f"interrupted signal=SIGTERM not_started={left}" in fh.read()
    assert_work_safe(sessions, before, tmp_path)
    integrity_ok()
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


def test_restore_jobs_setting(repo):
    res = ao("ao", "config", "set", "restore.jobs", "0", cwd=repo, rc=129)
    assert "restore.jobs" in res.stderr
    ao("ao", "config", "set", "restore.jobs", "3", cwd=repo)
    assert ao("ao", "config", "get", "restore.jobs", cwd=repo).stdout == "3\n"
    ao("ao-restore", "-j", "0", cwd=repo, rc=129)


def test_default_jobs_are_two_per_core(monkeypatch):
    from git_ao import batch
    for cores, jobs in ((1, 4), (2, 4), (8, 16), (32, 64), (None, 4)):
        monkeypatch.setattr(os, "cpu_count", lambda c=cores: c)
        assert batch.default_jobs() == jobs


def test_preserve_and_restore_run_default_jobs_without_j(repo, worktrees, monkeypatch):
    """A session mostly waits on git and the disk: with no -j and no setting, both
    commands run four sessions per core at once, not one per core."""
    from git_ao import batch
    from git_ao.preserve import workflow as preserve_workflow
    from git_ao.restore import workflow as restore_workflow
    seen = []

    def recording(sessions, one, jobs, progress):
        seen.append(jobs)
        return batch.run_each(sessions, one, jobs, progress)

    for module in (preserve_workflow, restore_workflow):
        monkeypatch.setattr(module, "run_each", recording)
    for i in range(3):
        (worktrees(repo, f"j{i}") / "new.txt").write_text("x\n")
    ao("ao-preserve", "--all", "-q", cwd=repo)
    ao("ao-restore", "-q", cwd=repo)
    assert seen and set(seen) == {batch.default_jobs()}, seen
    assert batch.default_jobs() >= 4
