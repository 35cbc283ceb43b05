"""Named git queries that read and change nothing: ignore rules, blob ids,
reachability, commit messages, index flags (what changes a worktree or writes an
object is in git_ao/git/__init__.py). The processes start in git_ao/git/process.py
(`git.call`); this module only names what they ask.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from git_ao import git, gitfiles, quickgit
from git_ao.errors import GitError, Usage
from git_ao.git import parse
from git_ao.git.parse import IndexFlags, ObjectId


def check_ignore(cwd: str, paths: Sequence[str]) -> set[str]:
    """Those of `paths` (str, relative to the worktree at `cwd`) that the repository
    ignores (`git check-ignore -z --stdin`; a path under an ignored directory
    counts as ignored). Raises GitError when git fails for another reason."""
    if not paths:
        return set()
    res = git.call(["check-ignore", "-z", "--stdin"], cwd, input=git.join_z(paths))
    if res.status not in (0, 1):
        res.check()
    return set(git.split_z(res.out))


def attr_values(cwd: str, paths: Sequence[str], attr: str) -> dict[str, str]:
    """{path: its value of the attribute `attr`} for each of `paths` (relative to the
    worktree at `cwd`; `git check-attr -z --stdin`): the value, or 'set', 'unset',
    'unspecified'. Raises GitError."""
    if not paths:
        return {}
    parts = git.run(["check-attr", "-z", "--stdin", attr], cwd,
                    input=git.join_z(paths)).split(b"\0")
    return {os.fsdecode(parts[i]): os.fsdecode(parts[i + 2])
            for i in range(0, len(parts) - 2, 3)}


def ls_tree_blobs(cwd: str, tree: str) -> dict[str, str]:
    """{path: object id} of every non-tree entry of `tree`, recursively
    (`git ls-tree -r -z`); gitlinks map to their commit."""
    return {p: oid for p, (_, oid) in ls_tree_entries(cwd, tree).items()}


# The empty tree's id, by the length of the repository's ids (SHA-1, SHA-256): git
# knows it without the object.
_EMPTY_TREE = {40: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
               64: "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"}


def trees_blobs(cwd: str, trees: Sequence[str]) -> dict[str, str]:
    """{path: object id} of every non-tree entry of each of `trees` (tree ids), a
    later tree's entry winning at the same path: `ls_tree_blobs` of each, in one
    `git diff-tree --stdin -r -z` of each against the empty tree (every entry
    comes as added, gitlinks too). Raises GitError."""
    if len(trees) == 1 or len({len(t) for t in trees}) != 1 or len(trees[0]) not in _EMPTY_TREE:
        out: dict[str, str] = {}
        for tree in trees:
            out.update(ls_tree_blobs(cwd, tree))
        return out
    empty = _EMPTY_TREE[len(trees[0])]
    return _merged(_diff_pairs(cwd, [(empty, t) for t in trees]))


def changed_and_listed(cwd: str, old: str, new: str, trees: Sequence[str]
                       ) -> tuple[list[str], dict[str, str] | None]:
    """(`changed_paths(cwd, old, new)` of two tree ids, what `trees_blobs(cwd,
    trees)` returns) from one `git diff-tree --stdin` (the removal proof's listing
    of the trees a capture wrote, one git process fewer per save); the listing is
    None where the ids' lengths differ (then nothing is listed). Raises GitError."""
    if len({len(old), len(new), *(len(t) for t in trees)}) != 1 or len(old) not in _EMPTY_TREE:
        return changed_paths(cwd, old, new), None
    empty = _EMPTY_TREE[len(old)]
    pairs = _diff_pairs(cwd, [(old, new), *((empty, t) for t in trees)])
    return list(pairs[0]), _merged(pairs[1:])


