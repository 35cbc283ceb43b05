"""The time a push to a git remote adds to a shutdown of 50 sessions.

Run from the checkout (after the README's install):

    .venv/bin/python bench/remote_push.py             # 50 sessions, 3 runs each
    .venv/bin/python bench/remote_push.py --runs 5 --sessions 50

Each round builds two identical setups (one repository, N linked worktrees
registered with git-ao, each with a staged edit, an unstaged edit and a new
file) and times `git ao-preserve --all` on one and `git ao-preserve --all
--push origin` on the other, alternating which goes first, in this one
process. origin is a bare repository on the local disk, already holding the
branch history, so what is measured is git-ao's push of the new preserve
commits (one `git push` per repository), not the network. Reports the medians
in seconds, their difference and their ratio, and the machine load
(`uptime`). HOME, the global git config and AO_DATA_DIR point into a scratch
dir. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def git(*args: str, cwd: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def isolate(scratch: str) -> None:
    """HOME, the global git config and PATH for this process and its children."""
    home = os.path.join(scratch, "home")
    os.makedirs(home)
    with open(os.path.join(home, ".gitconfig"), "w") as fh:
        fh.write("[user]\n\tname = Bench\n\temail = bench@localhost\n"
                 "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        os.environ.pop(name, None)
    os.environ.update(HOME=home, GIT_CONFIG_GLOBAL=os.path.join(home, ".gitconfig"),
                      GIT_CONFIG_NOSYSTEM="1",
                      PATH=os.pathsep.join([os.path.join(ROOT, "bin"),
                                            os.path.dirname(sys.executable),
                                            os.environ["PATH"]]))


def setup(base: str, sessions: int) -> tuple[str, dict[str, str]]:
    """A repository with `sessions` dirty registered worktrees and a bare origin
    holding main and every branch. Returns (repo, env with its own AO_DATA_DIR)."""
    repo = os.path.join(base, "repo")
    os.makedirs(os.path.join(repo, "src"))
    git("init", "-q", repo, cwd=base)
    for i in range(40):
        with open(os.path.join(repo, "src", f"m{i}.py"), "w") as fh:
            fh.write(f"# module {i}\n" + "x = 1\n" * 50)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "initial", cwd=repo)
    env = dict(os.environ, AO_DATA_DIR=os.path.join(base, "aodata"))
    for i in range(sessions):
        wt = os.path.join(base, "wt", f"s{i:02d}")
        git("worktree", "add", "-q", "-b", f"s{i:02d}", wt, cwd=repo)
        subprocess.run(["git", "ao", "add", wt, "--id", f"s{i:02d}"], cwd=repo, env=env,
                       check=True, capture_output=True)
        with open(os.path.join(wt, "src", "m1.py"), "a") as fh:
            fh.write(f"staged = {i}\n")
        git("add", "src/m1.py", cwd=wt)
        with open(os.path.join(wt, "src", "m2.py"), "a") as fh:
            fh.write(f"unstaged = {i}\n")
        with open(os.path.join(wt, f"notes-{i}.txt"), "w") as fh:
            fh.write("new file\n" * 20)
    origin = os.path.join(base, "origin.git")
    git("init", "-q", "--bare", origin, cwd=base)
    git("remote", "add", "origin", origin, cwd=repo)
    git("push", "-q", "origin", "--all", cwd=repo)
    return repo, env


def shutdown(repo: str, env: dict[str, str], push: bool) -> float:
    """Seconds `git ao-preserve --all [--push origin]` takes."""
    args = ["git", "ao-preserve", "--all", "-q"] + (["--push", "origin"] if push else [])
    t = time.perf_counter()
    res = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {res.returncode}\n{res.stderr}")
    if push:
        pushed = git("for-each-ref", "refs/ao/preserved/", cwd=os.path.join(
            os.path.dirname(repo), "origin.git")).count("\n")
        local = git("for-each-ref", "refs/ao/preserved/", cwd=repo).count("\n")
        if pushed != local:
            raise SystemExit(f"pushed {pushed} of {local} preserve refs")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=50)
    opts = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="git-ao-bench-remote.")
    try:
        isolate(scratch)
        plain: list[float] = []
        pushed: list[float] = []
        for run in range(opts.runs):
            order = (False, True) if run % 2 == 0 else (True, False)
            for push in order:
                base = os.path.join(scratch, f"r{run}-{'push' if push else 'plain'}")
                os.makedirs(base)
                repo, env = setup(base, opts.sessions)
                (pushed if push else plain).append(shutdown(repo, env, push))
                shutil.rmtree(base)
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        a, b = statistics.median(plain), statistics.median(pushed)
        print(f"shutdown of {opts.sessions} sessions, medians of {opts.runs} runs "
              f"(git {git('--version', cwd=scratch).split()[-1]}, {os.cpu_count()} cores)")
        print(f"  without push      {a:7.2f} s   runs: {', '.join(f'{x:.2f}' for x in plain)}")
        print(f"  with --push       {b:7.2f} s   runs: {', '.join(f'{x:.2f}' for x in pushed)}")
        print(f"  push adds         {b - a:7.2f} s   ratio {b / a:.2f}")
        print(f"  load: {load}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
