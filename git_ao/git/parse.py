"""Read git's machine-readable output (`-z`, `--porcelain`) and admin files.

Nothing here starts a process: git_ao/git/process.py runs git and hands the output over.
Path names are decoded with surrogateescape, so they survive whatever
encoding they have.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

# Typed ids, so that an object id and a ref or branch name cannot be swapped
# where a git operation takes both (update-ref <ref> <new> <old>). At run time
# both are str, as NewType would make them, without importing typing (a listing
# costs less than that import; mypy takes any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NewType

    ObjectId = NewType("ObjectId", str)  # a full hex object id, as git prints it
    BranchName = NewType("BranchName", str)  # a short branch name: topic, not refs/heads/topic
else:
    ObjectId = BranchName = str
NO_OBJECT = ObjectId("")  # update-ref's <old> for "the ref must not exist yet"


def split_z(data: bytes) -> list[str]:
    """Split NUL-terminated output into str paths (undecodable bytes kept via surrogateescape)."""
    return [os.fsdecode(p) for p in data.split(b"\0") if p]


def join_z(paths: Iterable[str]) -> bytes:
    """Encode str paths as NUL-terminated bytes for `--stdin -z` readers."""
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def required_filters(conf: Config) -> list[str]:
    """The filter drivers `conf` makes required (`filter.<driver>.required` true),
    sorted."""
    last: dict[str, str] = {}
    for key, value in conf.values_of("filter.", ".required"):
        last[key[len("filter."):-len(".required")]] = value.strip().lower()
    return sorted(d for d, v in last.items()
                  if v not in ("false", "no", "off", "0") and (not v.isdigit() or int(v)))


def filter_failure(stderr: str) -> tuple[str, str] | None:
    """(path, driver) of the line git dies with when a `required` filter
    (`filter.<driver>.required`) fails on a path, cleaning it ("fatal: PATH:
    clean filter 'DRIVER' failed") or smudging it ("fatal: PATH: smudge filter
    DRIVER failed"), else None. git stops the whole command at the first such
    path."""
    for ln in stderr.splitlines():
        if not ln.startswith("fatal: ") or not ln.endswith(" failed"):
            continue
        body = ln[len("fatal: "):-len(" failed")]
        path, sep, driver = body.rpartition(": clean filter ")
        if sep and len(driver) > 1 and driver[0] == driver[-1] == "'":
            return path, driver[1:-1]
        path, sep, driver = body.rpartition(": smudge filter ")
        if sep and driver:
            return path, driver
    return None


def quote_c(path: str) -> bytes:
    """`path` as a C-style quoted line, the form git unquotes where it reads one
    path per line (`--stdin-paths`): every byte outside printable ASCII as an
    octal escape, so a name holding a newline, ending in a carriage return or
    starting with a double quote reaches git as it is."""
    out = bytearray(b'"')
    for byte in os.fsencode(path):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\%03o" % byte
    out += b'"'
    return bytes(out)


def version(text: str) -> tuple[int, ...]:
    """The version numbers of `git --version` output, e.g. (2, 39, 5)."""
    nums = []
    for part in text.split()[-1].split("."):
        if not part.isdigit():
            break
        nums.append(int(part))
    return tuple(nums)


def half_added_worktree(common_dir: str) -> str | None:
    """The admin dir under <common_dir>/worktrees that git's `worktree add` was still
    creating (it has the `locked` file git writes first, "initializing" in the
    user's language, and `commondir` is missing or empty), or None."""
    base = os.path.join(common_dir, "worktrees")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return None
    for name in names:
        d = os.path.join(base, name)
        try:
            if not os.path.isfile(os.path.join(d, "locked")):
                continue
            commondir = os.path.join(d, "commondir")
            empty = not os.path.exists(commondir) or os.path.getsize(commondir) == 0
        except OSError:
            continue
        if empty:
            return d
    return None


# The empty blob's id, SHA-1 and SHA-256: what an intent-to-add entry records.
EMPTY_BLOBS = frozenset({"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
                         "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"})


def gitlinks(out: bytes) -> list[str]:
    """The paths of submodule entries (mode 160000) in `git ls-files -s -z` output."""
    return [os.fsdecode(rec.partition(b"\t")[2]) for rec in out.split(b"\0")
            if rec.startswith(b"160000 ")]


def stage0_entries(out: bytes) -> dict[str, tuple[str, str]]:
    """{path: (mode, object id)} of the stage-0 entries in `git ls-files -s -z`
    output (an unmerged path's stages 1 to 3 left out)."""
    got = {}
    for rec in out.split(b"\0"):
        meta, sep, path = rec.partition(b"\t")
        if sep:
            mode, oid, stage = meta.decode().split()
            if stage == "0":
                got[os.fsdecode(path)] = (mode, oid)
    return got


class Config(dict[str, str]):
    """Every effective git config value as {lower-case key: last value}, with every
    (key as git prints it, value) pair in git's order in `pairs`, for the keys that
    take several values (`remote.<name>.fetch`)."""

    pairs: Sequence[tuple[str, str]] = ()

    def values_of(self, prefix: str, suffix: str) -> list[tuple[str, str]]:
        """The (key, value) pairs whose lower-case key starts with `prefix` and ends
        with `suffix` (both lower case, apart: `git config --get-regexp
        '^prefix.*suffix$'`), in git's order."""
        least = len(prefix) + len(suffix)
        return [(k, v) for k, v in self.pairs if len(k) >= least
                and k.lower().startswith(prefix) and k.lower().endswith(suffix)]


def config_map(out: bytes) -> Config:
    """Parse `git config -z --list` as a Config ({lower-case key: last value})."""
    conf = Config()
    pairs: list[tuple[str, str]] = []
    conf.pairs = pairs
    for rec in out.split(b"\0"):
        if rec:
            key, _, value = rec.partition(b"\n")
            k, v = key.decode("utf-8", "replace"), value.decode("utf-8", "surrogateescape")
            pairs.append((k, v))
            conf[k.lower()] = v
    return conf


def ref_oids(text: str) -> list[tuple[str, ObjectId]]:
    """Parse `git for-each-ref --format='%(objectname) %(refname)'` as (ref, oid) pairs."""
    pairs = []
    for ln in text.splitlines():
        oid, _, ref = ln.partition(" ")
        pairs.append((ref, ObjectId(oid)))
    return pairs


_REF_FORBIDDEN = frozenset(" ~^:?*[\\\x7f") | frozenset(chr(c) for c in range(32))


def check_ref_format(ref: object) -> bool:
    """Is `ref` a valid full ref name, as `git check-ref-format <ref>` decides?

    The rules of git-check-ref-format(1), checked here without starting a
    process (every command validates each session id it is given): at least
    one '/'; no empty component, none starting with '.' or ending with '.lock';
    no '..', '@{', '\\', control characters, space, '~', '^', ':', '?', '*',
    '['; not ending with '/' or '.'; not '@'. tests/test_git_shortcuts.py holds
    this against git itself.
    """
    if not isinstance(ref, str) or "/" not in ref or ref == "@":
        return False
    if ".." in ref or "@{" in ref or ref.endswith(".") or _REF_FORBIDDEN.intersection(ref):
        return False
    try:
        ref.encode("utf-8")
    except UnicodeEncodeError:
        return False
    for part in ref.split("/"):
        if not part or part.startswith(".") or part.endswith(".lock"):
            return False
    return True


def ls_remote(text: str) -> list[tuple[str, ObjectId]]:
    """Parse `git ls-remote` output (`<oid>\\t<ref>` lines) as (ref, oid) pairs."""
    pairs = []
    for ln in text.splitlines():
        oid, sep, ref = ln.partition("\t")
        if sep:
            pairs.append((ref, ObjectId(oid)))
    return pairs


# The records of the longer outputs live in porcelain.py; they are read here too.
_IN_PORCELAIN = frozenset({"WorktreeEntry", "worktree_list", "StatusEntry", "Status", "status",
                           "Change", "tree_diffs", "IndexFlags", "index_flags", "PushedRef",
                           "push_porcelain", "RefRead", "ref_reads"})
if TYPE_CHECKING:
    from git_ao.git.porcelain import *  # the names above, for mypy
else:
    def __getattr__(name: str) -> object:
        if name in _IN_PORCELAIN:
            from git_ao.git import porcelain
            value = getattr(porcelain, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
