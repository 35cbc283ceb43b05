"""The benchmark corpus, built from the Python standard library that ships with
the interpreter running the benchmark, and cached under bench/.cache/.

- `big_repo()`: one repository whose single commit holds about 20,000 files
  (the stdlib's text sources, copied as many times as needed).
- `small_repo(n)`: generated repositories of a few hundred files for the batch
  and scaling runs.

Only plain git is used here (subprocess): this is the test bench, not git-ao.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache")
BIG_FILES = 20_000
SMALL_FILES = 300
_TEXT_EXT = (".py", ".txt", ".rst", ".cfg", ".toml", ".json", ".xml", ".html", ".c", ".h",
             ".pem", ".bat", ".ps1", ".sh", ".csv", ".tcl", ".md")
_SKIP_DIRS = {"site-packages", "__pycache__", "lib-dynload", "idlelib", "turtledemo"}


def git(*args, cwd, env=None, input=None) -> str:
    """Run plain git for setup; raise on failure; return stdout."""
    res = subprocess.run(["git", *map(str, args)], cwd=cwd, capture_output=True,
                         env=env, **({"input": input} if input is not None
                                     else {"stdin": subprocess.DEVNULL}))
    if res.returncode != 0:
        raise RuntimeError(f"git {' '.join(map(str, args))} in {cwd}: "
                           f"{res.stderr.decode(errors='replace')}")
    return res.stdout.decode(errors="replace")


def stdlib_sources() -> list:
    """Relative paths of the text sources of the stdlib, sorted (stable corpus)."""
    root = sysconfig.get_paths()["stdlib"]
    found = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS and not x.startswith("config-"))
        for f in sorted(files):
            if f.endswith(_TEXT_EXT):
                found.append(os.path.relpath(os.path.join(d, f), root))
    return found


def _fill(dest, count):
    """Copy stdlib sources into `dest` (copy0/, copy1/, ...) until `count` files exist."""
    root = sysconfig.get_paths()["stdlib"]
    src = stdlib_sources()
    n, k = 0, 0
    while n < count:
        for rel in src:
            if n >= count:
                break
            target = os.path.join(dest, f"copy{k}", rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.path.join(root, rel), target)
            n += 1
        k += 1
    with open(os.path.join(dest, ".gitignore"), "w") as fh:
        fh.write("*.log\nbuild/\n")
    return n


def _init(path, count):
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    git("init", "-q", "-b", "main", tmp, cwd=CACHE)
    _fill(tmp, count)
    git("add", "-A", cwd=tmp)
    git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q",
        "-m", "corpus", cwd=tmp)
    git("gc", "-q", cwd=tmp)
    os.rename(tmp, path)
    return path


def big_repo() -> str:
    """The ~20,000-file repository (built once, then reused from the cache)."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"big-{BIG_FILES}")
    if not os.path.isdir(os.path.join(path, ".git")):
        _init(path, BIG_FILES)
    return path


def small_repo(i) -> str:
    """Generated repository number `i` (a few hundred stdlib files)."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"small-{SMALL_FILES}-{i}")
    if not os.path.isdir(os.path.join(path, ".git")):
        _init(path, SMALL_FILES)
    return path


def tracked_files(repo) -> list:
    """Every tracked file of `repo` (git ls-files), sorted."""
    return sorted(git("ls-files", "-z", cwd=repo).split("\0")[:-1])
