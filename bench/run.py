"""git-ao benchmarks: git-ao against the same job done with plain git, side by side.

Run from the checkout (after the README's install):

    .venv/bin/python bench/run.py            # the full table, 5 runs each (about 10 minutes)
    .venv/bin/python bench/run.py --runs 7   # more runs
    .venv/bin/python bench/run.py --quick    # 3 runs, small scaling step (a smoke run)

The corpus is built on first use under bench/.cache/ (git-ignored): a ~20,000
file repository from the Python standard library sources and small generated
repositories. Results go to stdout and to bench/results/<UTC time>.md and .json.

Every pair is measured in the same process, alternating git-ao and plain git
in each round, on identical copies prepared the same way; the table shows
medians and their ratio (git-ao / plain git; for -j, -j 1 / -j N). HOME, the
global git config and AO_DATA_DIR point into a scratch dir: ~/.ao is never
touched. Nothing here asserts a time; the targets are reported, not enforced.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import corpus
from corpus import git

WORK = os.path.join(corpus.CACHE, "work")
RESULTS = os.path.join(HERE, "results")
CORES = os.cpu_count() or 1


# ---------------------------------------------------------------- environment


def isolate():
    """Point HOME, the global git config and AO_DATA_DIR into WORK, and put the
    git-ao commands of this checkout first on PATH (for this process and its children)."""
    shutil.rmtree(WORK, ignore_errors=True)
    home = os.path.join(WORK, "home")
    os.makedirs(home)
    with open(os.path.join(home, ".gitconfig"), "w") as fh:
        fh.write("[user]\n\tname = Bench\n\temail = bench@localhost\n"
                 "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
                 "GIT_AO_CRASH_AT", "GIT_AO_DEBUG", "GIT_TRACE", "PYTHONDONTWRITEBYTECODE"):
        os.environ.pop(name, None)
    # An installed git-ao has its bytecode compiled (pip does it); a checkout's is
    # compiled here, so no timed command compiles a module.
    import compileall
    compileall.compile_dir(os.path.join(ROOT, "git_ao"), quiet=1)
    os.environ.update(HOME=home, GIT_CONFIG_GLOBAL=os.path.join(home, ".gitconfig"),
                      GIT_CONFIG_NOSYSTEM="1", AO_DATA_DIR=os.path.join(WORK, "aodata"),
                      NO_COLOR="1")
    venv_bin = os.path.dirname(sys.executable)
    if os.path.exists(os.path.join(venv_bin, "git-ao-preserve")):
        os.environ["PATH"] = f"{venv_bin}:{os.environ['PATH']}"
    else:
        os.environ["PATH"] = f"{venv_bin}:{ROOT}/bin:{os.environ['PATH']}"


def machine() -> dict:
    """What ran the benchmark: CPU, cores, memory, OS, git, Python, load."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for ln in fh:
                if ln.startswith("model name"):
                    cpu = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            mem = f"{int(fh.readline().split()[1]) / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    fs = subprocess.run(["df", "-T", WORK], capture_output=True, text=True).stdout.splitlines()
    return {
        "cpu": cpu, "cores": CORES, "memory": mem, "os": platform.platform(),
        "filesystem": fs[-1].split()[1] if len(fs) > 1 else "?",
        "git": git("--version", cwd=WORK).strip(), "python": platform.python_version(),
        "load": os.getloadavg(),
    }


def run(argv, cwd, check=True):
    """Run a command; return (seconds, CompletedProcess)."""
    t0 = time.perf_counter()
    res = subprocess.run(argv, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} in {cwd}: rc={res.returncode}\n"
                           f"{res.stdout.decode(errors='replace')}"
                           f"{res.stderr.decode(errors='replace')}")
    return dt, res


def timed(argvs, cwd):
    """Run several commands one after the other; total seconds."""
    return sum(run(a, cwd)[0] for a in argvs)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


# ---------------------------------------------------------------- sessions


_serial = [0]