def _merged(listings: Sequence[dict[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for one in listings:
        out.update(one)
    return out


def _diff_pairs(cwd: str, pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """For each (old tree, new tree) of `pairs`, {path: the new object id (all zeros
    where the path is gone)} of every path that differs, recursively, in one
    `git diff-tree --stdin -r -z --no-renames --ignore-submodules=none`. Raises
    GitError."""
    argv = ["diff-tree", "--stdin", "-r", "-z", "--no-renames", "--ignore-submodules=none"]
    raw = git.run(argv, cwd, input="".join(f"{a} {b}\n" for a, b in pairs).encode())
    out: list[dict[str, str]] = []
    pos = 0
    for a, b in pairs:
        got: dict[str, str] = {}
        # Each pair's records follow its line "<old> <new>\n", as git writes it.
        header = f"{a} {b}\n".encode()
        if not raw.startswith(header, pos):
            raise GitError(argv, 0, f"no diff of tree {b} where it was expected")
        pos += len(header)
        while raw.startswith(b":", pos):
            meta_end = raw.index(b"\0", pos)
            path_end = raw.index(b"\0", meta_end + 1)
            got[os.fsdecode(raw[meta_end + 1:path_end])] = \
                raw[pos + 1:meta_end].split()[3].decode()
            pos = path_end + 1
        out.append(got)
    if pos != len(raw):
        raise GitError(argv, 0, "more output than the trees asked for")
    return out


def blobs_by_path(cwd: str, trees: Sequence[str]) -> dict[str, set[str]]:
    """{path: the object ids it has in any of `trees`} (`ls_tree_blobs` of each): the
    copies of each file some save holds. Raises GitError."""
    known: dict[str, set[str]] = {}
    for tree in trees:
        for p, oid in ls_tree_blobs(cwd, tree).items():
            known.setdefault(p, set()).add(oid)
    return known


def ls_tree_paths(cwd: str, tree: str, under: str | None = None) -> list[str]:
    """Every file path in `tree`, recursively (`git ls-tree -r -z --name-only`); under:
    only those inside that directory."""
    if under:
        return git.split_z(git.run(["--literal-pathspecs", "ls-tree", "-r", "-z", "--name-only",
                                    tree, "--", f"{under}/"], cwd))
    return git.split_z(git.run(["ls-tree", "-r", "-z", "--name-only", tree], cwd))


def tree_kinds(cwd: str, tree: str, paths: Sequence[str]) -> dict[str, str]:
    """{path: its type in `tree`} of those of `paths` the tree (or commit) holds:
    'blob' (a file or a symbolic link), 'tree' or 'commit' (a gitlink). Each path
    is looked up as an entry of its own, a directory not listed into (`git
    --literal-pathspecs ls-tree -t -z TREE -- PATHS`: without -t, a tree on the
    way to another path named is passed through unshown). Raises GitError."""
    wanted = sorted(set(paths))
    out: dict[str, str] = {}
    for chunk in _chunks(wanted):
        raw = git.run(["--literal-pathspecs", "ls-tree", "-t", "-z", tree, "--", *chunk], cwd)
        for rec in raw.split(b"\0"):
            meta, _, name = rec.partition(b"\t")
            if name:
                out[os.fsdecode(name)] = meta.split()[1].decode()
    return {p: out[p] for p in wanted if p in out}


def tree_entries_at(cwd: str, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """{path: (mode, object id)} of those of `paths` that are files, symbolic links or
    gitlinks in `tree` (`git --literal-pathspecs ls-tree -z TREE -- PATHS`).
    Raises GitError."""
    out: dict[str, tuple[str, str]] = {}
    for chunk in _chunks(sorted(set(paths))):
        raw = git.run(["--literal-pathspecs", "ls-tree", "-z", tree, "--", *chunk], cwd)
        for rec in raw.split(b"\0"):
            meta, _, name = rec.partition(b"\t")
            if name:
                mode, kind, oid = meta.decode().split()
                if kind != "tree":
                    out[os.fsdecode(name)] = (mode, oid)
    return {p: out[p] for p in paths if p in out}


def ls_tree_entries(cwd: str, tree: str) -> dict[str, tuple[str, str]]:
    """{path: (mode, object id)} of every non-tree entry of `tree`, recursively
    (`git ls-tree -r -z`); the mode as git writes it ('100644', '100755',
    '120000', '160000'). Raises GitError."""
    out = {}
    for rec in git.run(["ls-tree", "-r", "-z", tree], cwd).split(b"\0"):
        if rec:
            meta, _, path = rec.partition(b"\t")
            mode, _, oid = meta.decode().split()
            out[os.fsdecode(path)] = (mode, oid)
    return out


def hash_paths(cwd: str, paths: Sequence[str], env: dict[str, str] | None = None) -> list[str]:
    """The blob id git would store for each of `paths` (relative to the worktree
    at `cwd`), with the repository's clean filters and end-of-line rules
    (`git hash-object --stdin-paths`); nothing is written. It reads no index, so a
    file whose index blob holds a CRLF is hashed as an untracked one would be
    (`index.added_ids` reads it as `git add` does). Every path goes in
    C-quoted: git unquotes a line that starts with a double quote and drops a
    trailing carriage return, so a plain line can name another file."""
    if not paths:
        return []
    out = git.run(["hash-object", "--stdin-paths"], cwd, env=env,
                  input=b"".join(parse.quote_c(p) + b"\n" for p in paths))
    ids = out.decode().split()
    if len(ids) != len(paths):
        raise GitError(["hash-object", "--stdin-paths"], 0,
                       f"{len(ids)} blob ids for {len(paths)} paths")
    return ids


def crlf_in_index(cwd: str, paths: Sequence[str], env: dict[str, str] | None = None
                  ) -> dict[str, tuple[str, str]]:
    """{path: (mode, object id)} of the index entries of those of `paths` whose blob
    is text holding a CRLF (`git ls-files -s --eol`: i/crlf or i/mixed), as git's
    safer autocrlf judges it: stage 0, else stage 2 (ours, in a merge), as git reads
    it. env: another repository, worktree or index (`index.added_ids_in`). Raises
    GitError."""
    found: dict[str, tuple[str, str]] = {}
    ours: dict[str, tuple[str, str]] = {}
    for chunk in _chunks(paths):
        out = git.run(["--literal-pathspecs", "ls-files", "-s", "--eol", "-z", "--", *chunk],
                      cwd, env=env)
        for rec in out.split(b"\0"):
            meta, _, rest = rec.partition(b"\t")
            eol, sep, path = rest.partition(b"\t")
            fields, info = meta.split(), eol.split()
            if not sep or len(fields) != 3 or not info or info[0] not in (b"i/crlf", b"i/mixed"):
                continue
            mode, oid, stage = (f.decode() for f in fields)
            if stage in ("0", "2"):
                (found if stage == "0" else ours)[os.fsdecode(path)] = (mode, oid)
    return {**ours, **found}


def _chunks(paths: Sequence[str], size: int = 64 * 1024) -> list[Sequence[str]]:
    """`paths` cut into runs of at most `size` bytes, so that each run fits on one
    command line (git reads no pathspec from stdin for every command)."""
    out: list[Sequence[str]] = []
    start, used = 0, 0
    for i, p in enumerate(paths):
        used += len(os.fsencode(p)) + 1
        if used > size and i > start:
            out.append(paths[start:i])
            start, used = i, len(os.fsencode(p)) + 1
    if start < len(paths):
        out.append(paths[start:])
    return out


def status_porcelain(cwd: str) -> git.Completed:
    """`git status --porcelain=v2 -z --untracked-files=all --ignore-submodules=none`
    of another repository (a nested one): the git.Completed, whatever its status."""
    return git.call(["status", "--porcelain=v2", "-z", "--untracked-files=all",
                 "--ignore-submodules=none"], cwd)


def unreachable_from_all(cwd: str, commits: Sequence[str]) -> list[ObjectId]:
    """Those of `commits` that no ref and no worktree's HEAD reaches
    (`git rev-list --no-walk <commits> --not --all`, from inside a worktree)."""
    if not commits:
        return []
    res = git.call(["rev-list", "--no-walk", *commits, "--not", "--all"], cwd)
    return [ObjectId(c) for c in res.text.split()] if res.status == 0 else []


def hash_bytes(cwd: str, data: bytes) -> str:
    """The blob id git gives `data` in the repository at `cwd` (its hash algorithm);
    nothing is written (`git hash-object --stdin`)."""
    return git.line(["hash-object", "--stdin"], cwd, input=data)


def objects_complete(cwd: str, commit: str, known: str, *more: str) -> bool:
    """Does every object `commit` needs, beyond what `known` (and `more`) reach,
    exist? (`git rev-list --objects <commit> --not <known>...` fails on a missing
    one.)"""
    return git.call(["rev-list", "--objects", commit, "--not", known, *more],
                    cwd).status == 0


def fetch_refspecs(cwd: str, conf: parse.Config | None = None) -> list[tuple[str, str]]:
    """[(key, refspec)] of every `remote.<name>.fetch` setting; conf: the repository's
    `config_map`, read already (no process then)."""
    if conf is not None:
        return conf.values_of("remote.", ".fetch")
    res = git.call(["config", "-z", "--get-regexp", r"^remote\..*\.fetch$"], cwd)
    if res.status != 0:
        return []
    out = []
    for rec in res.out.split(b"\0"):
        if rec:
            key, _, value = rec.decode("utf-8", "replace").partition("\n")
            out.append((key, value))
    return out


def trailer(cwd: str, commit: str, key: str) -> str:
    """The value of trailer `key` in `commit`'s message ('' when absent)
    (`git log -1 --format=%(trailers:key=<key>,valueonly)`). Raises GitError when
    `commit` is not a commit."""
    return git.line(["log", "-1", f"--format=%(trailers:key={key},valueonly)", commit], cwd)


def changed_between(cwd: str, a: str | None, b: str | None) -> list[str]:
    """Paths whose entry differs between trees (or commits) `a` and `b`, recursively
    (`git diff-tree -r -z --name-only --no-renames`). Either may be None: every path
    of the other counts then."""
    if a is None:
        return [] if b is None else ls_tree_paths(cwd, b)
    if b is None:
        return ls_tree_paths(cwd, a)
    return git.split_z(git.run(["diff-tree", "-r", "-z", "--name-only", "--no-renames", a, b], cwd))


def index_matches_tree(cwd: str, tree: str) -> bool:
    """Does the index of the worktree at `cwd` name exactly the entries of `tree`, as
    the tree `git write-tree` would write from it? Intent-to-add entries count as
    absent (write-tree leaves them out); an unmerged entry is a difference.
    (`git diff-index --cached --quiet --ita-invisible-in-index`: reads the index,
    writes nothing.) Raises GitError when git cannot compare them."""
    res = git.call(["diff-index", "--cached", "--quiet", "--ita-invisible-in-index", tree, "--"],
                   cwd)
    if res.status not in (0, 1):
        res.check()
    return res.status == 0


def head_reflog_commits(cwd: str) -> list[ObjectId]:
    """`reflog_commits(cwd, "HEAD")` of the worktree whose top is `cwd`, read from
    its `logs/HEAD` file (each entry's new value, newest first) when the repository
    keeps its refs in files; `git log -g` otherwise (a reftable, or no `.git` at
    `cwd` to read)."""
    git_dir = _git_dir_of(cwd)
    if git_dir is None or os.path.exists(os.path.join(gitfiles.common_dir(git_dir), "reftable")):
        return reflog_commits(cwd, "HEAD")
    try:
        with open(os.path.join(git_dir, "logs", "HEAD"), "rb") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        return []
    except OSError:
        return reflog_commits(cwd, "HEAD")
    out = []
    for ln in reversed(lines):
        parts = ln.split(b" ", 2)
        if len(parts) == 3 and len(parts[1]) in (40, 64) and parts[1].strip(b"0"):
            out.append(ObjectId(parts[1].decode("ascii", "replace")))
    return out


def _git_dir_of(path: str) -> str | None:
    """The git dir a worktree's `.git` names: the directory itself, or the `gitdir:`
    line of a `.git` file (a linked worktree); None when neither reads."""
    dot = os.path.join(path, ".git")
    if os.path.isdir(dot):
        return dot
    return gitfiles.read_gitfile(dot)


def reflog_commits(cwd: str, ref: str) -> list[ObjectId]:
    """Every commit the reflog of `ref` names, newest first (`git log -g --format=%H`);
    [] when the ref or its reflog is gone."""
    res = git.call(["log", "-g", "--format=%H", ref, "--"], cwd)
    return [ObjectId(c) for c in res.text.split()] if res.status == 0 else []


def ignored_dirs(work_tree: str) -> list[str]:
    """The wholly ignored directories of the worktree at `work_tree`, relative, with
    no trailing '/': what `git status` never enters (`git ls-files -z --others
    --ignored --exclude-standard --directory`). Raises GitError."""
    out = git.split_z(git.run(["ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                               "--directory"], work_tree))
    return [p.rstrip("/") for p in out if p.endswith("/")]


def ignored_in(common_dir: str, work_tree: str, index_file: str) -> list[str]:
    """The ignored paths present in the directory `work_tree` (a worktree taken away,
    whose `.git` may point at an admin dir that is gone), judged with the index file
    `index_file` (its copy) and the repository at `common_dir`:
    `git ls-files -z --others --ignored --exclude-standard --directory`. A wholly
    ignored directory is listed once, ending in '/'. Raises GitError."""
    env = _taken_away_env(common_dir, work_tree, index_file)
    return git.split_z(git.run(["ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                        "--directory"], work_tree, env=env))


def check_ignore_in(common_dir: str, work_tree: str, index_file: str,
                    paths: Sequence[str]) -> set[str]:
    """`check_ignore` for a worktree taken away (see `ignored_in`): those of `paths`
    the repository ignores there. Raises GitError when git fails otherwise."""
    if not paths:
        return set()
    env = _taken_away_env(common_dir, work_tree, index_file)
    res = git.call(["check-ignore", "-z", "--stdin"], work_tree, env=env, input=git.join_z(paths))
    if res.status not in (0, 1):
        res.check()
    return set(git.split_z(res.out))


def check_ignore_by_rules_in(git_dir: str, work_tree: str, paths: Sequence[str]) -> set[str]:
    """Those of `paths` (relative) that the `.gitignore` files in the directory
    `work_tree` ignore, with the rules of the repository whose git dir (a linked
    worktree's admin dir) is `git_dir`: info/exclude, core.excludesFile (`git
    check-ignore --no-index`, so no index entry counts; a path under an ignored
    directory counts as ignored, whether or not it exists there). Raises GitError."""
    if not paths:
        return set()
    env = {"GIT_DIR": git_dir, "GIT_WORK_TREE": work_tree}
    res = git.call(["check-ignore", "--no-index", "-z", "--stdin"], work_tree, env=env,
                   input=git.join_z(paths))
    if res.status not in (0, 1):
        res.check()
    return set(git.split_z(res.out))


def _taken_away_env(common_dir: str, work_tree: str, index_file: str | None = None
                    ) -> dict[str, str]:
    """The environment that points git at a worktree taken away: its repository,
    the directory itself and, when given, the admin copy's index."""
    env = {"GIT_DIR": common_dir, "GIT_WORK_TREE": work_tree}
    if index_file:
        env["GIT_INDEX_FILE"] = index_file
    return env


def skip_worktree_in(common_dir: str, work_tree: str, index_file: str) -> set[str]:
    """The skip-worktree paths of the index file `index_file` of a worktree taken
    away (see `ignored_in`): one `git ls-files -v -z`. Raises GitError."""
    env = _taken_away_env(common_dir, work_tree, index_file)
    return set(parse.index_flags(git.run(["ls-files", "-v", "-z"], work_tree, env=env))
               .skip_worktree)


def expiry_date(value: str) -> int | None:
    """Parse a date exactly as git parses expiry dates (`git config
    --type=expiry-date`: 2.weeks.ago, yesterday, 2024-01-01, now, never).

    Returns epoch seconds (0 for 'never'), or None for 'now' and 'all' (everything
    has expired). Raises Usage for what git cannot parse."""
    res = git.call(["-c", f"ao.expire={value}", "config", "--type=expiry-date", "ao.expire"], "/")
    text = res.text.strip()
    if res.status != 0 or not text.isdigit():
        raise Usage(f"malformed expiration date '{value}'")
    n = int(text)
    return None if n >= 2**63 else n


def changed_paths(cwd: str, old: str, new: str, *, deleted_only: bool = False) -> list[str]:
    """The paths that differ between two trees or commits (`git diff-tree -r -z
    --name-only --no-renames`, no worktree scan); deleted_only: only those `new` lacks."""
    args = ["diff-tree", "-r", "-z", "--name-only", "--no-renames"]
    args += ["--diff-filter=D"] if deleted_only else []
    return git.split_z(git.run([*args, old, new], cwd))


def diff_stat(common_dir: str, commit: str) -> str:
    """What `git stash show --stat --include-untracked <commit>` prints.

    stash insists on a work tree although `show` reads none, so the common dir
    stands in for one: this works for bare repositories too."""
    env = {"GIT_DIR": common_dir, "GIT_WORK_TREE": common_dir}
    return git.run(["stash", "show", "--stat", "--include-untracked", commit], common_dir,
               env=env).decode("utf-8", "replace")


def unmerged_paths(cwd: str) -> list[str]:
    """Paths with unmerged index entries (`git diff --name-only --diff-filter=U -z`)."""
    return sorted(set(git.split_z(git.run(["diff", "--name-only", "--diff-filter=U", "-z"], cwd))))


def staged_and_unstaged(cwd: str) -> tuple[set[str], set[str]]:
    """The paths of worktree `cwd` with staged changes (HEAD against the index) and
    with unstaged ones (the index against the files), unmerged ones in neither,
    in two `git diff --name-only -z --no-renames` runs."""
    unmerged = set(unmerged_paths(cwd))
    staged = set(git.split_z(git.run(["diff", "--cached", "--name-only", "-z", "--no-renames"],
                                     cwd))) - unmerged
    unstaged = set(git.split_z(git.run(["diff", "--name-only", "-z", "--no-renames"], cwd))) \
        - unmerged
    return staged, unstaged


def branch_exists(cwd: str, branch: str) -> bool:
    """Does refs/heads/<branch> exist?"""
    return git.call(["show-ref", "--verify", "-q", f"refs/heads/{branch}"], cwd).status == 0


def index_flags(cwd: str, *, index_file: str | None = None) -> IndexFlags:
    """Read the index flags with one `git ls-files -v -z` (no worktree scan).

    Returns IndexFlags. Raises GitError."""
    return parse.index_flags(git.run(["ls-files", "-v", "-z"], cwd, env=git.index_env(index_file)))


def config_map(cwd: str) -> parse.Config:
    """Every effective git config value (`git config -z --list`) as {lower-case key: last
    value}, with every pair in order (`parse.Config`)."""
    return parse.config_map(git.run(["config", "-z", "--list"], cwd))


def config_is_shared(conf: parse.Config) -> bool:
    """Does the listing `config_map` read in one worktree hold for every worktree of
    its repository? Not when it names an include (`include.path`,
    `includeIf.<condition>.path`: a condition such as `gitdir:` or `onbranch:`
    may hold in one worktree only) or reads each worktree's own `config.worktree`
    (`extensions.worktreeConfig`)."""
    if any(k == "include.path" or (k.startswith("includeif.") and k.endswith(".path"))
           for k in conf):
        return False
    # A key given with no value (an empty one in the listing) is true to git.
    return conf.get("extensions.worktreeconfig", "false").lower() in ("false", "no", "off", "0")


def compares_every_stat_field(conf: parse.Config) -> bool:
    """Does the user's git, with this config, compare a file's stat data as the git
    processes of git-ao do (quickgit.GLOBAL_OPTS: ctime trusted, core.checkStat
    default, core.ignoreStat off)? Judged on the values before the options
    git-ao gives on the command line, which git lists last; False when the
    listing does not end with them (the user's values cannot be told apart)."""
    forced = [tuple(o.split("=", 1)) for o in quickgit.GLOBAL_OPTS[1::2]]
    pairs = list(conf.pairs)
    n = len(forced)
    if len(pairs) < n or [(k.lower(), v) for k, v in pairs[-n:]] != \
            [(k.lower(), v) for k, v in forced]:
        return False
    user = {k.lower(): v.lower() for k, v in pairs[:-n]}
    # A key given with no value is true to git.
    return user.get("core.trustctime", "true") in ("true", "yes", "on", "1", "") \
        and user.get("core.checkstat", "default") == "default" \
        and user.get("core.ignorestat", "false") in ("false", "no", "off", "0")


# A file written this recently may be written again within the same tick of the
# clock, keeping its stat data (two seconds: file systems that stamp whole seconds).
_CONFIG_SETTLED_NS = 2_000_000_000


# The stat data of the files a config listing is read from (`config_stamp`).
ConfigStamp = tuple[tuple[int, int, int, int] | None, ...]


def config_stamp(common_dir: str) -> ConfigStamp | None:
    """The stat data (size, mtime, ctime, inode; None for a file that is not there)
    of every file a listing `config_is_shared` accepts is read from: the
    repository's `config`, the global files (GIT_CONFIG_GLOBAL, else
    `~/.gitconfig` and the XDG one) and the system one (GIT_CONFIG_SYSTEM, else
    `/etc/gitconfig` and `etc/gitconfig` beside the directory of the git on PATH,
    unless GIT_CONFIG_NOSYSTEM). The same stamp later says those files are as they
    were. None when it cannot: GIT_CONFIG set (git config then reads that file
    alone), or a file changed in the last two seconds."""
    env = os.environ
    if env.get("GIT_CONFIG"):
        return None
    files = [os.path.join(common_dir, "config")]
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        xdg = env.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        files += [os.path.expanduser("~/.gitconfig"), os.path.join(xdg, "git", "config")]
    if env.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        if env.get("GIT_CONFIG_SYSTEM"):
            files.append(env["GIT_CONFIG_SYSTEM"])
        else:
            files.append("/etc/gitconfig")
            exe = gitfiles.on_path("git")
            for d in {os.path.dirname(exe), os.path.dirname(os.path.realpath(exe))} if exe else ():
                files.append(os.path.join(os.path.dirname(d), "etc", "gitconfig"))
    import time
    settled = time.time_ns() - _CONFIG_SETTLED_NS
    stamp: list[tuple[int, int, int, int] | None] = []
    for f in files:
        try:
            st = os.stat(f)
        except (FileNotFoundError, NotADirectoryError):
            stamp.append(None)
            continue
        except OSError:
            return None
        if st.st_mtime_ns > settled or st.st_ctime_ns > settled:
            return None
        stamp.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(stamp)


def has_unpushed_work(cwd: str) -> bool:
    """Does the repository at `cwd` have a commit on no remote-tracking ref (HEAD, a
    branch or a tag), or a stash? Unknown (git fails) counts as yes."""
    res = git.call(["rev-list", "-n", "1", "HEAD", "--branches", "--tags", "--not", "--remotes"],
               cwd)
    return res.status != 0 or bool(res.text.strip()) or bool(git.rev_parse(cwd, "refs/stash"))


def commit_time_and_message(cwd: str, commit: str) -> tuple[int | None, str]:
    """The committer time (epoch seconds, None when unreadable) and raw message of
    `commit`, in one `git log`."""
    text = git.run(["log", "-1", "--format=%ct%n%B", commit], cwd).decode(
        "utf-8", "surrogateescape")
    stamp, _, message = text.partition("\n")
    return (int(stamp) if stamp.isdigit() else None), message


def is_reachable_from_refs(cwd: str, commit: str) -> bool:
    """Is `commit` contained in any branch, tag or remote-tracking ref, or a preserve ref?"""
    out = git.run(["for-each-ref", "--count=1", "--contains", commit, "--format=%(refname)",
                   "refs/heads", "refs/tags", "refs/remotes", "refs/ao"], cwd)
    return bool(out.strip())


def is_ancestor(cwd: str, ancestor: str, descendant: str) -> bool:
    """Is commit `ancestor` reachable from `descendant` (`git merge-base --is-ancestor`,
    status 0 yes, 1 no)? Raises GitError on any other status (an unknown commit)."""
    res = git.call(["merge-base", "--is-ancestor", ancestor, descendant], cwd)
    if res.status not in (0, 1):
        res.check()
    return res.status == 0


def is_ancestor_here(cwd: str, ancestor: str, descendant: str) -> bool:
    """`is_ancestor`, False where the repository lacks either commit (another
    machine's): no chain of this repository leads there."""
    try:
        return is_ancestor(cwd, ancestor, descendant)
    except GitError:
        return False


def blob_bytes(cwd: str, oid: str) -> bytes:
    """The content of blob `oid` as stored (`git cat-file blob`, no filters).
    Raises GitError when it is missing or not a blob."""
    return git.run(["cat-file", "blob", oid], cwd)


def checkout_bytes(cwd: str, oid: str, rel: str) -> bytes:
    """The bytes a checkout writes for blob `oid` at the path `rel`: its smudge
    filter and end-of-line rules applied (`git cat-file --filters`). Raises
    GitError."""
    return git.run(["cat-file", "--filters", f"--path={rel}", oid], cwd)


def commit_object(cwd: str, commit: str) -> tuple[str, list[str], str]:
    """(tree id, parent ids, message) read from the commit object itself: from its
    loose object file when there is one (`loose_object`), else `git cat-file
    commit`. Raises GitError when the object is missing or not a commit."""
    body = loose_object(cwd, commit, b"commit")
    if body is None:
        body = git.run(["cat-file", "commit", commit], cwd)
    tree, parents, message = _commit_parts(body)
    return tree, parents, message.decode("utf-8", "replace")


def _commit_parts(body: bytes) -> tuple[str, list[str], bytes]:
    """(tree id, parent ids, message bytes) of a commit object's content."""
    tree, parents = "", []
    headers, _, message = body.partition(b"\n\n")
    for ln in headers.split(b"\n"):
        key, _, value = ln.partition(b" ")
        if key == b"tree":
            tree = value.decode()
        elif key == b"parent":
            parents.append(value.decode())
    return tree, parents, message


def loose_object(cwd: str, oid: str, kind: bytes) -> bytes | None:
    """The content of the object `oid` of type `kind` (b"commit"...) read from its
    loose file (`objects/<2 hex>/<rest>`, zlib-compressed `<type> <size>\\0<content>`)
    in the repository of the worktree or git dir `cwd`, with no git process; None
    whenever only git can tell (packed, in an alternate, another type, unreadable),
    so the caller asks git. The object is not hashed again: `git cat-file` does not
    either."""
    git_dir = cwd if os.path.isfile(os.path.join(cwd, "HEAD")) else _git_dir_of(cwd)
    if git_dir is None or len(oid) not in (40, 64):
        return None
    import zlib
    try:
        with open(os.path.join(gitfiles.common_dir(git_dir), "objects", oid[:2], oid[2:]), "rb") as fh:
            raw = zlib.decompress(fh.read())
    except (OSError, zlib.error):
        return None
    header, nul, content = raw.partition(b"\0")
    if not nul or header != kind + b" %d" % len(content):
        return None
    return content


def refs_by_files(git_dir: str, refs: Sequence[str], per_worktree: Sequence[str]
                  ) -> dict[str, git.RefRead] | None:
    """What `git.read_refs` run in the worktree whose private git dir is `git_dir`
    gives for the shared refs `refs` (full names) and the per-worktree prefixes
    `per_worktree` ('refs/worktree/'...), read from git's files with no process,
    when they tell for sure: each of `refs` is absent (no loose file, no line in
    `packed-refs`) or names, in its loose file or `packed-refs` line, a commit whose
    loose object reads, and no per-worktree ref exists. None whenever only git can
    tell (a reftable, a symbolic or nested ref, a packed or missing object, a
    per-worktree ref, a message `%(contents)` would give otherwise: a NUL, a
    signature block), so the caller asks git."""
    common = gitfiles.common_dir(git_dir)
    if os.path.exists(os.path.join(common, "reftable")):
        return None
    for prefix in per_worktree:
        try:
            if os.listdir(os.path.join(git_dir, *prefix.rstrip("/").split("/"))):
                return None
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError:
            return None
    tips: dict[str, ObjectId] = {}
    for ref in refs:
        try:
            with open(os.path.join(common, *ref.split("/")), "rb") as fh:
                value = fh.read().strip()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:  # a directory: refs below the name, which the pattern matches too
            return None
        oid = _object_id(value)
        if oid is None:
            return None
        tips[ref] = oid
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as fh:
            packed = b"\n" + fh.read()
    except FileNotFoundError:
        packed = b""
    except OSError:
        return None
    if not packed.endswith(b"\n"):
        packed += b"\n"
    if any(b" " + os.fsencode(prefix) in packed for prefix in per_worktree):
        return None
    for ref in refs:
        name = b" " + os.fsencode(ref)
        if name + b"/" in packed:
            return None
        at = packed.find(name + b"\n")
        if at >= 0 and ref not in tips:
            oid = _object_id(packed[packed.rfind(b"\n", 0, at) + 1:at])
            if oid is None:
                return None
            tips[ref] = oid
    got = {}
    for ref, oid in sorted(tips.items()):
        body = loose_object(git_dir, oid, b"commit")
        if body is None:
            return None
        tree, parents, message = _commit_parts(body)
        message = message.lstrip(b"\n")
        if b"\0" in message or b"-----BEGIN " in message:
            return None
        got[ref] = git.RefRead(ref, oid, tree, parents, message.decode("utf-8", "replace"))
    return got


def branch_tip(common_dir: str, branch: str) -> ObjectId | None:
    """The commit `refs/heads/<branch>` points at, None when the branch does not
    exist, with no git process as `ref_tip` reads it."""
    return ref_tip(common_dir, f"refs/heads/{branch}")


def ref_tip(common_dir: str, ref: str) -> ObjectId | None:
    """The object `ref` (a full name, `refs/...`) points at, None when it does not
    exist: read from the loose ref file or `packed-refs` (git's own order: a loose
    ref wins), with no git process; `git rev-parse` where only git can tell (a
    reftable, a symbolic ref, a file that does not read as an object id)."""
    loose = os.path.join(common_dir, *ref.split("/"))
    if os.path.exists(os.path.join(common_dir, "reftable")) or ".." in ref.split("/"):
        return git.rev_parse(common_dir, ref)
    try:
        with open(loose, "rb") as fh:
            value = fh.read().strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        value = b""
    except OSError:
        return git.rev_parse(common_dir, ref)
    if value:
        return _object_id(value) or git.rev_parse(common_dir, ref)
    want = b" " + os.fsencode(ref)
    try:
        with open(os.path.join(common_dir, "packed-refs"), "rb") as fh:
            for ln in fh:
                ln = ln.rstrip(b"\n")
                if ln.endswith(want) and len(ln) == len(want) + len(ln.split(b" ", 1)[0]):
                    return _object_id(ln[:-len(want)]) or git.rev_parse(common_dir, ref)
    except FileNotFoundError:
        return None
    except OSError:
        return git.rev_parse(common_dir, ref)
    return None


def _object_id(value: bytes) -> ObjectId | None:
    """`value` as an object id when it is one (40 or 64 lowercase hex digits)."""
    if len(value) in (40, 64) and value.strip(b"0123456789abcdef") == b"":
        return ObjectId(value.decode("ascii"))
    return None


def tree_diffs(cwd: str, lines: Sequence[Sequence[str]]) -> dict[str, dict[str, parse.Change]]:
    """Raw recursive diffs of several commits in one `git diff-tree --stdin -r -z
    --no-renames --root`: each line is [new, old] (old's tree against new's) or
    [new] alone for a root commit (every entry of it counts as added).
    Returns {new: {path: Change}}; a commit whose diff is empty is absent.
    Raises GitError."""
    data = "".join(" ".join(ln) + "\n" for ln in lines).encode()
    return parse.tree_diffs(git.run(["diff-tree", "--stdin", "-r", "-z", "--no-renames",
                                        "--root"], cwd, input=data))


def raw_changes(cwd: str, old: str, new: str) -> dict[str, parse.Change]:
    """{path: Change} of every path that differs between two trees or commits, with
    the mode and object id on `new`'s side ("000000" when `new` lacks it) (`git
    diff-tree -r -z --no-renames`: each path on its own, no rename detection).
    Raises GitError."""
    fields = git.run(["diff-tree", "-r", "-z", "--no-renames", old, new], cwd).split(b"\0")
    out = {}
    for rec, path in zip(fields[0::2], fields[1::2], strict=False):
        if rec.startswith(b":"):
            words = rec[1:].split()
            p = os.fsdecode(path)
            out[p] = parse.Change(p, words[1].decode(), words[3].decode())
    return out


def index_modes(cwd: str) -> dict[str, str]:
    """{path: mode} of every entry of the index of the worktree at `cwd`, a sparse
    directory entry expanded to its files (`git ls-files -s -z`); the mode as git
    writes it ('100644', '120000', '160000' for a gitlink). Raises GitError."""
    got = {}
    for rec in git.run(["ls-files", "-s", "-z"], cwd).split(b"\0"):
        meta, sep, path = rec.partition(b"\t")
        if sep:
            got[os.fsdecode(path)] = meta.partition(b" ")[0].decode()
    return got


def staged_entries(cwd: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """{path: (mode, object id)} of the stage-0 index entries of the worktree at `cwd`
    for the literal `paths` (`git ls-files -s -z`); a path the index lacks is
    absent. Raises GitError."""
    if not paths:
        return {}
    return parse.stage0_entries(
        git.run(["--literal-pathspecs", "ls-files", "-s", "-z", "--", *paths], cwd))


# The three files of a `merge_texts` are named <MERGE_PREFIX><pid>.<random>.
MERGE_PREFIX = "git-ao-merge."


def merge_texts(cwd: str, scratch: str, base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The plain three-way merge of three contents as stored (`git merge-file -p`,
    git's own text merge: no merge driver, no attributes, no filter), or None when
    it conflicts or git cannot merge them (binary). scratch: a directory for the
    three temporary files it needs, removed before it returns."""
    import tempfile  # here: only a restore onto a moved branch merges
    names = []
    try:
        for data in (ours, base, theirs):
            fd, name = tempfile.mkstemp(prefix=f"{MERGE_PREFIX}{os.getpid()}.", dir=scratch)
            names.append(name)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        res = git.call(["merge-file", "-p", "-q", *names], cwd)
    finally:
        for name in names:
            with contextlib.suppress(OSError):
                os.unlink(name)
    return res.out if res.status == 0 else None


def first_parent_log(cwd: str, tip: str, count: int) -> list[tuple[str, str, list[str], str]]:
    """[(commit, tree, parents, message)] of `tip` and its first parents, at most
    `count` of them, newest first, in one `git log --first-parent -n <count> -z`.
    Raises GitError."""
    out = git.run(["log", "--first-parent", f"-n{max(count, 1)}", "-z",
                   "--format=%H %T %P%n%B", tip], cwd)
    rows = []
    for rec in out.split(b"\0"):
        if not rec.strip():
            continue
        head, _, message = rec.decode("utf-8", "replace").lstrip("\n").partition("\n")
        ids = head.split()
        rows.append((ids[0], ids[1], ids[2:], message))
    return rows


def disk_usage(cwd: str, revs: Sequence[str], exclude: Sequence[str]) -> int | None:
    """Bytes on disk of the objects `revs` reach and `exclude` (rev-list arguments
    such as --branches) does not (`git rev-list --disk-usage --objects`, git 2.38+);
    None when git cannot tell."""
    res = git.call(["rev-list", "--disk-usage", "--objects", *revs, "--not", *exclude], cwd)
    text = res.text.strip()
    return int(text) if res.status == 0 and text.isdigit() else None


def ignored_files(cwd: str, *, exclude_from: str | None = None) -> list[str]:
    """The ignored files present in the worktree at `cwd`, one by one:
    `git ls-files -z --others --ignored --exclude-standard`, or, with `exclude_from`,
    those matching that file's patterns (gitignore syntax) instead of the standard
    rules. Raises GitError."""
    rules = [f"--exclude-from={exclude_from}"] if exclude_from else ["--exclude-standard"]
    return git.split_z(git.run(["ls-files", "-z", "--others", "--ignored", *rules], cwd))


def left_behind(cwd: str, old: str, new: str, branch: str | None) -> int:
    """How many commits reachable from `old` no branch, tag or remote-tracking branch
    keeps once `branch` (None: a detached HEAD) moves from `old` to `new`: `git
    rev-list --count <old> --not <new> --exclude=<branch> --branches --tags --remotes`
    (git's --exclude applies to the next --branches only: the branch itself is left
    out, as if it already pointed at `new`). Raises GitError."""
    exclude = [f"--exclude={branch}"] if branch else []
    out = git.run(["rev-list", "--count", old, "--not", new, *exclude, "--branches", "--tags",
                   "--remotes"], cwd)
    return int(out.strip() or 0)
