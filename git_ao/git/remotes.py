"""Named git operations on remotes: list, fetch and push refs, each bounded in
time (`git.call_bounded` starts the process and kills its whole group when the
time is up).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from git_ao import git
from git_ao.git import parse
from git_ao.git.parse import ObjectId

# A URL git reaches over the network (scheme://..., or scp-like [user@]host:path
# with no '/' before the ':'): whether it answers is known only when pushing.
_NETWORK_URL = re.compile(r"^(?!file://)[A-Za-z][A-Za-z0-9+.-]*://|^[^/:]+:")


def network_dir(cwd: str) -> str:
    """Where to run a command that reaches a remote for the repository whose git dir
    is `cwd`: the main worktree when `cwd` is its `.git` directory, since git reads
    a relative remote URL (`git remote add backup ../backup.git`) from the
    worktree's top, and from a git dir it would miss; else `cwd` itself."""
    parent, base = os.path.split(cwd.rstrip("/"))
    if base == ".git" and os.path.isdir(parent):
        return parent
    return cwd


def remote_url(cwd: str, remote: str) -> str | None:
    """The URL of remote `remote` of the repository at `cwd` (`git config --get
    remote.<name>.url`), None when no such remote is configured."""
    res = git.call(["config", "--get", f"remote.{remote}.url"], cwd)
    return res.text.strip() or None if res.status == 0 else None


def push_url(cwd: str, remote: str) -> str | None:
    """The URL `git push` uses for the configured remote `remote` of the repository
    at `cwd` (`git remote get-url --push`: its pushurl, else its url, with
    insteadOf rewrites), None when no such remote is configured."""
    res = git.call(["remote", "get-url", "--push", remote], network_dir(cwd))
    return res.text.strip().splitlines()[0] or None if res.status == 0 and res.text.strip() \
        else None


def place(cwd: str, remote: str) -> str:
    """Where `remote` of the repository at `cwd` lies, the same string for two clones
    of one remote: the URL `git ls-remote` reads (`git ls-remote --get-url`, with
    insteadOf rewrites; `remote` itself when it is no configured remote) and the
    one `git push` writes, each local path made absolute as git reads it (from the
    main worktree) with its symbolic links resolved."""
    base = network_dir(cwd)
    res = git.call(["ls-remote", "--get-url", remote], base)
    fetch = res.text.strip() if res.status == 0 and res.text.strip() else remote
    return "\n".join(_place(u, base) for u in (fetch, push_url(cwd, remote) or fetch))


def _place(url: str, base: str) -> str:
    if _NETWORK_URL.match(url):
        return url.rstrip("/")
    path = os.path.expanduser(url.removeprefix("file://"))
    return os.path.realpath(os.path.join(base, path))


def push_problem(cwd: str, remote: str) -> str | None:
    """Why the repository at `cwd` can never push to `remote`, in one line; None when
    it can (a configured remote, a network URL, or an existing local repository).

    A network remote that is down is no problem here (the push waits for later);
    a name that is no configured remote, or a local path (given, or a configured
    remote's absolute URL) where no directory exists, is. Relative paths are
    taken as given by the caller (absolute by then: git would read them from
    the repository's directory). Raises nothing for a git failure (None)."""
    url = push_url(cwd, remote)
    if url is None and _NETWORK_URL.match(remote):
        return None
    if url is None and not _path_like(remote):
        return f"has no remote '{remote}' (git remote add {remote} URL)"
    target = url if url is not None else remote
    if _NETWORK_URL.match(target):
        return None
    path = target.removeprefix("file://")
    if url is not None and not os.path.isabs(os.path.expanduser(path)):
        path = os.path.join(network_dir(cwd), path)  # where git reads it from
    path = os.path.expanduser(path)
    if os.path.isabs(path) and not os.path.isdir(path):
        what = f"remote '{remote}' ({target})" if url is not None else f"'{remote}'"
        return f"cannot push to {what}: no repository is there"
    return None


def network_url(remote: str) -> bool:
    """Is `remote` a URL git reaches over the network (not a name or a local path)?"""
    return bool(_NETWORK_URL.match(remote))


def _path_like(remote: str) -> bool:
    return "/" in remote or remote.startswith((".", "~"))