def new_worktree(repo, tag) -> tuple:
    """A new linked worktree of `repo` on a new branch: (path, branch)."""
    _serial[0] += 1
    name = f"{tag}-{_serial[0]}"
    path = os.path.join(WORK, "wt", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    git("worktree", "add", "-q", "-b", name, path, "main", cwd=repo)
    return path, name


def make_dirty(path, files, modified, new, staged=0):
    """Modify `modified` tracked files (append a line; the first `staged` of them
    staged) and write `new` untracked files."""
    step = max(1, len(files) // max(1, modified))
    chosen = files[::step][:modified]
    for rel in chosen:
        with open(os.path.join(path, rel), "a") as fh:
            fh.write("# changed by the benchmark\n")
    if staged:
        git("add", "--", *chosen[:staged], cwd=path)
    for i in range(new):
        d = os.path.join(path, "bench-new", f"d{i % 3}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"new{i}.txt"), "w") as fh:
            fh.write(f"new file {i}\n" * 20)


def make_ignored(path, n=3000):
    """An ignored tree of `n` small files (`node_modules/`, as an agent's install
    leaves it), ignored through the repository's info/exclude, so both sides of a
    measurement carry it."""
    with open(os.path.join(path, ".git"), encoding="utf-8") as fh:
        admin = fh.read().split("gitdir:", 1)[1].strip()
    with open(os.path.join(admin, "commondir"), encoding="utf-8") as fh:
        common = os.path.normpath(os.path.join(admin, fh.read().strip()))
    os.makedirs(os.path.join(common, "info"), exist_ok=True)
    exclude = os.path.join(common, "info", "exclude")
    have = ""
    if os.path.exists(exclude):
        with open(exclude, encoding="utf-8") as fh:
            have = fh.read()
    if "node_modules/" not in have:
        with open(exclude, "a", encoding="utf-8") as fh:
            fh.write("node_modules/\n")
    for i in range(n):
        d = os.path.join(path, "node_modules", f"pkg{i // 100}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.js"), "w") as fh:
            fh.write(f"module.exports = {i};\n")


def settle(paths):
    """Make the prepared worktrees look like ones a session has lived in: wait out
    git's racy-timestamp second, then let `git status` refresh each index once."""
    time.sleep(1.1)
    for p in paths:
        git("status", "--porcelain", cwd=p)
        git("status", "--porcelain", cwd=p)
    # Write back the setup's files now, so the timed commands do not pay for them.
    os.sync()


def register(path, sid):
    """Register a session with the real command (setup; not timed)."""
    run(["git", "ao", "add", path, "--id", sid, "-q"], path)


def cleanup(repo):
    """Forget the scratch worktrees and branches of `repo` between scenarios."""
    for ln in git("worktree", "list", "--porcelain", cwd=repo).splitlines():
        if ln.startswith("worktree ") and ln[9:] != repo and os.path.isdir(ln[9:]):
            shutil.rmtree(ln[9:], ignore_errors=True)
    git("worktree", "prune", cwd=repo)
    for b in git("for-each-ref", "--format=%(refname)", "refs/heads", "refs/ao",
                 "refs/bench", cwd=repo).split():
        if b != "refs/heads/main":
            git("update-ref", "-d", b, cwd=repo)
    shutil.rmtree(os.path.join(os.environ["AO_DATA_DIR"]), ignore_errors=True)
    shutil.rmtree(os.path.join(WORK, "wt"), ignore_errors=True)


# ---------------------------------------------------------------- process counts


def count_processes(fn) -> int:
    """How many git processes git-ao starts while `fn()` runs (git.set_trace)."""
    from git_ao import git as ao_git
    seen = []
    ao_git.set_trace(lambda argv, cwd: seen.append(argv[0]))
    try:
        fn()
    finally:
        ao_git.set_trace(None)
    return len(seen), sorted(set(seen))


def in_process_ctx():
    from git_ao import context
    from git_ao.store import database
    return context.Context(database.Store())


# ---------------------------------------------------------------- scenarios


def bench_preserve_dirty(repo, files, runs, out):
    """git ao-preserve of one session with 50 modified (10 staged) and 10 new files,
    against git stash push --include-untracked + git worktree remove --force."""
    ours, base, inproc = [], [], []
    for r in range(runs):
        a, _ = new_worktree(repo, "pd-ao")
        b, _ = new_worktree(repo, "pd-git")
        c, _ = new_worktree(repo, "pd-in")
        for p in (a, b, c):
            make_dirty(p, files, 50, 10, staged=10)
            make_ignored(p)
        settle([a, b, c])
        register(a, f"pd{r}")
        register(c, f"pdi{r}")
        pair = [
            lambda: ours.append(run(["git", "ao-preserve", f"pd{r}", "-q"], repo)[0]),
            lambda: base.append(timed([["git", "stash", "push", "-q", "--include-untracked"],
                                       ["git", "worktree", "remove", "--force", b]], b)),
        ]
        for f in (pair if r % 2 == 0 else pair[::-1]):
            f()
        from git_ao.preserve import workflow as preserve
        t0 = time.perf_counter()
        o = preserve.preserve(in_process_ctx(), [in_process_ctx().store.get(f"pdi{r}")])
        inproc.append(time.perf_counter() - t0)
        assert o[0].status == "ok", o[0]
        assert not os.path.exists(a) and not os.path.exists(b) and not os.path.exists(c)
    out["preserve"] = (median(ours), median(base))
    out["preserve_inproc"] = (median(inproc), median(base))
    cleanup(repo)


def bench_walk(repo, runs, out):
    """The removal witness alone: the walk of a 20,000-file worktree holding a
    3,000-file ignored tree, and the check after the move that nothing changed
    since (`witness.changed_after_move`, no write in between), each against git
    status --porcelain --ignored of it."""
    from git_ao.fs import walk
    from git_ao.proof import witness
    a, _ = new_worktree(repo, "walk")
    make_ignored(a)
    settle([a])
    admin = run(["git", "rev-parse", "--absolute-git-dir"], a)[1].stdout.decode().strip()
    ours, after, base = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        w = walk.walk(a)
        ours.append(time.perf_counter() - t0)
        base.append(run(["git", "status", "--porcelain", "--ignored"], a)[0])
        assert not w.blockers and len(w.entries) > 20000, (w.blockers, len(w.entries))
        t0 = time.perf_counter()
        changed, _ = witness.changed_after_move(w, a, {}, ["node_modules/"], admin)
        after.append(time.perf_counter() - t0)
        assert not changed, changed
    out["walk"] = (median(ours), median(base))
    out["walk_after"] = (median(after), median(base))
    cleanup(repo)


def bench_preserve_clean(repo, runs, out):
    """git ao-preserve of a clean 20,000-file worktree against git status --porcelain."""
    ours, base, inproc = [], [], []
    for r in range(runs):
        a, _ = new_worktree(repo, "pc-ao")
        c, _ = new_worktree(repo, "pc-in")
        settle([a, c])
        register(a, f"pc{r}")
        register(c, f"pci{r}")
        base.append(run(["git", "status", "--porcelain"], a)[0])
        ours.append(run(["git", "ao-preserve", f"pc{r}", "-q"], repo)[0])
        base.append(run(["git", "status", "--porcelain"], c)[0])
        from git_ao.preserve import workflow as preserve
        t0 = time.perf_counter()
        o = preserve.preserve(in_process_ctx(), [in_process_ctx().store.get(f"pci{r}")])
        inproc.append(time.perf_counter() - t0)
        assert o[0].status == "ok", o[0]
    out["clean"] = (median(ours), median(base))
    out["clean_inproc"] = (median(inproc), median(base))
    cleanup(repo)


def bench_checkpoint(repo, files, runs, out):
    """git ao checkpoint of a 20,000-file worktree: unchanged since its last
    checkpoint, against git status --porcelain of it; with 50 modified files (10
    staged) and 10 new, against git stash create on a twin prepared the same way."""
    ours, base = [], []
    a, _ = new_worktree(repo, "ck-same")
    settle([a])
    register(a, "cks")
    run(["git", "ao", "checkpoint", "cks", "-q"], repo)
    time.sleep(0.2)  # out of the racy window: the next checkpoint writes its stat file
    run(["git", "ao", "checkpoint", "cks", "-q"], repo)
    for r in range(max(runs, 5)):
        pair = [lambda: ours.append(run(["git", "ao", "checkpoint", "cks", "-q"], a)[0]),
                lambda: base.append(run(["git", "status", "--porcelain"], a)[0])]
        for f in (pair if r % 2 == 0 else pair[::-1]):
            f()
    res = run(["git", "ao", "checkpoint", "cks", "--json"], a)[1]
    assert json.loads(res.stdout)["results"][0].get("unchanged") is True, res.stdout
    out["checkpoint_unchanged"] = (median(ours), median(base))
    ours, base = [], []
    for r in range(runs):
        c, _ = new_worktree(repo, "ck-ao")
        d, _ = new_worktree(repo, "ck-git")
        for p in (c, d):
            make_dirty(p, files, 50, 10, staged=10)
        settle([c, d])
        register(c, f"ckd{r}")
        pair = [lambda: ours.append(run(["git", "ao", "checkpoint", f"ckd{r}", "-q"], c)[0]),
                lambda: base.append(run(["git", "stash", "create"], d)[0])]
        for f in (pair if r % 2 == 0 else pair[::-1]):
            f()
        n = len(json.loads(run(["git", "ao", "history", f"ckd{r}", "--json"], c)[1].stdout)[
            "entries"])
        assert n == 1, n
    out["checkpoint_dirty"] = (median(ours), median(base))
    cleanup(repo)


def bench_restore(repo, files, runs, out):
    """git ao-restore of that session against git worktree add + git stash apply --index
    of the same stash-shaped commit."""
    ours, base = [], []
    for r in range(runs):
        a, branch = new_worktree(repo, "rs")
        make_dirty(a, files, 50, 10, staged=10)
        settle([a])
        register(a, f"rs{r}")
        run(["git", "ao-preserve", f"rs{r}", "-q"], repo)
        commit = git("rev-parse", f"refs/ao/preserved/rs{r}", cwd=repo).strip()
        git("branch", f"{branch}-git", branch, cwd=repo)
        b = a + "-git"
        os.sync()
        pair = [
            lambda: ours.append(run(["git", "ao-restore", f"rs{r}", "-q"], repo)[0]),
            lambda: base.append(_restore_baseline(repo, b, f"{branch}-git", commit)),
        ]
        for f in (pair if r % 2 == 0 else pair[::-1]):
            f()
            os.sync()
        got = git("status", "--porcelain", "--untracked-files=all", cwd=a)
        want = git("status", "--porcelain", "--untracked-files=all", cwd=b)
        assert got == want and got, (got, want)
        _restore_correct(a, b)
    out["restore"] = (median(ours), median(base))
    cleanup(repo)


def _restore_baseline(repo, path, branch, commit):
    t0 = time.perf_counter()
    run(["git", "worktree", "add", "-q", path, branch], repo)
    run(["git", "stash", "apply", "-q", "--index", commit], path)
    return time.perf_counter() - t0


def _restore_correct(a, b):
    """Both restored worktrees hold the same index and files."""
    for p in (a, b):
        assert os.path.isdir(p), p
    ia = git("diff", "--cached", "--stat", cwd=a)
    ib = git("diff", "--cached", "--stat", cwd=b)
    assert ia == ib, (ia, ib)


def batch(repos, per_repo, modified=5, new=2, tag="b"):
    """Create and register per_repo dirty sessions in each repository (per_repo: a
    number, or one number per repository); return their ids and paths."""
    ids, paths = [], []
    counts = per_repo if isinstance(per_repo, list) else [per_repo] * len(repos)
    for i, repo in enumerate(repos):
        files = corpus.tracked_files(repo)
        for k in range(counts[i]):
            p, _ = new_worktree(repo, f"{tag}{i}")
            make_dirty(p, files, modified, new, staged=1)
            paths.append(p)
            ids.append(os.path.basename(p))
    time.sleep(1.1)
    os.sync()
    from git_ao.manage.register import register as register_session
    ctx = in_process_ctx()
    for p, sid in zip(paths, ids):
        register_session(ctx, p, session_id=sid)
    return ids, paths


def bench_jobs(runs, out):
    """git ao-preserve --all, then git ao-restore, over 50 sessions in 5 repositories,
    -j 1 against -j <cores>."""
    repos = [corpus.small_repo(i) for i in range(5)]
    times = {("preserve", 1): [], ("preserve", CORES): [], ("restore", 1): [],
             ("restore", CORES): []}
    for r in range(runs):
        for j in (1, CORES) if r % 2 == 0 else (CORES, 1):
            ids, paths = batch(repos, 10)
            dt, res = run(["git", "ao-preserve", "--all", "-q", "-j", str(j)], repos[0])
            times["preserve", j].append(dt)
            assert not any(os.path.exists(p) for p in paths)
            os.sync()
            dt, res = run(["git", "ao-restore", "-q", "-j", str(j)], repos[0])
            times["restore", j].append(dt)
            assert all(os.path.isdir(p) for p in paths)
            for repo in repos:
                cleanup(repo)
    out["jobs"] = (median(times["preserve", 1]), median(times["preserve", CORES]))
    out["restore_jobs"] = (median(times["restore", 1]), median(times["restore", CORES]))


SCALE_REPOS = 15


def bench_scaling(steps, out):
    """Total git ao-preserve --all and git ao-restore (from the trash) time for 10,
    50, 200 sessions spread evenly over 15 repositories (one run each)."""
    repos = [corpus.small_repo(i) for i in range(SCALE_REPOS)]
    rows = []
    for n in steps:
        use = repos[:min(len(repos), n)]
        per = [n // len(use) + (1 if i < n % len(use) else 0) for i in range(len(use))]
        ids, paths = batch(use, per, tag=f"sc{n}-")
        t_p, _ = run(["git", "ao-preserve", "--all", "-q"], use[0])
        assert not any(os.path.exists(p) for p in paths)
        t_r, _ = run(["git", "ao-restore", "-q"], use[0])
        assert all(os.path.isdir(p) for p in paths)
        rows.append({"sessions": len(ids), "preserve": t_p, "restore": t_r})
        for repo in use:
            cleanup(repo)
    out["scaling"] = rows


def bench_startup(runs, out):
    """Commands with little to do against a bare start of the interpreter the
    commands run under (`python -c pass`): git ao list with 10 sessions, the boot's
    git ao-restore -q with nothing pending, a session-id completion and
    git ao-preserve -h (also against python -c 'import click')."""
    exe = shutil.which("git-ao-preserve")
    with open(exe, encoding="utf-8") as fh:
        first = fh.readline()
    # The interpreter the installed scripts start (their #! line), else this one.
    py = first[2:].strip() if first.startswith("#!") and "python" in first else sys.executable
    times: dict[str, list[float]] = {k: [] for k in
                                     ("bare", "click", "help", "complete", "list", "boot")}
    repo = corpus.small_repo(0)
    ids, paths = batch([repo], 10, tag="st")
    comp_env = dict(os.environ, COMP_WORDS="git-ao-preserve ", COMP_CWORD="1",
                    _GIT_AO_PRESERVE_COMPLETE="bash_complete")
    for _ in range(max(runs, 10)):
        times["bare"].append(run([py, "-c", "pass"], WORK)[0])
        times["click"].append(run([py, "-c", "import click"], WORK)[0])
        times["help"].append(run(["git", "ao-preserve", "-h"], WORK, check=False)[0])
        times["list"].append(run(["git", "ao", "list"], repo)[0])
        times["boot"].append(run(["git", "ao-restore", "-q"], WORK, check=False)[0])
        t0 = time.perf_counter()
        res = subprocess.run([exe], env=comp_env, capture_output=True,
                             stdin=subprocess.DEVNULL, check=False)
        times["complete"].append(time.perf_counter() - t0)
    bare = median(times["bare"])
    out["startup_list"] = (median(times["list"]), bare)
    out["startup_boot"] = (median(times["boot"]), bare)
    out["startup_complete_bare"] = (median(times["complete"]), bare)
    out["startup_help"] = (median(times["help"]), median(times["click"]))
    out["startup_complete"] = (median(times["complete"]), median(times["click"]))
    out["completion_output"] = res.stdout.decode(errors="replace")[:200]
    cleanup(repo)


def bench_floors(repo, files, runs, out):
    """What bounds three rows, measured beside the same plain git: the least any
    checkpoint can do through git (`git stash create` on a copy of the index, with
    the untracked files' tree written beside it by `ls-files -o`, `update-index`
    and `write-tree`, in this process: no interpreter start, no trailers, no ref)
    against `git stash create`; the least a walk that keeps each file's permission
    bits and times can do in Python (`os.scandir` and one lstat per entry, nothing
    kept) against `git status --porcelain --ignored`; and loading sqlite3, which
    every listing of the database needs, against a bare interpreter start."""
    from concurrent.futures import ThreadPoolExecutor
    d, _ = new_worktree(repo, "fl-git")
    make_dirty(d, files, 50, 10, staged=10)
    make_ignored(d)
    settle([d])
    admin = git("rev-parse", "--absolute-git-dir", cwd=d).strip()
    copy, utmp = os.path.join(WORK, "floor-index"), os.path.join(WORK, "floor-untracked")

    def stash_on_copy():
        shutil.copyfile(os.path.join(admin, "index"), copy)
        return git("stash", "create", cwd=d, env=dict(os.environ, GIT_INDEX_FILE=copy))

    def untracked_tree():
        listed = git("ls-files", "-o", "--exclude-standard", "-z", cwd=d)
        if os.path.exists(utmp):
            os.unlink(utmp)
        env = dict(os.environ, GIT_INDEX_FILE=utmp)
        git("update-index", "--add", "-z", "--stdin", cwd=d, env=env, input=listed.encode())
        return git("write-tree", cwd=d, env=env)

    def scan_and_lstat(top):
        stack, n = [top], 0
        while stack:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    e.stat(follow_symlinks=False)
                    n += 1
                    if e.name != ".git" and e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        return n

    exe = shutil.which("git-ao-preserve")
    with open(exe, encoding="utf-8") as fh:
        first = fh.readline()
    py = first[2:].strip() if first.startswith("#!") and "python" in first else sys.executable
    times = {k: [] for k in ("ck", "stash", "walk", "status", "sqlite", "bare")}
    for r in range(max(runs, 5)):
        def floor():
            t0 = time.perf_counter()
            with ThreadPoolExecutor(2) as ex:
                a, b = ex.submit(stash_on_copy), ex.submit(untracked_tree)
                a.result(), b.result()
            times["ck"].append(time.perf_counter() - t0)
        pair = [floor, lambda: times["stash"].append(run(["git", "stash", "create"], d)[0])]
        for f in (pair if r % 2 == 0 else pair[::-1]):
            f()
        t0 = time.perf_counter()
        assert scan_and_lstat(d) > 20000
        times["walk"].append(time.perf_counter() - t0)
        times["status"].append(run(["git", "status", "--porcelain", "--ignored"], d)[0])
        times["sqlite"].append(run([py, "-c", "import sqlite3"], WORK)[0])
        times["bare"].append(run([py, "-c", "pass"], WORK)[0])
    out["floor_checkpoint"] = (median(times["ck"]), median(times["stash"]))
    out["floor_walk"] = (median(times["walk"]), median(times["status"]))
    out["floor_sqlite"] = (median(times["sqlite"]), median(times["bare"]))
    cleanup(repo)


def bench_process_counts(repo, files, out):
    """git processes git-ao starts for one session: preserve dirty, preserve clean, restore."""
    from git_ao.preserve import workflow as preserve
    from git_ao.restore import workflow as restore
    from git_ao.manage.register import register as register_session
    counts = {}
    a, _ = new_worktree(repo, "pn")
    make_dirty(a, files, 50, 10, staged=10)
    b, _ = new_worktree(repo, "pn-clean")
    settle([a, b])
    ctx = in_process_ctx()
    register_session(ctx, a, session_id="pn")
    register_session(ctx, b, session_id="pnc")
    counts["preserve"] = count_processes(lambda: preserve.preserve(ctx, [ctx.store.get("pn")]))
    counts["preserve_clean"] = count_processes(
        lambda: preserve.preserve(ctx, [ctx.store.get("pnc")]))
    counts["restore"] = count_processes(lambda: restore.restore(ctx, [ctx.store.get("pn")]))
    out["processes"] = counts
    cleanup(repo)


# ---------------------------------------------------------------- report


TARGETS = [
    # key, what, plain-git side, target text, met(ratio)
    ("preserve", "preserve, 50 modified + 10 new files, 20k-file worktree, 3,000 ignored",
     "git stash push -u + git worktree remove --force", "<= 0.5 (goal 0.35)",
     lambda x: x <= 0.5),
    ("preserve_inproc", "  same, in-process (no interpreter start-up)", "same", "(info)", None),
    ("walk", "  the walk alone (20k files + 3,000 ignored)", "git status --porcelain --ignored",
     "<= 1.2", lambda x: x <= 1.2),
    ("walk_after", "  the check after the move, nothing written since", "same", "(info)", None),
    ("clean", "preserve of a clean 20k-file worktree", "git status --porcelain", "<= 1.3",
     lambda x: x <= 1.3),
    ("clean_inproc", "  same, in-process (no interpreter start-up)", "same", "(info)", None),
    ("checkpoint_unchanged", "git ao checkpoint of an unchanged 20k-file worktree",
     "git status --porcelain", "<= 2 (goal 1.2)", lambda x: x <= 2),
    ("checkpoint_dirty", "git ao checkpoint, 50 modified (10 staged) + 10 new files, 20k-file "
     "worktree", "git stash create", "<= 1.0", lambda x: x <= 1.0),
    ("restore", "restore of that session", "git worktree add + git stash apply --index",
     "<= 0.1 (goal 0.05)", lambda x: x <= 0.1),
    ("jobs", "preserve --all, 50 sessions / 5 repos: -j 1 time / -j cores time",
     f"(speed-up with -j {CORES})", ">= 1.6", lambda x: x >= 1.6),
    ("restore_jobs", "restore of those 50 sessions: -j 1 time / -j cores time",
     f"(speed-up with -j {CORES})", "(info)", None),
    ("startup_list", "start-up: git ao list, 10 sessions", "python -c pass", "<= 4 (goal 2)",
     lambda x: x <= 4),
    ("startup_boot", "start-up: the boot's git ao-restore -q, nothing pending", "python -c pass",
     "<= 4 (goal 2)", lambda x: x <= 4),
    ("startup_complete_bare", "start-up: session-id completion", "python -c pass",
     "<= 4 (goal 2)", lambda x: x <= 4),
    ("startup_help", "start-up: git ao-preserve -h", "python -c 'import click'", "<= 1.5",
     lambda x: x <= 1.5),
    ("startup_complete", "start-up: session-id completion", "python -c 'import click'",
     "<= 1.5", lambda x: x <= 1.5),
    ("floor_checkpoint", "floor: stash create on an index copy + the untracked tree beside, "
     "in process", "git stash create", "(bound)", None),
    ("floor_walk", "floor: os.scandir + one lstat per entry, nothing kept",
     "git status --porcelain --ignored", "(bound)", None),
    ("floor_sqlite", "floor: python -c 'import sqlite3'", "python -c pass", "(bound)", None),
]


def table(out) -> str:
    lines = ["| measurement | git-ao (median s) | plain git (median s) | ratio | target | met |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for key, what, other, target, ok in TARGETS:
        if key not in out:
            continue
        a, b = out[key]
        ratio = a / b
        lines.append(f"| {what} (vs {other}) | {a:.3f} | {b:.3f} | {ratio:.2f} | {target} | "
                     f"{'-' if ok is None else ('yes' if ok(ratio) else 'NO')} |")
    if "processes" in out:
        lines += ["", "| git processes started per session | count | commands |",
                  "| --- | ---: | --- |"]
        for k, (n, cmds) in out["processes"].items():
            lines.append(f"| {k.replace('_', ' ')} | {n} | {' '.join(cmds)} |")
    if "scaling" in out:
        lines += ["", "| sessions (over 15 repositories) | preserve --all (s) | per session (s) | "
                  "restore (s) | per session (s) |", "| ---: | ---: | ---: | ---: | ---: |"]
        for row in out["scaling"]:
            n = row["sessions"]
            lines.append(f"| {n} | {row['preserve']:.2f} | {row['preserve'] / n:.3f} | "
                         f"{row['restore']:.2f} | {row['restore'] / n:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument("--quick", action="store_true", help="3 runs, scaling 10 and 50 only")
    ap.add_argument("--only", default="", help="comma list: preserve,walk,clean,checkpoint,restore,jobs,"
                    "startup,processes,floors,scaling")
    args = ap.parse_args(argv)
    runs = 3 if args.quick else args.runs
    only = set(filter(None, args.only.split(",")))
    isolate()
    info = machine()
    info["runs"] = runs
    print(f"machine: {info}", flush=True)
    repo = corpus.big_repo()
    files = corpus.tracked_files(repo)
    for i in range(SCALE_REPOS):
        cleanup(corpus.small_repo(i))
    cleanup(repo)
    out = {}
    t_start = time.time()
    steps = [
        ("startup", lambda: bench_startup(runs, out)),
        ("processes", lambda: bench_process_counts(repo, files, out)),
        ("preserve", lambda: bench_preserve_dirty(repo, files, runs, out)),
        ("walk", lambda: bench_walk(repo, runs, out)),
        ("clean", lambda: bench_preserve_clean(repo, runs, out)),
        ("checkpoint", lambda: bench_checkpoint(repo, files, runs, out)),
        ("restore", lambda: bench_restore(repo, files, runs, out)),
        ("jobs", lambda: bench_jobs(runs, out)),
        ("floors", lambda: bench_floors(repo, files, runs, out)),
        ("scaling", lambda: bench_scaling([10, 50] if args.quick else [10, 50, 200], out)),
    ]
    for name, fn in steps:
        if only and name not in only:
            continue
        t0 = time.time()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - report the step, keep the others
            out.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"
            print(f"  {name}: FAILED: {type(exc).__name__}: {exc}", flush=True)
        print(f"  {name}: {time.time() - t0:.0f} s (load {os.getloadavg()[0]:.2f})", flush=True)
        info.setdefault("load_per_step", {})[name] = round(os.getloadavg()[0], 2)
        write(info, out, argv, t_start, final=False)
    write(info, out, argv, t_start, final=True)
    shutil.rmtree(WORK, ignore_errors=True)
    return 1 if out.get("errors") else 0


_STAMP = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def write(info, out, argv, t_start, final):
    """Write the table so far to bench/results/<start time>.md and .json (after every
    step, so a failure late in the run loses nothing); print it at the end."""
    info["load_after"] = os.getloadavg()
    info["wall_seconds"] = round(time.time() - t_start)
    text = table(out)
    if final:
        print(text)
    os.makedirs(RESULTS, exist_ok=True)
    cmd = "python bench/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    with open(os.path.join(RESULTS, f"{_STAMP}.md"), "w") as fh:
        fh.write(f"command: `{cmd.strip()}`\n\nmachine: {json.dumps(info)}\n\n{text}\n")
        if out.get("errors"):
            fh.write(f"\nerrors: {json.dumps(out['errors'])}\n")
    with open(os.path.join(RESULTS, f"{_STAMP}.json"), "w") as fh:
        json.dump({"machine": info, "results": out}, fh, indent=1, default=str)
    if final:
        print(f"written: bench/results/{_STAMP}.md", flush=True)


if __name__ == "__main__":
    sys.exit(main())
