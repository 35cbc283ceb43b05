"""Restore from the trash, and its fallback, against plain git, side by side.

    .venv/bin/python bench/restore_trash.py [--runs 3] [--files 20000] [--ignored 3000]
                                            [--sessions 200]

One repository of `--files` tracked files (a few edited, a few untracked) with an
ignored tree of `--ignored` files (node_modules/). Each round, in one process:

- plain: `git worktree add` of the branch (then removed by git);
- plain, parallel: the same with git's parallel checkout (`checkout.workers=8`,
  what git-ao's own checkouts use), so the gain it brings shows apart;
- plain+apply: `git worktree add` + `git stash apply --index <preserve commit>`;
- trash: `git ao-restore` putting the preserved directory back whole, as a
  command and again in this process (its main() called here: no interpreter
  start-up or imports);
- fallback: `git ao-restore` with the trash copy marked unusable (checkout, apply,
  the ignored files moved in).

Each git-ao run follows a `git ao-preserve` that is not timed. The scaling row
restores `--sessions` small sessions (a 100-file repository of their own) from
the trash in one run. Medians and
ratios are printed with the machine's load; nothing asserts a time.
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
sys.path.insert(0, ROOT)


def sh(*args: str, cwd: str, env: dict | None = None) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True,
                          env=env).stdout


def timed(fn) -> float:
    # The files the previous step wrote or deleted go to disk first, so their
    # writeback is not charged to the step timed.
    os.sync()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def in_process(module: str, *args: str, cwd: str) -> int:
    """Run a git-ao command's main() here, as its bin/ script would, minus the
    interpreter's start-up and imports; returns its exit status."""
    import importlib
    main = importlib.import_module(module).main
    saved = sys.argv, os.getcwd()
    os.chdir(cwd)
    sys.argv = [module, *args]
    try:
        main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        sys.argv = saved[0]
        os.chdir(saved[1])
    return 0


def build(base: str, files: int, ignored: int) -> str:
    repo = os.path.join(base, "repo")
    os.makedirs(repo)
    sh("git", "init", "-q", "-b", "main", cwd=repo)
    for i in range(files):
        d = os.path.join(repo, f"d{i // 200:03d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:05d}.txt"), "w") as fh:
            fh.write(f"line {i}\n" * 4)
    with open(os.path.join(repo, ".gitignore"), "w") as fh:
        fh.write("node_modules/\n")
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "corpus", cwd=repo)
    return repo


