"""The records git's longer porcelain outputs parse into: `git worktree list`,
`git status`, `git diff-tree`, `git ls-files -v`, `git push --porcelain` and
`git for-each-ref` with the commits' fields (`git.read_refs`).
Apart from parse.py (which names them too) so that a command reading none of
these outputs, a listing, does not build their classes at start-up."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from git_ao.git.parse import BranchName, ObjectId

__all__ = ["Change", "IndexFlags", "PushedRef", "RefRead", "Status", "StatusEntry",
           "WorktreeEntry", "index_flags", "push_porcelain", "ref_reads", "status", "tree_diffs",
           "worktree_list"]


@dataclass
class WorktreeEntry:
    """One record of `git worktree list --porcelain -z`."""

    path: str
    head: ObjectId | None = None
    branch: str | None = None  # full ref name, e.g. refs/heads/topic
    detached: bool = False
    bare: bool = False
    locked: str | None = None  # the reason ("" when none given), None when not locked
    prunable: str | None = None
    is_main: bool = False


def worktree_list(out: bytes) -> list[WorktreeEntry]:
    """Parse `git worktree list --porcelain -z`: the main worktree (or bare repository) first."""
    entries: list[WorktreeEntry] = []
    cur: WorktreeEntry | None = None
    for field_ in out.split(b"\0"):
        if not field_:
            if cur is not None:
                entries.append(cur)
                cur = None
            continue
        key, _, value = field_.partition(b" ")
        val = os.fsdecode(value)
        if key == b"worktree":
            cur = WorktreeEntry(path=val, is_main=not entries)
        elif cur is None:
            continue
        elif key == b"HEAD":
            cur.head = ObjectId(val)
        elif key == b"branch":
            cur.branch = val
        elif key == b"detached":
            cur.detached = True
        elif key == b"bare":
            cur.bare = True
        elif key == b"locked":
            cur.locked = val
        elif key == b"prunable":
            cur.prunable = val
    if cur is not None:
        entries.append(cur)
    return entries


@dataclass
class StatusEntry:
    """One changed path from `git status --porcelain=v2`: kind is '1', '2' or 'u';
    index_oid: the object the index holds ('1' and '2' records); worktree_mode:
    the file's mode as git sees it in the worktree ("000000" when it is gone)."""

    kind: str
    xy: str
    sub: str
    path: str
    orig_path: str | None = None
    index_oid: str = ""
    worktree_mode: str = ""


@dataclass
class Status:
    """Parsed `git status --porcelain=v2 -z --branch --untracked-files=all --ignored=matching`."""

    head: ObjectId | None  # None when the branch is unborn
    branch: BranchName | None  # None when detached
    changed: list[StatusEntry] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # directories end in '/'
    # Nested repositories and worktrees a checkpoint left out of `untracked` ('dir/').
    left_out: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.changed and not self.untracked

    @property
    def unmerged(self) -> list[str]:
        return [e.path for e in self.changed if e.kind == "u"]


def status(out: bytes) -> Status:
    """Parse `git status --porcelain=v2 -z --branch` output."""
    st = Status(head=None, branch=None)
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if not rec:
            continue
        tag = rec[:1]
        if tag == b"#":
            words = rec.split(b" ", 2)
            if words[1] == b"branch.oid" and words[2] != b"(initial)":
                st.head = ObjectId(words[2].decode())
            elif words[1] == b"branch.head" and words[2] != b"(detached)":
                st.branch = BranchName(os.fsdecode(words[2]))
        elif tag == b"1":
            parts = rec.split(b" ", 8)
            st.changed.append(StatusEntry("1", parts[1].decode(), parts[2].decode(),
                                          os.fsdecode(parts[8]), index_oid=parts[7].decode(),
                                          worktree_mode=parts[5].decode()))
        elif tag == b"2":
            parts = rec.split(b" ", 9)
            orig = os.fsdecode(fields[i]) if i < len(fields) else None
            i += 1
            st.changed.append(StatusEntry("2", parts[1].decode(), parts[2].decode(),
                                          os.fsdecode(parts[9]), orig, parts[7].decode(),
                                          parts[5].decode()))
        elif tag == b"u":
            parts = rec.split(b" ", 10)
            st.changed.append(StatusEntry("u", parts[1].decode(), parts[2].decode(),
                                          os.fsdecode(parts[10]), worktree_mode=parts[6].decode()))
        elif tag == b"?":
            st.untracked.append(os.fsdecode(rec[2:]))
        elif tag == b"!":
            st.ignored.append(os.fsdecode(rec[2:]))
    return st


@dataclass(frozen=True)
class Change:
    """One entry of a raw tree diff (`git diff-tree -r -z --no-renames`): the mode and
    object on the new side ("000000" and the null id when it was deleted)."""

    path: str
    mode: str
    oid: str

    @property
    def deleted(self) -> bool:
        return self.mode == "000000"