def ls_remote(cwd: str, remote: str, *patterns: str,
              timeout: float) -> list[tuple[str, ObjectId]]:
    """(ref, oid) of every ref of `remote` matching one of `patterns` (`git ls-remote
    --refs <remote> <pattern>...`, e.g. 'refs/ao/preserved/*'), within `timeout`
    seconds.

    remote: a remote name, URL or path (never starting with '-'). Raises GitError
    when git fails or times out (status git.TIMED_OUT)."""
    res = git.call_bounded(["ls-remote", "--refs", remote, *patterns], network_dir(cwd),
                           timeout).check()
    return parse.ls_remote(res.text)


def fetch_refs(cwd: str, remote: str, refspecs: Sequence[str], *, timeout: float) -> None:
    """`git fetch --no-tags --no-write-fetch-head --recurse-submodules=no <remote>
    <refspec>...` within `timeout` seconds: fetches exactly the named refs (and the
    objects they need: a preserve commit brings its HEAD's history with it). Never
    runs gc (`--no-auto-gc`): the objects are used at once. Raises GitError when git
    fails or times out."""
    if not refspecs:
        return
    git.call_bounded(["fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                  "--recurse-submodules=no", "--quiet", remote, *refspecs],
                     network_dir(cwd), timeout).check()


def push_refs(cwd: str, remote: str, refspecs: Sequence[str],
              leases: Sequence[tuple[str, str]], *, timeout: float
              ) -> tuple[git.Completed, list[parse.PushedRef]]:
    """One `git push --porcelain --no-verify [--force-with-lease=<ref>:<expect>]...
    <remote> <refspec>...` within `timeout` seconds.

    leases: (remote ref, expected object id, or '' for "must not exist yet"): git
    updates or deletes that ref only while the remote still holds exactly that, so
    a concurrent update from another machine is rejected, never overwritten.
    Refs are updated one by one (not --atomic): one rejected ref leaves the others
    pushed. Returns the git.Completed (status git.TIMED_OUT when the time ran out; git
    exits 1 when any ref was rejected) and the per-ref lines git printed."""
    args = ["push", "--porcelain", "--no-verify", "--no-recurse-submodules"]
    args += [f"--force-with-lease={ref}:{expect}" for ref, expect in leases]
    res = git.call_bounded([*args, remote, *refspecs], network_dir(cwd), timeout)
    return res, parse.push_porcelain(res.text)


def scratch_env(objects: str, common_dir: str) -> dict[str, str]:
    """The environment that makes git in `common_dir` write new objects into the
    directory `objects` (and read the repository's own as alternates): a fetch
    then writes nothing into the repository, and no ref when it names no
    destination."""
    return {"GIT_OBJECT_DIRECTORY": objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(common_dir, "objects")}


def peek_refs(common_dir: str, remote: str, refs: Sequence[str], objects: str, *,
              timeout: float) -> None:
    """Fetch the objects of `refs` of `remote` into the scratch directory `objects`
    (`scratch_env`), writing no ref, no FETCH_HEAD and no object into the
    repository, within `timeout` seconds: what a dry run reads the commits'
    messages from. Raises GitError when git fails or times out."""
    if not refs:
        return
    git.call_bounded(["fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                      "--recurse-submodules=no", "--quiet", remote, *refs],
                     network_dir(common_dir), timeout,
                     env=scratch_env(objects, common_dir)).check()


def peeked_message(common_dir: str, commit: str, objects: str) -> tuple[int | None, str]:
    """The committer time (epoch seconds, None when unreadable) and message of a
    commit `peek_refs` fetched into `objects`. Raises GitError."""
    text = git.run(["log", "-1", "--format=%ct%n%B", commit], common_dir,
                   env=scratch_env(objects, common_dir)).decode("utf-8", "surrogateescape")
    stamp, _, message = text.partition("\n")
    return (int(stamp) if stamp.isdigit() else None), message


def missing_objects(cwd: str, oids: Sequence[str]) -> set[str]:
    """Those of `oids` the repository at `cwd` does not have, in one `git cat-file
    --batch-check` (it prints '<oid> missing' for each absent one). Raises GitError."""
    if not oids:
        return set()
    out = git.run(["cat-file", "--batch-check"], cwd, input="".join(f"{o}\n" for o in oids).encode())
    return {ln.split()[0] for ln in out.decode().splitlines() if ln.endswith(" missing")}