def dirty(wt: str, ignored: int) -> None:
    for i in range(min(50, len(os.listdir(wt)) - 2)):
        with open(os.path.join(wt, f"d{i:03d}", f"f{i * 200:05d}.txt"), "a") as fh:
            fh.write("edited\n")
    for i in range(10):
        with open(os.path.join(wt, f"new{i}.txt"), "w") as fh:
            fh.write("new\n")
    nm = os.path.join(wt, "node_modules")
    for i in range(ignored):
        d = os.path.join(nm, f"p{i // 100:03d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"m{i}.js"), "w") as fh:
            fh.write("module.exports = 1;\n")


def mark_unusable(data: str) -> None:
    from git_ao.store import trash
    for e in trash.entries(data):
        if not e.legacy:
            trash.mark(e, proof_failed=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--ignored", type=int, default=3000)
    ap.add_argument("--sessions", type=int, default=200)
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="ao-bench-restore-")
    home = os.path.join(base, "home")
    os.makedirs(home)
    with open(os.path.join(home, ".gitconfig"), "w") as fh:
        fh.write("[user]\n\tname = B\n\temail = b@localhost\n[advice]\n\tdetachedHead = false\n")
    data = os.path.join(base, "ao")
    os.environ.update(HOME=home, GIT_CONFIG_GLOBAL=os.path.join(home, ".gitconfig"),
                      GIT_CONFIG_NOSYSTEM="1", AO_DATA_DIR=data,
                      PATH=f"{ROOT}/bin:{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    try:
        repo = build(base, a.files, a.ignored)
        wt = os.path.join(base, "wt")
        sh("git", "worktree", "add", "-q", "-b", "s", wt, cwd=repo)
        sh("git", "ao", "add", wt, "--id", "s", cwd=repo)
        dirty(wt, a.ignored)
        rows: dict[str, list[float]] = {k: [] for k in ("plain", "parallel", "plain+apply",
                                                        "trash", "trash-in", "fallback")}
        import git_ao.cli.restore  # noqa: F401 - imported once, as a long-lived process would
        for _ in range(a.runs):
            sh("git", "ao-preserve", "s", cwd=repo)
            commit = sh("git", "rev-parse", "refs/ao/preserved/s", cwd=repo).strip()
            p = os.path.join(base, "plain")
            rows["plain"].append(timed(lambda: sh("git", "worktree", "add", "-q", p, "s",
                                                  cwd=repo)))
            sh("git", "worktree", "remove", "--force", p, cwd=repo)
            rows["parallel"].append(timed(lambda: sh("git", "-c", "checkout.workers=8",
                                                     "worktree", "add", "-q", p, "s", cwd=repo)))
            sh("git", "worktree", "remove", "--force", p, cwd=repo)
            rows["plain+apply"].append(timed(lambda: (
                sh("git", "worktree", "add", "-q", p, "s", cwd=repo),
                sh("git", "stash", "apply", "--index", commit, cwd=p))))
            sh("git", "worktree", "remove", "--force", p, cwd=repo)
            rows["trash"].append(timed(lambda: sh("git", "ao-restore", cwd=repo)))
            sh("git", "ao-preserve", "s", cwd=repo)
            rows["trash-in"].append(timed(lambda: in_process("git_ao.cli.restore", "-q",
                                                             cwd=repo)))
            sh("git", "ao-preserve", "s", cwd=repo)
            mark_unusable(data)
            rows["fallback"].append(timed(lambda: sh("git", "ao-restore", cwd=repo)))
            sh("git", "ao-prune", cwd=repo)
        med = {k: statistics.median(v) for k, v in rows.items()}
        # scaling: many small sessions restored from the trash in one run, in a
        # repository of their own (a 20k-file checkout each would measure the disk)
        small = os.path.join(base, "small")
        os.makedirs(small)
        sh("git", "init", "-q", "-b", "main", cwd=small)
        for i in range(100):
            with open(os.path.join(small, f"f{i:03d}.txt"), "w") as fh:
                fh.write(f"line {i}\n")
        sh("git", "add", "-A", cwd=small)
        sh("git", "commit", "-qm", "small", cwd=small)
        for i in range(a.sessions):
            w = os.path.join(base, "many", f"m{i:03d}")
            sh("git", "worktree", "add", "-q", "-b", f"m{i}", w, cwd=small)
            with open(os.path.join(w, "f000.txt"), "a") as fh:
                fh.write("x\n")
            sh("git", "ao", "add", w, "--id", f"m{i:03d}", cwd=small)
        sh("git", "ao-preserve", "--all", cwd=small)
        many = timed(lambda: sh("git", "ao-restore", cwd=small))
        out = subprocess.run(["git", "ao", "list"], cwd=small, capture_output=True, text=True)
        live = out.stdout.count("\tlive\t")
        load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") \
            else ["?"]
        print(f"files={a.files} ignored={a.ignored} runs={a.runs} load={' '.join(load)} "
              f"cores={os.cpu_count()}")
        print(f"{'row':<34}{'median s':>10}{'ratio':>10}  target")
        print(f"{'git worktree add':<34}{med['plain']:>10.3f}")
        print(f"{'  the same, checkout.workers=8':<34}{med['parallel']:>10.3f}"
              f"{med['parallel'] / med['plain']:>10.2f}")
        print(f"{'git worktree add + stash apply':<34}{med['plain+apply']:>10.3f}")
        print(f"{'git ao-restore, from the trash':<34}{med['trash']:>10.3f}"
              f"{med['trash'] / med['plain']:>10.2f}  <= 0.1x worktree add")
        print(f"{'  the same, in this process':<34}{med['trash-in']:>10.3f}"
              f"{med['trash-in'] / med['plain']:>10.2f}  <= 0.1x worktree add")
        print(f"{'git ao-restore, fallback':<34}{med['fallback']:>10.3f}"
              f"{med['fallback'] / med['plain+apply']:>10.2f}  <= 1.1x add + apply")
        print(f"{'restore of %d sessions (trash)' % a.sessions:<34}{many:>10.3f}"
              f"{'':>10}  {many / max(1, a.sessions) * 1000:.1f} ms/session, {live} live")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