def tree_diffs(out: bytes) -> dict[str, dict[str, Change]]:
    """Parse `git diff-tree --stdin -r -z --no-renames` output: {the id each diff is
    headed by (the new side of its line): {path: Change}}. A line whose diff is
    empty prints no header, so it is absent."""
    diffs: dict[str, dict[str, Change]] = {}
    current: dict[str, Change] = {}
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if rec.startswith(b":"):
            words = rec[1:].split()
            path = os.fsdecode(fields[i])
            i += 1
            current[path] = Change(path, words[1].decode(), words[3].decode())
        elif rec.strip():
            current = diffs.setdefault(rec.split()[0].decode(), {})
    return diffs


@dataclass
class IndexFlags:
    """Index entries whose flags tell git to overlook the worktree (`git ls-files -v`):
    assume-unchanged (lower-case tag) and skip-worktree ('S'), plus every tracked
    `.gitattributes` path (they decide content conversion)."""

    assume_unchanged: list[str] = field(default_factory=list)
    skip_worktree: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    raw: bytes = field(default=b"", repr=False, compare=False)  # the output, for `paths`

    def paths(self) -> list[str]:
        """Every path of the index, in its order. A Python loop over every entry:
        only for the few callers that need them all."""
        return [os.fsdecode(rec[2:]) for rec in self.raw.split(b"\0") if len(rec) > 2]


# Records of `git ls-files -v -z` ("<tag> <path>\0") after the first whose tag is
# not plain "H", and the ends of paths named .gitattributes. Each starts with a
# literal, which the regular expression engine finds by a plain scan.
_FLAGGED = re.compile(rb"\0([^H\0] [^\0]*)")
_ATTRIBUTES = re.compile(rb"\.gitattributes(?=\0|$)")


def index_flags(out: bytes) -> IndexFlags:
    """Parse `git ls-files -v -z` into IndexFlags."""
    flags = IndexFlags(raw=out)
    # Nearly every record is "H <path>" with nothing to report: the regular
    # expressions pick out the few others in C, so a 20,000-file index costs no
    # Python loop over every file. Sorted by position to keep git's order.
    hits = {m.start(1): m.group(1) for m in _FLAGGED.finditer(out)}
    if out[:1] not in (b"", b"H"):
        hits[0] = out.partition(b"\0")[0]
    if b".gitattributes" in out:
        for m in _ATTRIBUTES.finditer(out):
            start = out.rfind(b"\0", 0, m.start()) + 1
            if m.start() == start + 2 or (m.start() > start + 2
                                          and out[m.start() - 1] == 0x2F):  # "/"
                hits[start] = out[start:m.end()]
    for _, rec in sorted(hits.items()):
        if len(rec) < 3:
            continue
        tag, path = rec[:1], os.fsdecode(rec[2:])
        if tag in (b"S", b"s"):
            flags.skip_worktree.append(path)
        if tag.islower():
            flags.assume_unchanged.append(path)
        if path == ".gitattributes" or path.endswith("/.gitattributes"):
            flags.attributes.append(path)
    return flags


@dataclass
class PushedRef:
    """One line of `git push --porcelain`: the flag git prints (' ' fast-forward,
    '+' forced, '-' deleted, '*' new, '=' up to date, '!' rejected or failed), the
    source and destination of the refspec, and git's summary (with its reason in
    parentheses)."""

    flag: str
    src: str
    dst: str
    summary: str

    @property
    def ok(self) -> bool:
        """Does the remote hold what was pushed? Only the flags that say so count:
        git prints others than '!' for a ref it did not update ('X', no match)."""
        return self.flag in _PUSHED_FLAGS


_PUSHED_FLAGS = frozenset(" +-*=")


def push_porcelain(text: str) -> list[PushedRef]:
    """Parse the stdout of `git push --porcelain`: one PushedRef per refspec line
    (`<flag>\\t<src>:<dst>\\t<summary>`); the `To <url>` and `Done` lines are skipped."""
    out = []
    for ln in text.splitlines():
        parts = ln.split("\t")
        if len(parts) < 3 or len(parts[0]) != 1:
            continue
        src, _, dst = parts[1].rpartition(":")
        out.append(PushedRef(parts[0], src, dst, parts[2]))
    return out


@dataclass
class RefRead:
    """A ref and, when it names a commit, that commit's tree, parents and message."""

    ref: str
    oid: ObjectId
    tree: str = ""  # "" when the ref names no commit
    parents: list[str] = field(default_factory=list)
    message: str = ""  # as %(contents) gives it: blank lines before the subject dropped


def ref_reads(out: bytes) -> dict[str, RefRead] | None:
    """Parse `git for-each-ref --format=%(refname)%00%(objectname)%00%(tree)%00%(parent)
    %00%(contents)%00` as {ref: RefRead}; None when a record does not have its five
    fields (a message holding a NUL)."""
    fields = out.split(b"\0")
    # Five fields a ref, each record ending in a newline that starts the next one.
    if len(fields) % 5 != 1 or fields[-1] not in (b"", b"\n"):
        return None
    got = {}
    for i in range(0, len(fields) - 1, 5):
        name, oid, tree, parents, message = fields[i:i + 5]
        ref = name.lstrip(b"\n").decode("utf-8", "surrogateescape")
        got[ref] = RefRead(ref, ObjectId(oid.decode()), tree.decode(), parents.decode().split(),
                           message.decode("utf-8", "replace"))
    return got
