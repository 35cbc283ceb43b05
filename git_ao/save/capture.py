"""Build the preserve commit that holds a worktree's uncommitted work (git_ao/save/apply.py
applies it back).

The commit is shaped exactly like `git stash push --include-untracked`:

    W  tree: tracked paths as in the worktree      parents: H, I[, U]
    I  tree: the real index (`git write-tree`)     parent:  H
    U  tree: untracked, not ignored files          no parent (only when there are some)

It is built through temporary index files inside the worktree's own git dir,
so the worktree, the real index and the stash list are never touched. The
witness of what differs from HEAD is a single
`git status --porcelain=v2 -z --untracked-files=all --ignored=matching`, run
with the fsmonitor and the untracked cache off; index flags that hide files
from it are read as `git ls-files -v` gives them and cleared in the temporary
index. The
result is then proven: W must differ from I wherever status saw a worktree
change (`_check_witness`), and where content conversion or lossy modes apply,
checking the captured indexes out again must give the worktree's files byte for
byte (`verify`). Anything unproven raises CannotCapture: nothing is deleted.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from git_ao import crashpoint, git, gitfiles
from git_ao.errors import AoError, GitError
from git_ao.fs import walk
from git_ao.fs.nested import linked_worktree_of
from git_ao.git import index, parse, query
from git_ao.git.index import TEMP_INDEX_PREFIX, TempIndex
from git_ao.git.parse import BranchName, ObjectId
from git_ao.save import local_state

VERIFY_PREFIX = "git-ao-verify."
# Every scratch name starts with one of these, then "<pid>.": `git ao-prune`
# removes those whose process is gone.
SCRATCH_PREFIXES = (TEMP_INDEX_PREFIX, VERIFY_PREFIX, query.MERGE_PREFIX, git.OBJECT_PREFIX)

# State files of an operation in progress. They live in the worktree's private
# git dir and die with it, so a worktree in one of these states is not captured.
# {file: (what it is, the command that aborts it)}
_IN_PROGRESS = {
    "MERGE_HEAD": ("a merge", "git merge --abort"),
    "CHERRY_PICK_HEAD": ("a cherry-pick", "git cherry-pick --abort"),
    "REVERT_HEAD": ("a revert", "git revert --abort"),
    "rebase-merge": ("a rebase", "git rebase --abort"),
    # (an am's holds the file `applying`)
    "rebase-apply": ("a rebase", "git rebase --abort"),
    "BISECT_LOG": ("a bisect", "git bisect reset"),
    "sequencer": ("a cherry-pick or revert sequence",
                  "git cherry-pick --abort, or git revert --abort"),
}


class CannotCapture(AoError):
    """Some uncommitted work cannot be captured faithfully: nothing may be deleted."""


class InProgress(CannotCapture):
    """The worktree is in the middle of an operation the user works through (a
    rebase, a merge, a cherry-pick, a revert, an am, a bisect) or holds unmerged
    paths: no save holds that state (the conflict stages, the operation's own
    files) until it is finished or aborted. `what` names it ("a rebase",
    "unmerged paths")."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


class Inexact(CannotCapture):
    """A file would not come back byte for byte or with its mode (`verify`)."""


class Unborn(CannotCapture):
    """HEAD is on `branch` (in the worktree `path`), which has no commit: never had
    one, or its ref was deleted (`history.unborn_refusal` tells which when the
    session is known)."""

    def __init__(self, message: str, branch: str | None, path: str) -> None:
        super().__init__(message)
        self.branch = branch
        self.path = path


class NestedWorktree(CannotCapture):
    """A linked worktree (`path`, its real path) nested untracked in the one to
    capture: once it is preserved and removed the capture may go on."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


@dataclass
class Meta:
    """Facts about the session written into W's message as trailers."""

    session_id: str
    kind: str
    harness: str
    workspace_path: str
    # Session attribute -> value, of FACT_TRAILERS' facts this session has.
    facts: dict[str, str] = field(default_factory=dict)


@dataclass
class Capture:
    """The result of `capture`: what was found and what was written.

    commit is W's id, or None when the worktree was clean (and HEAD attached).
    keep_reasons lists why the worktree must stay even though it was captured.
    """

    head: ObjectId
    branch: BranchName | None
    index_tree: ObjectId | None = None
    worktree_tree: ObjectId | None = None
    untracked_tree: ObjectId | None = None
    commit: ObjectId | None = None
    changed: list[str] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    keep_reasons: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # paths index flags hide from git status
    hidden_changed: bool = True  # until proven otherwise, hidden paths count as changed
    # Paths saved as git checks them out, not byte for byte (capture(lossy_ok=True));
    # a reason in `keep_reasons` names them.
    inexact: list[str] = field(default_factory=list)
    # Untracked paths git will not store (a name it refuses): in no tree, and not in
    # `untracked`; a preserve's removal proof keeps the worktree for them.
    unstorable: list[str] = field(default_factory=list)
    # Paths a `required` filter (filter.<driver>.required) failed on, {path: driver}:
    # an untracked one is in no tree and not in `untracked`, a tracked one is saved
    # as the index holds it; each is a reason in `keep_reasons`.
    filter_failed: dict[str, str] = field(default_factory=dict)
    # Paths that cannot be read, {path: strerror} (a file git cannot open, a
    # directory it cannot list or enter, ending in '/', an entry it cannot stat):
    # an untracked one is in no tree and not in `untracked`, a tracked one is saved
    # as the index holds it, what a directory holds is in no save beyond the index.
    # Each file is a reason in `keep_reasons`; a preserve's removal proof keeps the
    # worktree for a directory (the walk's blocker names it).
    unreadable: dict[str, str] = field(default_factory=dict)
    # Initialised submodules whose own state a checkpoint leaves out
    # (capture(leave_submodules=True)), {path: what of it no save holds}: the save
    # holds the commit each has checked out, not its uncommitted changes, nor its
    # commits and stashes that no remote has.
    submodules_left: dict[str, str] = field(default_factory=dict)
    # The nested repositories and worktrees the reading left out (a checkpoint's,
    # inspect(leave_nested=True)); a reading again leaves them out too.
    nested_left: list[str] = field(default_factory=list)
    private_config: str | None = None  # JSON for Save.private_config
    # The checksum of the index the trees were made from (index.checksum): an
    # index with the same one holds exactly this index tree and these flags.
    index_checksum: str | None = None
    # The repository's config as the capture read it (`query.config_map`): what
    # else the save needs of it is read here, not asked of git again.
    config: parse.Config = field(default_factory=parse.Config, repr=False, compare=False)
    git_dir: str = ""  # the worktree's git dir, where scratch files go
    # {path: object id} of W and U, listed beside the witness's diff (`_check_witness`),
    # for the removal proof (`witness.captured_blobs`); None when not listed.
    listed: dict[str, str] | None = field(default=None, repr=False, compare=False)
    # The commits computed and not written yet (capture(defer=True)): `flush`
    # writes them, with any other objects, in one process.
    unwritten: list[tuple[ObjectId, bytes]] = field(default_factory=list, repr=False,
                                                     compare=False)
    # A checkpoint's (capture(keep_index=True)) index of W: every tracked path with the
    # stat data git took when it last read the file, which `git diff-files` compares
    # with the worktree (save/unchanged.py). None unless the worktree is plain.
    worktree_index: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def detached(self) -> bool:
        return self.branch is None

    @property
    def clean(self) -> bool:
        return not self.changed and not self.untracked and not (
            self.hidden and self.hidden_changed)


def inspect(path: str, git_dir: str, left_out: Collection[str] = (), *,
            leave_nested: bool = False, ahead: Ahead | None = None) -> git.Status:
    """Read the worktree's state (one `git status`) and raise CannotCapture for states
    whose work would not survive: an unborn branch, unmerged paths, an operation in
    progress, an untracked nested repository. left_out: the real paths of nested
    worktrees a dry run's real run removes first, left out of its untracked paths.
    leave_nested: a checkpoint, which removes nothing: every nested repository and
    worktree is left out (named in `Status.left_out`), not refused.
    ahead: status reads its copy of the index and writes its refresh there (the
    real index is never written). Returns the git.Status."""
    for name, (what, abort) in _IN_PROGRESS.items():
        if os.path.exists(os.path.join(git_dir, name)):
            if name == "rebase-apply" and os.path.exists(os.path.join(git_dir, name,
                                                                      "applying")):
                what, abort = "an am", "git am --abort"
            raise InProgress(f"{what} is in progress in '{path}'; finish it or abort it "
                             f"({abort}) first", f"{what} in progress")
    st = _status_past_filters(path, ahead)
    if st.head is None:
        raise Unborn(f"branch '{st.branch}' in '{path}' has no commit yet (unborn); "
                     "commit once first", st.branch, path)
    if st.unmerged:
        raise InProgress(f"'{path}' has unmerged paths ({', '.join(st.unmerged)}); "
                         "resolve them first", "unmerged paths")
    if left_out:
        st.untracked = [p for p in st.untracked if not p.endswith("/") or
                        os.path.realpath(os.path.join(path, p)) not in left_out]
    nested = [p for p in st.untracked if p.endswith("/")]
    if nested and leave_nested:
        st.left_out = nested
        st.untracked = [p for p in st.untracked if not p.endswith("/")]
        nested = []
    for rel in nested:
        full = os.path.join(path, rel)
        common = linked_worktree_of(full.rstrip("/"))
        if common:
            raise NestedWorktree(f"'{full}' is a linked worktree of {common} nested in this "
                                "one: preserve it first if it is a session (git ao-preserve "
                                "--all takes inner ones first), else git worktree remove it "
                                "or git ao add it", os.path.realpath(full))
    if nested:
        raise CannotCapture(nested_refusal(path, git_dir, nested))
    return st


def nested_refusal(path: str, git_dir: str, nested: Sequence[str]) -> str:
    """The refusal of the untracked nested repositories `nested` ('dir/', relative
    to the worktree `path`), every one named, with its fix."""
    exclude = os.path.join(gitfiles.common_dir(git_dir), "info", "exclude")
    named = ", ".join(f"'{os.path.join(path, p)}'" for p in nested)
    what = ("is an untracked nested repository" if len(nested) == 1
            else "are untracked nested repositories")
    lines = ", ".join(f"/{p}" for p in nested)  # anchored: the worktree's own paths
    return (f"{named} {what}; git cannot capture the files of a nested repository: move it "
            f"out of the worktree, or "
            f"have git ignore it (the line(s) {lines} in {exclude}; the worktree then goes with it "
            "only while it is clean and its commits are on a remote)")


def _status_past_filters(path: str, ahead: Ahead | None = None) -> git.Status:
    """`git.status` of the worktree (of `ahead`'s copy of the index, refreshed
    there, when given). A `required` filter that fails on a file git status reads
    (one whose stat data changed) stops it too: it runs again with that filter
    not required, reading the file's bytes as they are, and the capture meets the
    failure again where it saves the file, and names it. Raises GitError."""
    copy = ahead.status_index if ahead is not None else None
    lenient: list[str] = []
    while True:
        try:
            return git.status(path, index_file=copy, refresh_copy=copy is not None,
                              lenient=lenient)
        except GitError as exc:
            hit = parse.filter_failure(exc.stderr)
            if hit is None or hit[1] in lenient:
                raise
            lenient.append(hit[1])


def refuse(path: str, git_dir: str, st: git.Status | None = None, *,
           lossy: bool = False, lossy_ok: bool = False,
           unfiltered_ok: bool = False, leave_submodules: bool = False) -> Capture | None:
    """Raise CannotCapture for each state `capture` refuses that stays until the user
    acts: `inspect`'s (read now, unless `st` is its result already), then the
    submodules' (`_check_submodules`; with `leave_submodules`, as for a
    checkpoint, a submodule's own state is left out and named, not refused), and
    with `lossy` a file that would not come back byte for byte (`verify`, where
    content conversion or lossy modes may apply: the trees are made, in temporary
    index files, and no commit; with `lossy_ok`, as for a checkpoint, such a file
    is named, not refused; see `capture` for `unfiltered_ok`). Writes no ref,
    record or worktree file (git status runs with GIT_OPTIONAL_LOCKS=0). Returns
    the Capture made then, which names what the real capture would
    (`filter_failed`, `keep_reasons`, `unstorable`, `inexact`,
    `submodules_left`), else None (`submodules_left_out` then names the
    submodules the real capture leaves out). Raises GitError as git status."""
    if st is None:
        st = inspect(path, git_dir)
    if not leave_submodules:
        _check_submodules(path, git_dir, st)
    if lossy:
        conf = query.config_map(path)
        if _conversion_reason(path, git_dir, conf, query.index_flags(path), st):
            return capture(path, git_dir, None, write=False, st=st, lossy_ok=lossy_ok,
                           unfiltered_ok=unfiltered_ok, leave_submodules=leave_submodules)
    return None


def submodules_left_out(path: str, git_dir: str, st: git.Status) -> dict[str, str]:
    """{path: what of it no save holds} of the initialised submodules whose own
    state a checkpoint's capture leaves out (`_check_submodules`)."""
    return _check_submodules(path, git_dir, st, leave=True)[1]


def saved_changes(st: git.Status, left: Collection[str] = ()) -> list[str]:
    """The changed paths of `st` a capture saves: all but a submodule in `left`
    whose only change is inside it (its uncommitted changes, which the save leaves
    out; it still has the recorded commit checked out)."""
    return [e.path for e in st.changed if e.path not in left or not _inside_only(e)]


def _inside_only(e: git.StatusEntry) -> bool:
    """Is `e` a submodule whose only change is inside it (no new commit checked out,
    nothing staged)?"""
    return e.sub.startswith("S") and e.sub[1] != "C" and e.xy[0] == "."


@functools.cache
def _conversion_re() -> re.Pattern[bytes]:
    """Attributes that make the bytes git stores differ from the bytes on disk.
    Compiled when an attribute file is first read: most worktrees have none."""
    return re.compile(rb"(^|[\s!-])(text|eol|crlf|filter|ident|working-tree-encoding)\b")


def _conversion_reason(path: str, git_dir: str, conf: dict[str, str], flags: git.IndexFlags,
                       st: git.Status) -> str | None:
    """Why the worktree's bytes might not be what the captured blobs give back on
    checkout (content conversion, or modes git does not record), or None."""
    if conf.get("core.autocrlf", "false") not in ("false", "0", "no", "off"):
        return "core.autocrlf"
    if conf.get("core.eol"):
        return "core.eol"
    for key in ("core.filemode", "core.symlinks"):
        if conf.get(key, "true") in ("false", "0", "no", "off"):
            return key
    files = [os.path.join(path, p) for p in flags.attributes]
    files += [os.path.join(path, p) for p in st.untracked
              if p == ".gitattributes" or p.endswith("/.gitattributes")]
    files.append(os.path.join(gitfiles.common_dir(git_dir), "info", "attributes"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    files.append(os.path.expanduser(conf.get("core.attributesfile")
                                    or os.path.join(xdg, "git", "attributes")))
    for f in files:
        try:
            with open(f, "rb") as fh:
                if _conversion_re().search(fh.read()):
                    return f
        except FileNotFoundError:
            if f.endswith(".gitattributes") and any(f == os.path.join(path, a)
                                                   for a in flags.attributes):
                return f  # tracked but deleted: the index copy still applies
        except OSError:
            return f
    return None


# How a file checked out from a save differs from the worktree's (`_difference`).
LINK = "link"  # a symbolic link git writes back as a plain file (core.symlinks=false)
EXEC_ON = "+x"  # only the executable bit: set in the worktree, not in git's entry
EXEC_OFF = "-x"  # only the executable bit: set in git's entry, not in the worktree
BYTES = "bytes"  # the bytes (or a link's target): content conversion


def _difference(got: str, full: str) -> str | None:
    """How the file `full` in the worktree differs from `got`, the same path as git
    checks it out (its type, then its bytes or link target, then its executable
    bit: LINK, BYTES, EXEC_ON or EXEC_OFF), or None when they are the same."""
    sa, sb = os.lstat(got), os.lstat(full)
    if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
        return LINK if stat.S_ISLNK(sb.st_mode) else BYTES
    if stat.S_ISLNK(sa.st_mode):
        return None if os.readlink(got) == os.readlink(full) else BYTES
    if sa.st_size != sb.st_size or not _same_bytes(got, full):
        return BYTES
    if (sa.st_mode & 0o100) != (sb.st_mode & 0o100):
        return EXEC_ON if sb.st_mode & 0o100 else EXEC_OFF
    return None


def _same_bytes(a: str, b: str) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            ca, cb = fa.read(1 << 20), fb.read(1 << 20)
            if ca != cb:
                return False
            if not ca:
                return True


def verify(path: str, git_dir: str, indexes: Sequence[TempIndex], *,
           lossy_ok: bool = False, failed: dict[str, str] | None = None,
           unreadable: Collection[str] = (), how: dict[str, str] | None = None
           ) -> list[str]:
    """Prove that every file present under the worktree comes back byte for byte and
    mode for mode: check out each captured index (`git checkout-index -a
    --prefix`, so smudge filters, end-of-line conversion and core.fileMode apply
    exactly as on restore) into a scratch dir inside the worktree's git dir and
    compare every file with the worktree's.

    unreadable: paths that cannot be read (`capture`), not compared.
    failed: {path: driver} of paths a required filter failed on, not compared;
    those its smudge fails on are added there (git cannot write them back, and
    `_checkout_leaving_out` checks out the rest), where else that failure raises
    GitError. Raises Inexact naming every path that would not come back, with
    the advice that fits how each differs; with `lossy_ok`, returns them (sorted,
    relative) instead, and `how` gets {path: how it differs} (`_difference`). Costs one
    `git checkout-index` per index and a read of every file twice: only called
    when content conversion or lossy modes may apply (see `_conversion_reason`).
    """
    import shutil  # here: only a worktree with content conversion is checked out again
    scratch = os.path.join(git_dir, f"{VERIFY_PREFIX}{os.getpid()}.{os.urandom(4).hex()}")
    bad: dict[str, str] = {}
    try:
        for temp in indexes:
            shutil.rmtree(scratch, ignore_errors=True)
            os.mkdir(scratch)
            if failed is None:
                temp.checkout_all(prefix=scratch + "/")
            else:
                _checkout_leaving_out(temp, scratch + "/", failed)
            for root, dirs, files in os.walk(scratch):
                for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                    got = os.path.join(root, name)
                    rel = os.path.relpath(got, scratch)
                    full = os.path.join(path, rel)
                    if not os.path.lexists(full) or (failed and rel in failed) \
                            or rel in unreadable:
                        continue  # deleted in the worktree, or named already
                    differs = _difference(got, full)
                    if differs is not None:
                        bad.setdefault(rel, differs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if bad and not lossy_ok:
        # Every such file: fixing them one refusal at a time takes a run each.
        raise Inexact(_inexact_reason(path, bad))
    if how is not None:
        how.update(bad)
    return sorted(bad)


# Attributes that convert a file's bytes otherwise than by its line endings.
_FILTERING = ("filter", "ident", "working-tree-encoding")


def _inexact_reason(path: str, how: dict[str, str], *, saved: bool = False) -> str:
    """Why the files of `how` ({path: how it differs, `_difference`}) keep a worktree
    (or refuse a capture): they would not come back as they are. One clause per
    cause, each with what is lost and what fixes it: the executable bit git does
    not record (core.fileMode=false), a symbolic link git writes as a file
    (core.symlinks=false), a filter, ident or working-tree-encoding attribute
    (read with `git check-attr`), else line-ending conversion.
    saved: the capture holds them as git checks them out. Raises GitError."""
    groups: dict[str, list[str]] = {}
    for rel in sorted(how):
        groups.setdefault(how[rel], []).append(rel)
    by_bytes = groups.pop(BYTES, [])
    attrs: dict[str, list[str]] = {}
    for attr in _FILTERING:
        for rel, value in query.attr_values(path, by_bytes, attr).items():
            if value != "unspecified" and value != "unset" and rel in by_bytes:
                by_bytes.remove(rel)
                name = attr if value == "set" else f"{attr}={value}"
                attrs.setdefault(name, []).append(rel)
    kept = "the save holds them as git checks them out, so only the worktree keeps " \
        if saved else "a save would hold them as git checks them out, losing "
    parts = []
    if by_bytes:
        parts.append(f"{_paths(path, by_bytes)} would not come back byte for byte: "
                     f"line-ending conversion (text, eol, core.autocrlf) changes their line "
                     f"endings ({kept}their bytes); give them attributes that keep their "
                     "bytes (-text in .gitattributes) or write them with the line endings "
                     "git checks them out with first")
    for name, rels in attrs.items():
        attr = name.split("=", 1)[0]
        parts.append(f"{_paths(path, rels)} would not come back byte for byte: the "
                     f"{name} attribute converts them and converting back does not give "
                     f"the same bytes ({kept}their bytes); make the conversion give them back "
                     f"(a filter's smudge undoing its clean), or unset it for them (-{attr} "
                     "in .gitattributes)")
    for bit, sign, undo in ((EXEC_ON, "+x", "-x"), (EXEC_OFF, "-x", "+x")):
        rels = groups.get(bit, [])
        if rels:
            now, held = ("executable", "not executable") if bit == EXEC_ON \
                else ("not executable", "executable")
            parts.append(
                f"{_paths(path, rels)} {'is' if len(rels) == 1 else 'are'} {now} in the "
                f"worktree and git holds {'it' if len(rels) == 1 else 'them'} as {held}: "
                f"with core.fileMode=false git does not record a change of the executable "
                f"bit ({kept}their executable bit; their bytes are saved); record it (git -C "
                f"{_shell_word(path)} update-index --chmod={sign} -- "
                f"{' '.join(_shell_word(r) for r in rels)}, or core.fileMode=true in this "
                f"repository if its file system keeps the bit), or chmod {undo} them as git "
                "holds them")
    if groups.get(LINK):
        rels = groups[LINK]
        what = "is a symbolic link" if len(rels) == 1 else "are symbolic links"
        parts.append(f"{_paths(path, rels)} {what} git would write back as a plain file "
                     f"holding its target (core.symlinks=false; {kept}the link); replace it with "
                     "the file it points to, or set core.symlinks=true in this repository if "
                     "its file system has symbolic links")
    return "; ".join(parts)


def _shell_word(rel: str) -> str:
    """`rel` as one word of a shell command line (quoted when it needs it)."""
    import shlex  # here: only a refusal of a file git would not give back names one
    return shlex.quote(rel)


def _checkout_leaving_out(temp: TempIndex, prefix: str, failed: dict[str, str]) -> None:
    """`temp.checkout_all(prefix)`, leaving out each path a `required` smudge filter
    fails on (git stops at the first: `parse.filter_failure`), added to `failed`
    as {path: driver}. Once a driver has failed, each path it smudges is tried
    alone, so the rest is checked out once more, not once per failure. Raises
    GitError for any other failure."""
    listed: list[str] | None = None
    left_out: set[str] = set()
    while True:
        try:
            temp.checkout_all(prefix, None if listed is None
                              else [p for p in listed if p not in left_out])
            return
        except GitError as exc:
            hit = parse.filter_failure(exc.stderr)
            if hit is None or hit[0] in left_out:
                raise
        if listed is None:
            listed = temp.paths()
        values = query.attr_values(temp.cwd, listed, "filter")
        for p in [q for q in listed if values.get(q) == hit[1] and q not in left_out]:
            try:
                temp.checkout_all(prefix, [p])
            except GitError as exc:
                if parse.filter_failure(exc.stderr) != (p, hit[1]):
                    raise
                failed.setdefault(p, hit[1])
                left_out.add(p)
        # Failed with the others though not alone: a failure all the same (and the
        # loop ends, each round leaving one more out).
        failed.setdefault(hit[0], hit[1])
        left_out.add(hit[0])


def _paths(top: str, rels: Sequence[str]) -> str:
    """'top/a', 'top/b' and 'top/c' on one line: every path named, quoted."""
    quoted = [f"'{os.path.join(top, r)}'" for r in rels]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _check_submodules(path: str, git_dir: str, st: git.Status, *, leave: bool = False
                      ) -> tuple[list[str], dict[str, str]]:
    """Initialised submodules that may go with the worktree: each must have no
    uncommitted change and no commit that is not on one of its remotes (it is
    cloned again on restore). Returns (their paths, {}); raises CannotCapture
    otherwise. leave: a checkpoint, which removes nothing: such a submodule's own
    state is left out instead (the save holds the commit it has checked out), and
    the second item names each, {path: what of it no save holds}."""
    if not os.path.isdir(os.path.join(git_dir, "modules")):
        return [], {}
    left: dict[str, list[str]] = {}
    for e in st.changed:
        # sub is "S<c><m><u>": a new commit (c) is fine when a remote has it (below);
        # modified (m) or untracked (u) content inside is not.
        if e.sub.startswith("S") and (e.sub[2] == "M" or e.sub[3] == "U"):
            if not leave:
                raise CannotCapture(f"submodule '{os.path.join(path, e.path)}' has "
                                    "uncommitted changes, which a superproject commit "
                                    "cannot hold; commit them inside it and push them "
                                    "first")
            left.setdefault(e.path, []).append("uncommitted changes")
    subs = [rel for rel in index.gitlinks(path)
            if os.path.exists(os.path.join(path, rel, ".git"))]
    for rel in subs:
        full = os.path.join(path, rel)
        if query.has_unpushed_work(full):
            if not leave:
                raise CannotCapture(f"submodule '{full}' has commits or stashes on no "
                                    "remote; push them first")
            left.setdefault(rel, []).append("commits or stashes on no remote")
    return subs, {rel: " and ".join(why) for rel, why in sorted(left.items())}


def submodule_heads(path: str, subs: list[str]) -> dict[str, ObjectId]:
    """{path: the commit checked out} of each initialised submodule, so restore puts
    one checked out at another commit than the recorded one back on it."""
    out = {}
    for rel in subs:
        head = git.rev_parse(os.path.join(path, rel), "HEAD")
        if head:
            out[rel] = head
    return out


def submodule_branches(path: str, subs: list[str]) -> dict[str, BranchName]:
    """{path: the local branch its HEAD is on} of each initialised submodule whose
    HEAD is not detached: the superproject records only a commit, and `git
    submodule update` checks that out detached, so restore puts the branch back."""
    out = {}
    for rel in subs:
        branch = git.current_branch(os.path.join(path, rel))
        if branch:
            out[rel] = branch
    return out


def _check_witness(path: str, cap: Capture, unstaged: list[str],
                   listed: Sequence[str] = ()) -> None:
    """Every path `git status` saw change in the worktree must differ between I and W
    (one `git diff-tree` of two trees, no worktree scan; with the trees `listed`
    listed in the same process, kept in `cap.listed` for the removal proof).
    Raises CannotCapture naming every path W missed."""
    if not unstaged:
        return
    assert cap.index_tree and cap.worktree_tree
    if listed:
        changed, cap.listed = query.changed_and_listed(path, cap.index_tree,
                                                       cap.worktree_tree, listed)
    else:
        changed = query.changed_paths(path, cap.index_tree, cap.worktree_tree)
    differ = set(changed)
    missed = [p for p in unstaged if p not in differ]
    if missed:
        raise CannotCapture(f"{_paths(path, missed)} changed but could not be "
                            "captured; commit or fix them first")


# What git prints when a file changed between `git status` and the index update
# that reads it (truncated mid-read, replaced by a directory, removed): the
# capture is taken again from a fresh status.
_CHANGED_WHILE_READ = ("short read while indexing", "read error while indexing",
                       "unable to index file", "Unable to process path",
                       "failed to insert into database", "lstat(",
                       "unable to read symlink", "add files inside instead")
TRIES = 5


class Beside:
    """`fn()` run in a thread of its own while the caller goes on (a git process
    waits in the kernel, so the two overlap); `result()` waits for it and returns
    what it returned or raises what it raised. Its git processes keep the caller's
    deadline (`git.bounded`)."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn = fn
        self._deadline = git.current_deadline()
        self._out: object = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="git-ao-beside", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with git.bounded(self._deadline):
                self._out = self._fn()
        except BaseException as exc:  # noqa: BLE001 - raised again by result()
            self._error = exc

    def result(self) -> object:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._out

    def wait(self) -> None:
        """Wait for it and drop what it gave."""
        self._thread.join()


class Ahead:
    """The capture's reading of the real index, begun before its `git status`
    (`read_ahead`). The real index is copied once (`copy`, its checksum taken
    then): status reads that copy and writes back into it what its refresh
    learnt. git hashes the content of every racily clean entry (one no older than
    the index file) to judge it, and the copy keeps the real index's mtime, so
    without that write each later git process on the copy would hash those files
    again. Beside status, a second copy (`spare`) gives the index's flags (`git
    ls-files -v`) and its tree I, and the config is read. The spare is stamped
    with mtime 0, for which git judges no entry racy: writing its cache tree
    hashes no file, and nothing reads it after. `ready` waits for that reading;
    `close` removes both copies."""

    def __init__(self, path: str, git_dir: str,
                 config: Callable[[], parse.Config] | None = None) -> None:
        self.copy: TempIndex | None = TempIndex(path, git_dir)
        self.checksum: str | None = None  # SHA-1 or SHA-256, as the index is written
        self.conf: parse.Config | None = None
        self.flags: git.IndexFlags | None = None
        self.tree: ObjectId | None = None
        try:
            self.copy.copy_from(os.path.join(git_dir, "index"))
        except FileNotFoundError:
            self.copy = None  # no index yet: status reads (no) real one
        if self.copy is not None:
            self.checksum = index.checksum(self.copy.path, 40) \
                or index.checksum(self.copy.path, 64)
        self._reading = Beside(lambda: self._read(path, git_dir, config))

    def _read(self, path: str, git_dir: str,
              config: Callable[[], parse.Config] | None) -> None:
        self.conf = config() if config is not None else query.config_map(path)
        if self.copy is None:
            return
        # Copied from the copy while status may write it: either file names the
        # same entries and flags, so I and the flags are the ones status saw.
        with TempIndex(path, git_dir) as spare:
            spare.copy_from(self.copy.path, mtime_ns=0)
            self.flags = query.index_flags(path, index_file=spare.path)
            self.tree = spare.write_tree()

    @property
    def status_index(self) -> str | None:
        """The copy `git status` reads and refreshes, None without an index."""
        return self.copy.path if self.copy is not None else None

    def ready(self) -> bool:
        """Wait for the reading beside status: True when it gave the flags, tree and
        config; False when git failed to (the capture reads them itself and meets
        the failure there)."""
        try:
            self._reading.result()
        except AoError:
            return False
        return self.conf is not None

    def refreshed_ns(self) -> int | None:
        """Once status has run, before the capture writes the copy: the mtime (ns)
        status gave the copy when it wrote it back with the real index's bytes
        (`checksum`), else None (no index, bytes of its own, or a copy that
        cannot be read; with nothing written it is the copy's own time). git
        writes those bytes only when every entry racily clean against the index
        it read was found unchanged by content (one found changed while its stat
        data matches is written with size 0; one whose stat data differs keeps
        data that never matches its file again), so those bytes at that mtime
        are what git's own refresh of the real index would leave."""
        if self.copy is None or self.checksum is None:
            return None
        try:
            before = os.stat(self.copy.path).st_mtime_ns
            same = index.checksum(self.copy.path, len(self.checksum)) == self.checksum
            # (The copy is this process's own file: nothing else writes it.)
            return before if same and os.stat(self.copy.path).st_mtime_ns == before else None
        except OSError:
            return None

    def take(self) -> TempIndex:
        """The copy, now the caller's to remove."""
        assert self.copy is not None
        copy, self.copy = self.copy, None
        return copy

    def close(self) -> None:
        self._reading.wait()
        if self.copy is not None:
            self.copy.__exit__(None, None, None)
            self.copy = None


def read_ahead(path: str, git_dir: str,
               config: Callable[[], parse.Config] | None = None) -> Ahead:
    """An Ahead for the worktree at `path`: call before its `inspect`, which then
    reads `Ahead.status_index`. config: what gives the worktree's config (a
    reading shared by the worktrees of a repository), else `query.config_map`.
    Raises OSError when the index cannot be copied."""
    return Ahead(path, git_dir, config)


def capture(path: str, git_dir: str, meta: Meta | None, *, write: bool = True,
            st: git.Status | None = None,
            walked: walk.Walk | walk.Background | None = None,
            targeted: bool = False, defer: bool = False, ahead: Ahead | None = None,
            lossy_ok: bool = False, always: bool = False,
            unfiltered_ok: bool = False, leave_submodules: bool = False,
            leave_nested: bool = False, keep_index: bool = False) -> Capture:
    """Capture the worktree at `path` (its git dir `git_dir`) as a stash-shaped commit.

    meta: the trailers for W's message. write=False computes the trees only
    (used to recognise a worktree that already holds a save) and writes no commit.
    st: a git.Status from `inspect`, to avoid reading the worktree twice.
    walked: the walk of the worktree, whose stat data gives every file's
    permission bits to the private config (`local_state.collect`); one still
    running in the background is waited for only once the trees are written.
    ahead: the `read_ahead` whose copy of the index `st`'s status read (used
    once, removed on every way out).
    targeted: a checkpoint's capture, which reads again only the paths `git
    status` saw change (`git update-index`) instead of every tracked one (`git
    add -u`), where no index flag hides a file, no sparse checkout and no
    submodule is involved.
    always: write the commits of a clean worktree too (as for a detached HEAD),
    for a ref that must carry HEAD's commits (a push to another machine).
    lossy_ok: a checkpoint, or a preserve that then keeps the worktree: a file that
    would not come back byte for byte (`verify`) is saved as git checks it out and
    named in `Capture.inexact` with a reason in `keep_reasons`, not refused, so the
    rest of the work has its entry; and a
    file a `required` filter fails on (filter.<driver>.required, its clean or
    smudge command failing) is left out, saved as the index holds it, and named
    in `Capture.filter_failed` with a reason in `keep_reasons`, where else it
    raises CannotCapture. unfiltered_ok: that for a preserve too, whose removal
    then keeps the worktree for the reasons.
    leave_submodules: a checkpoint, which removes nothing: a submodule with
    uncommitted changes, or with commits or stashes on no remote, is saved as the
    commit it has checked out and named in `Capture.submodules_left` (its change
    inside it alone is no saved change), where else it raises CannotCapture.
    leave_nested: `st` was read with inspect(leave_nested=True) (a checkpoint, an
    `--at`), and so is the worktree when it is read again (after a file changed
    under git's reads): nested repositories are left out, not refused.
    defer: compute the commits but leave them in `Capture.unwritten` (`cap.commit`
    names an object not written yet) for the caller to write with its own
    (`flush`).
    keep_index: a checkpoint's, for the next one's proof that nothing changed:
    `Capture.worktree_index` gets the bytes of W's index, whose stat data status
    refreshed, when the worktree is plain (read once, through `ahead`; no index
    flag hides a file, no conversion, failed filter, intent-to-add entry, name git
    refuses, conflict, submodule left out, sparse checkout or split index).
    Returns a Capture. Raises CannotCapture (also when a file kept changing
    under git's reads TRIES times in a row), GitError. Temporary index files are
    removed on every path out.

    Index flags that make git overlook a file (assume-unchanged, skip-worktree on
    a file present on disk) are cleared in the temporary index, so those files
    are captured too (`git ls-files -v`, `git update-index --no-...`). When
    content conversion or lossy modes may apply, `verify` proves the result.
    """
    unreadable: dict[str, str] = {}  # the files found unreadable so far, left out
    attempt = 1
    while True:
        used = ahead if st is not None else None
        try:
            st = st or inspect(path, git_dir, leave_nested=leave_nested)
            return _capture_once(path, git_dir, meta, write, st, walked, targeted, defer,
                                 used, lossy_ok, always,
                                 unfiltered_ok or lossy_ok, leave_submodules, leave_nested,
                                 keep_index, unreadable)
        except GitError as exc:
            if not any(m in exc.stderr for m in _CHANGED_WHILE_READ):
                raise
            # A file git cannot open (its permission bits) stops git as a file that
            # changed under it does: such a file is left out and the capture taken
            # again, each round leaving out at least one more.
            found = unreadable_files(path, read_by_capture(
                st, hidden_paths(path, query.index_flags(path)))) if st else {}
            new = {p: why for p, why in found.items() if p not in unreadable}
            if new:
                unreadable.update(new)
            elif attempt == TRIES:
                raise CannotCapture(f"'{path}' kept changing while it was read ({TRIES} "
                                    f"captures): {exc}") from exc
            else:
                attempt += 1
            st = None  # read the worktree again
        finally:
            if ahead is not None:
                ahead.close()


def _gone(path: str, rel: str) -> bool:
    """Is nothing at `rel` in the worktree `path` (an lstat that fails otherwise,
    a directory on the way that cannot be searched, is no proof)?"""
    try:
        os.lstat(os.path.join(path, rel))
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        pass
    return False


def read_by_capture(st: git.Status, hidden: Collection[str]) -> list[str]:
    """The files whose bytes a capture from `st` reads: the tracked ones git status
    saw change in the worktree, the untracked ones and the `hidden` ones (index
    flags hide them from status: `hidden_paths`)."""
    return sorted({e.path for e in st.changed if e.xy[1] not in ".D"} | set(st.untracked)
                  | set(hidden))


def unreadable_files(path: str, rels: Collection[str]) -> dict[str, str]:
    """{path: strerror} of those of the files `rels` (relative to the worktree
    `path`) that cannot be opened for reading (their permission bits, a directory on
    the way that cannot be searched): git cannot read them either. A symbolic link
    is read with readlink, which needs no permission; a path gone is no such file."""
    out: dict[str, str] = {}
    for rel in rels:
        full = os.path.join(path, rel)
        try:
            if not stat.S_ISREG(os.lstat(full).st_mode):
                continue
            fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW
                         | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            out[rel] = exc.strerror or str(exc)
            continue
        os.close(fd)
    return out


def unreadable_reasons(path: str, unreadable: dict[str, str], untracked: Collection[str]
                       ) -> list[str]:
    """Why a worktree stays for each file of `unreadable` ({path: strerror}, files
    only): an `untracked` one is in no save, a tracked one is saved as the index
    holds it."""
    return [f"{os.path.join(path, p)}: cannot be read ({why}), so "
            f"{'it is in no save' if p in untracked else 'the save holds it as the index does'}"
            "; make it readable and run again"
            for p, why in sorted(unreadable.items()) if not p.endswith("/")]


def _unreadable_refusal(path: str, unreadable: dict[str, str]) -> str:
    """The refusal of a capture that must hold every file, for the paths of
    `unreadable` ({path: strerror})."""
    named = ", ".join(f"'{os.path.join(path, p)}' ({why})"
                      for p, why in sorted(unreadable.items()))
    return (f"{named} cannot be read, so the save would not hold "
            f"{'it' if len(unreadable) == 1 else 'them'}; make "
            f"{'it' if len(unreadable) == 1 else 'them'} readable first")


def _left_unreadable(path: str, cap: Capture, st: git.Status,
                     walked: walk.Walk | walk.Background | None, unfiltered_ok: bool) -> None:
    """Name what of the worktree at `path` cannot be read in `cap`: the files the
    capture left out (already in `cap.unreadable`) and, from the walk, the
    directories it could not list or enter and the entries it could not stat
    (neither ignored nor in a nested repository), whose contents git status passes
    by with a warning. Each file is a reason in `keep_reasons`. Raises
    CannotCapture for any of them unless `unfiltered_ok` (see `capture`)."""
    done = walked.result() if isinstance(walked, walk.Background) else walked
    if done is not None:
        unreadable_walked(cap, st, done)
    if not cap.unreadable:
        return
    if not unfiltered_ok:
        raise CannotCapture(_unreadable_refusal(path, cap.unreadable))
    cap.keep_reasons += unreadable_reasons(path, cap.unreadable, st.untracked)


def unreadable_walked(cap: Capture, st: git.Status, done: walk.Walk) -> None:
    """Add to `cap.unreadable` what the walk `done` could not read (a directory it
    could not list or enter, an entry it could not stat) that is neither ignored
    (`st`) nor in a nested repository or worktree."""
    for rel, why in done.unreadable.items():
        if rel not in ("./", "") and not done.under_nested(rel) \
                and not walk.under(rel, st.ignored) \
                and not walk.under(rel, [*st.left_out, *cap.nested_left]):
            cap.unreadable.setdefault(rel, why)


def hidden_paths(path: str, flags: git.IndexFlags) -> list[str]:
    """The paths of the worktree at `path` that index flags hide from git status and
    the capture saves as they are on disk: every assume-unchanged one, and every
    skip-worktree one that is there."""
    return sorted(set(flags.assume_unchanged) | {
        p for p in flags.skip_worktree if os.path.lexists(os.path.join(path, p))})


def _capture_once(path: str, git_dir: str, meta: Meta | None, write: bool,
                  st: git.Status | None, walked: walk.Walk | walk.Background | None,
                  targeted: bool = False, defer: bool = False,
                  ahead: Ahead | None = None, lossy_ok: bool = False,
                  always: bool = False, unfiltered_ok: bool = False,
                  leave_submodules: bool = False, leave_nested: bool = False,
                  keep_index: bool = False, unreadable: dict[str, str] | None = None
                  ) -> Capture:
    st = st or inspect(path, git_dir, leave_nested=leave_nested)
    # Files that cannot be read (`capture`): left out of every tree.
    unread = {p: why for p, why in (unreadable or {}).items() if not _gone(path, p)}
    head = st.head
    assert head is not None  # inspect refuses an unborn branch
    if ahead is not None and (ahead.copy is None or not ahead.ready()):
        ahead.close()  # no index, or git failed beside status: read it all here
        ahead = None
    conf = ahead.conf if ahead is not None and ahead.conf is not None \
        else query.config_map(path)
    flags = ahead.flags if ahead is not None and ahead.flags is not None \
        else query.index_flags(path)
    hidden = hidden_paths(path, flags)
    subs, left = _check_submodules(path, git_dir, st, leave=leave_submodules)
    cap = Capture(head=head, branch=st.branch,
                  changed=saved_changes(st, left),
                  untracked=[p for p in st.untracked if p not in unread],
                  ignored=list(st.ignored), hidden=hidden, config=conf, git_dir=git_dir,
                  submodules_left=left, nested_left=list(st.left_out))
    reason = _conversion_reason(path, git_dir, conf, flags, st)
    # A required filter that fails stops git at the file, stored or not (see
    # TempIndex): the temporary indexes take these as not required, and the files
    # they clean are proven first (`_unclean`), so one failure costs that file only.
    # No attributes file naming a filter (no `reason`): no filter runs.
    drivers = parse.required_filters(conf) if reason else []
    intent: list[str] = []
    intent_modes: dict[str, str] = {}
    # Status refreshed the stat data of `ahead`'s copy, which becomes W's index below.
    keep_index = keep_index and ahead is not None and not hidden and not reason \
        and not unread \
        and not left and not st.unmerged and not st.left_out \
        and conf.get("core.sparsecheckout") != "true" and conf.get("core.splitindex") != "true"

    def private() -> str | None:
        # The walk may still be running: it is waited for here, once the trees are
        # written (or when a clean worktree needs nothing else).
        done = walked.result() if isinstance(walked, walk.Background) else walked
        wc = local_state.collect(path, git_dir, conf, flags, st, hidden, done)
        if subs:
            wc.submodules = subs
            wc.submodule_heads = dict(submodule_heads(path, subs))
            branches = submodule_branches(path, subs)
            if branches:
                wc.submodule_branches = dict(branches)
        if reason and any(p == ".gitattributes" or p.endswith("/.gitattributes")
                          for p in cap.changed + cap.untracked):
            # The saved attributes arrive during the apply, after other files were
            # written under the old ones: restore writes the files again (`recheckout`).
            wc.recheckout = True
        if intent:
            wc.intent_to_add = intent
        if intent_modes:
            wc.intent_to_add_modes = intent_modes
        return wc.to_json()

    if cap.clean and not hidden and not reason:
        cap.unreadable.update(unread)
        if not cap.detached and write and not always:
            cap.private_config = private()
            _left_unreadable(path, cap, st, walked, unfiltered_ok)
            if keep_index and ahead is not None and ahead.copy is not None \
                    and not cap.unreadable:
                cap.worktree_index = ahead.copy.read()
            return cap  # nothing to write, and nobody reads the trees
        if not write:
            cap.private_config = private()
            _left_unreadable(path, cap, st, walked, unfiltered_ok)
            head_tree = git.trees_of(path, [head])[0]
            cap.index_tree = cap.worktree_tree = head_tree
            return cap
        # A detached HEAD would become unreachable once the worktree is gone, and
        # a pushed ref must carry HEAD's commits: write a commit with no changes.
    crashpoint.hit("capture:after-status")
    if ahead is not None:
        tmp_i = ahead.take()
        tmp_i.lenient = drivers
        cap.index_tree = ahead.tree
        cap.index_checksum = ahead.checksum \
            if ahead.checksum and len(ahead.checksum) == len(head) else None
    else:
        tmp_i = index.TempIndex(path, git_dir, lenient=drivers)
    with tmp_i, index.TempIndex(path, git_dir, lenient=drivers) as tmp_u:
        if ahead is None:
            real_index = os.path.join(git_dir, "index")
            if os.path.exists(real_index):
                tmp_i.copy_from(real_index)
                cap.index_checksum = index.checksum(tmp_i.path, len(head))
            cap.index_tree = tmp_i.write_tree()
        assert cap.index_tree is not None
        found, cap.index_tree = local_state.intent_to_add(st, tmp_i, cap.index_tree, git_dir)
        intent += found
        intent_modes = local_state.intent_to_add_modes(path, tmp_i, intent)
        # The untracked files' tree is made beside the worktree's (its own index).
        untracked = Beside(lambda: _untracked_tree(tmp_u, cap.untracked, drivers)) \
            if cap.untracked else None
        failed: dict[str, str] = {}  # tracked paths a required clean filter failed on
        failed_u: dict[str, str] = {}  # untracked ones
        witness: Beside | None = None  # a checkpoint's check of W, beside the rest
        witnessed: list[str] = []  # the paths W must hold changed, checked below
        try:
            if hidden:
                tmp_i.set_flag(flags.assume_unchanged, "--no-assume-unchanged")
                tmp_i.set_flag([p for p in hidden if p in set(flags.skip_worktree)],
                               "--no-skip-worktree")
                # git refreshed no hidden entry's stat data: one still matching a
                # file rewritten since (same size and inode, times set back) would
                # make `git add -u` keep the old blob. Without stat data git reads
                # each of these files again.
                held = tmp_i.entries()
                tmp_i.seed({p: held[p] for p in hidden if p in held})
            # (A submodule whose change inside it is left out is the same in W as in I.)
            unstaged = [e.path for e in st.changed if e.xy[1] != "."
                        and not (e.path in left and _inside_only(e)) and e.path not in unread]
            unread_tracked = {p: why for p, why in unread.items() if p not in st.untracked}
            if unstaged and not hidden and targeted \
                    and conf.get("core.sparsecheckout") != "true" \
                    and not any(e.sub.startswith("S") for e in st.changed):
                # A checkpoint reads again only the paths status saw change (`git
                # add -u` would stat every tracked file once more); the witness below
                # still holds, and a file written since status is the next checkpoint's.
                failed.update(_unclean(path, unstaged, drivers))
                tmp_i.update([p for p in unstaged if p not in failed])
                cap.worktree_tree = tmp_i.write_tree()
                if not reason:
                    unseen = [p for p in unstaged if p not in set(intent) and p not in failed]
                    witness = Beside(lambda: _check_witness(path, cap, unseen))
            elif hidden or unstaged or unread_tracked:
                # With the flags cleared, `git add -u` reads the hidden files too.
                failed.update(_unclean(path, unstaged + [p for p in hidden if p not in unread],
                                       drivers))
                tmp_i.add_tracked(leave_out=sorted(set(failed) | set(unread_tracked)))
                cap.worktree_tree = tmp_i.write_tree()
                if not reason:
                    # With conversion on, git may call a file modified whose bytes
                    # clean to the same blob; `verify` below is the proof there.
                    # An intent-to-add entry whose file is gone is in neither tree: the
                    # private config holds it. Checked once U is written, in the git
                    # process that lists the trees for the removal proof.
                    witnessed = [p for p in unstaged if p not in set(intent) and p not in failed]
            else:
                cap.worktree_tree = cap.index_tree
            if untracked is not None:
                got = untracked.result()
                assert isinstance(got, tuple)
                tree, refused, failed_u = got
                cap.untracked_tree = ObjectId(tree)
                if refused:
                    # Not in U: counted, removed and restored as what they are.
                    cap.unstorable = sorted(refused)
                cap.filter_failed.update(failed_u)
                if refused or failed_u:
                    cap.untracked = [p for p in cap.untracked
                                     if p not in set(cap.unstorable) and p not in failed_u]
                    if not cap.untracked:
                        cap.untracked_tree = None
            if witnessed:
                # The trees `witness.captured_blobs` lists for the removal proof.
                listed = [cap.worktree_tree, cap.untracked_tree] if cap.untracked_tree \
                    else [cap.worktree_tree]
                _check_witness(path, cap, witnessed, [t for t in listed if t])
            cap.filter_failed.update(failed)
            cap.unreadable.update(unread)
            if failed or unread_tracked:
                # Saved as the index holds them: a change in the worktree alone is in
                # no tree, and is not counted as saved (nor is such an untracked file).
                unstaged_only = {e.path for e in st.changed if e.xy[0] == "."}
                cap.changed = [p for p in cap.changed if (p not in failed and p not in unread)
                               or p not in unstaged_only]
            if reason:
                how: dict[str, str] = {}
                cap.inexact = verify(path, git_dir, [tmp_i] + ([tmp_u] if cap.untracked else []),
                                     lossy_ok=lossy_ok, failed=cap.filter_failed,
                                     unreadable=unread, how=how)
                if cap.inexact:
                    # Saved as git checks them out: only the worktree keeps their bytes.
                    cap.keep_reasons.append(_inexact_reason(path, how, saved=True))
            if cap.filter_failed and not unfiltered_ok:
                raise CannotCapture(_unfiltered(path, cap.filter_failed))
            cap.keep_reasons += _filter_reasons(path, cap.filter_failed, failed_u, failed)
            cap.private_config = private()
            _left_unreadable(path, cap, st, walked, unfiltered_ok)
            if keep_index and not intent and not cap.unstorable and not cap.filter_failed \
                    and not cap.inexact and not cap.unreadable:
                cap.worktree_index = tmp_i.read()
            if witness is not None:
                witness.result()
        except BaseException:
            for side in (untracked, witness):
                if side is not None:
                    side.wait()  # its own failure, if any, is this one's echo
            raise
    if hidden and not cap.changed and not cap.untracked:
        head_tree = git.trees_of(path, [head])[0]
        cap.hidden_changed = not (cap.worktree_tree == cap.index_tree == head_tree)
    if cap.clean and not cap.detached and write and not always:
        return cap
    if not write:
        return cap
    assert meta is not None, "writing a preserve commit needs its trailers"
    _stash_commits(path, git_dir, cap, meta, write=not defer)
    return cap


def flush(path: str, cap: Capture, more: Sequence[tuple[ObjectId, bytes]] = ()) -> None:
    """Write the commits `cap` left unwritten (capture(defer=True)) and the commits
    `more`, in one `git hash-object`. Raises GitError."""
    objects = [*cap.unwritten, *more]
    if objects:
        git.write_objects(path, cap.git_dir or git.repo_dirs(path).git_dir, "commit", objects)
    cap.unwritten = []


def _stash_commits(path: str, git_dir: str, cap: Capture, meta: Meta, *,
                   write: bool = True) -> None:
    """Write I, U (when there are untracked files) and W for the trees of `cap`, as
    `git stash` shapes them, and set `cap.commit`. The ids are computed here and
    the three objects written by one `git hash-object` (`git.build_commit`), or
    left in `cap.unwritten` when not `write`; a message git would rewrite (not
    UTF-8) or a commit encoding other than UTF-8 (`i18n.commitEncoding`) takes one
    `git commit-tree` each instead, written at once. Raises GitError."""
    assert cap.index_tree and cap.worktree_tree
    label = cap.branch or "(no branch)"
    short = cap.head[:7]
    when = int(time.time())
    encoding = cap.config.get("i18n.commitencoding", "utf-8").lower()
    if encoding in ("utf-8", "utf8"):
        i_commit = git.build_commit(cap.index_tree, [cap.head],
                                    f"index on {label}: {short}\n", when=when)
        u_commit = git.build_commit(cap.untracked_tree, [],
                                    f"untracked files on {label}: {short}\n", when=when) \
            if cap.untracked_tree else None
        if i_commit is not None:
            parents = [cap.head, i_commit[0]] + ([u_commit[0]] if u_commit else [])
            w_commit = git.build_commit(cap.worktree_tree, parents, message(meta, cap),
                                        when=when)
            if w_commit is not None:
                cap.unwritten = [i_commit, *([u_commit] if u_commit else []), w_commit]
                cap.commit = w_commit[0]
                if write:
                    flush(path, cap)
                return
    i_oid = git.commit_tree(path, cap.index_tree, [cap.head], f"index on {label}: {short}\n")
    parents = [cap.head, i_oid]
    if cap.untracked_tree:
        parents.append(git.commit_tree(path, cap.untracked_tree, [],
                                       f"untracked files on {label}: {short}\n"))
    cap.commit = git.commit_tree(path, cap.worktree_tree, parents, message(meta, cap))


def _untracked_tree(tmp_u: TempIndex, paths: list[str], drivers: Sequence[str]
                    ) -> tuple[ObjectId, list[str], dict[str, str]]:
    """U's tree: `paths` added to the fresh index `tmp_u`, written as a tree; the
    paths git would not store (`TempIndex.update`); and those the clean command of
    a required filter of `drivers` failed on, left out ({path: driver},
    `_unclean`)."""
    failed = _unclean(tmp_u.cwd, paths, drivers)
    refused = tmp_u.update([p for p in paths if p not in failed])
    return tmp_u.write_tree(), refused, failed


def _unclean(cwd: str, paths: Sequence[str], drivers: Sequence[str]) -> dict[str, str]:
    """Those of `paths` (relative to the worktree at `cwd`) a required filter's clean
    command fails on, {path: driver}: the regular files whose `filter` attribute
    names one of `drivers` (`query.attr_values`) are cleaned by `git hash-object
    --stdin-paths`, which stores nothing and reads no other file (an index update
    reads racily clean entries again), and stops at the first that fails: the
    rest are cleaned again after it. Raises GitError for any other failure."""
    if not drivers or not paths:
        return {}
    values = query.attr_values(cwd, paths, "filter")
    todo = [p for p in paths if values.get(p) in drivers
            and stat.S_ISREG(_lstat_mode(os.path.join(cwd, p)))]
    failed: dict[str, str] = {}
    while todo:
        try:
            query.hash_paths(cwd, todo)
            break
        except GitError as exc:
            hit = parse.filter_failure(exc.stderr)
            if hit is None or hit[0] not in todo:
                raise
            failed[hit[0]] = hit[1]
            todo = todo[todo.index(hit[0]) + 1:]
    return failed


def _lstat_mode(full: str) -> int:
    try:
        return os.lstat(full).st_mode
    except OSError:
        return 0  # gone: the update removes it, no filter runs


def _filter_reasons(path: str, failed: dict[str, str], untracked: Collection[str],
                    tracked: Collection[str]) -> list[str]:
    """Why a worktree stays for each path a required filter failed on (`failed`,
    {path: driver}): the `untracked` ones its clean command failed on are in no
    save, the `tracked` ones are saved as the index holds them, and git cannot
    write the others (its smudge command failed) back from the save."""
    def why(p: str) -> str:
        if p in untracked:
            return "it is in no save"
        if p in tracked:
            return "the save holds it as the index does"
        return "git cannot write it back from the save"
    return [f"{os.path.join(path, p)}: the required filter '{d}' failed on it "
            f"(filter.{d}.required), so {why(p)}; fix the filter and run again"
            for p, d in sorted(failed.items())]


def _unfiltered(path: str, failed: dict[str, str]) -> str:
    """The refusal of a capture that must hold every file, for the paths a required
    filter failed on (`failed`, {path: driver})."""
    drivers = sorted(set(failed.values()))
    return (f"{_paths(path, sorted(failed))} cannot be saved: the required filter "
            f"{', '.join(repr(d) for d in drivers)} failed on "
            f"{'it' if len(failed) == 1 else 'them'} (filter.<driver>.required, its clean "
            "or smudge command failing); fix the filter first")


def ensure_commit(path: str, cap: Capture, meta: Meta, *, write: bool = True) -> str:
    """The stash-shaped commit of `cap`, writing one for a clean worktree (W and I
    both holding HEAD's tree) when the capture wrote none: a history entry needs a
    save even when there was nothing to change. write=False: leave the commits in
    `cap.unwritten` where it can (`flush`). Returns W's id. Raises GitError."""
    if cap.commit:
        return cap.commit
    if not cap.index_tree or not cap.worktree_tree:
        head_tree = git.trees_of(path, [cap.head])[0]
        assert head_tree is not None
        cap.index_tree = cap.index_tree or head_tree
        cap.worktree_tree = cap.worktree_tree or head_tree
    _stash_commits(path, cap.git_dir or git.repo_dirs(path).git_dir, cap, meta, write=write)
    assert cap.commit is not None
    return cap.commit


TRAILERS = ("Ao-Session", "Ao-Kind", "Ao-Harness", "Ao-Branch", "Ao-Workspace", "Ao-Head",
            "Ao-Detached")


# What a relaunch needs beyond the above (git_ao/relaunch.py's facts): trailer ->
# the Session attribute. Written when known, so a session rebuilt from its ref
# alone (restore --from, doctor --recover) relaunches as it would have here.
FACT_TRAILERS = {"Ao-Agent-Session": "agent_session_id", "Ao-Session-Mode": "session_mode",
                 "Ao-Provider-Conversation": "provider_conversation_id",
                 "Ao-Session-Group": "group_id"}


def session_facts(session: object) -> dict[str, str]:
    """{attribute: value} of FACT_TRAILERS' facts `session` holds. A value with a
    line break or white space at its ends cannot be one trailer line; it is left
    out (the record keeps it)."""
    out = {}
    for attr in FACT_TRAILERS.values():
        value = getattr(session, attr, None)
        if isinstance(value, str) and value and value == value.strip() \
                and not any(c in value for c in "\r\n\0"):
            out[attr] = value
    return out


INDEX_TRAILER = "Ao-Index"
# How many ignored paths the worktree held (git status --ignored=matching): a
# restore that finds no trash copy says they are gone.
IGNORED_TRAILER = "Ao-Ignored"
# What the worktree keeps outside its commits (local_state's JSON: permission bits,
# empty directories, index flags), so a record rebuilt from the ref alone (doctor
# --recover, restore --from) restores them too.
LOCAL_TRAILER = "Ao-Local-State"


def message(meta: Meta, cap: Capture) -> str:
    """W's commit message: a stash-like subject and trailers that describe the session,
    so `git ao doctor --recover` can rebuild a lost database from refs."""
    label = cap.branch or "(no branch)"
    values = (meta.session_id, meta.kind, meta.harness or "-", cap.branch or "-",
              meta.workspace_path, cap.head, "true" if cap.detached else "false")
    body = "\n".join(f"{k}: {v}" for k, v in zip(TRAILERS, values, strict=True))
    for key, attr in FACT_TRAILERS.items():
        if attr in meta.facts:
            body += f"\n{key}: {meta.facts[attr]}"
    if cap.index_checksum:
        # The checksum of the index the trees were made from: a restore from the
        # trash proves the index it puts back is that very file (proof.settled).
        body += f"\n{INDEX_TRAILER}: {cap.index_checksum}"
    if cap.ignored:
        body += f"\n{IGNORED_TRAILER}: {len(cap.ignored)}"
    if cap.private_config:
        body += f"\n{LOCAL_TRAILER}: {cap.private_config}"
    return f"WIP on {label}: {cap.head[:7]} git-ao preserve of {meta.session_id}\n\n{body}\n"


def parse_trailers(text: str) -> dict[str, str]:
    """The Ao-* trailers of a preserve commit message, as {name: value}."""
    out = {}
    for ln in text.splitlines():
        key, sep, value = ln.partition(": ")
        if sep and (key in TRAILERS or key in FACT_TRAILERS
                    or key in (INDEX_TRAILER, IGNORED_TRAILER, LOCAL_TRAILER)):
            out[key] = value
    return out


def saved_trees(cwd: str, commit: str) -> tuple[str, str | None, str | None, str | None]:
    """(H, index tree, worktree tree, untracked tree or None) of a preserve commit."""
    parents = git.commit_parents(cwd, commit)
    revs = [commit, parents[1]] + ([parents[2]] if len(parents) > 2 else [])
    trees = git.trees_of(cwd, revs)
    return parents[0], trees[1], trees[0], trees[2] if len(parents) > 2 else None


def holds(path: str, git_dir: str, commit: str, left: Sequence[str] = (), *,
          leave_submodules: bool = False) -> bool:
    """Does the worktree at `path` hold exactly the work saved in `commit` (same HEAD,
    index, tracked and untracked trees)? Used to recognise a crash between save and
    removal. left: untracked paths that do not count (files a restore left in place
    by design: ignored before it, untracked under the ignore rules it brought, a
    nested repository or worktree it left alone, as 'dir/'). leave_submodules: a
    submodule's own state is left out, as a checkpoint leaves it (the saved
    commit it has checked out counts)."""
    try:
        # A nested repository or worktree counts unless `left` names it.
        st = inspect(path, git_dir, leave_nested=True) if left else None
        if st is not None:
            skip = set(left)
            if set(st.left_out) - skip:
                return False
            st.untracked = [p for p in st.untracked if p not in skip]
        cap = capture(path, git_dir, None, write=False, st=st,
                      leave_submodules=leave_submodules)
    except CannotCapture:
        return False
    head, i_tree, w_tree, u_tree = saved_trees(path, commit)
    return (cap.head, cap.index_tree, cap.worktree_tree, cap.untracked_tree) == (
        head, i_tree, w_tree, u_tree)


def unproven(path: str, git_dir: str, commit: str) -> str | None:
    """`holds`, saying why not: None when the worktree at `path` holds exactly the
    work saved in `commit`; "" when it holds other work (it changed since); else
    why it cannot be proven to hold it, when the exact capture `holds` takes is
    refused: what a checkpoint's capture saves otherwise or leaves out (a file that
    would not come back byte for byte, a nested repository or worktree, a
    submodule's own state, a file a required filter fails on), when that capture
    is the save; or the refusal itself (an operation in progress). Writes nothing.
    Raises GitError."""
    saved = saved_trees(path, commit)
    try:
        cap = capture(path, git_dir, None, write=False)
    except CannotCapture as exc:
        strict = exc
    else:
        return None if _trees_of(cap) == saved else ""
    try:
        st, cap = as_checkpoint(path, git_dir)
    except CannotCapture:
        return f"the worktree cannot be compared with it: {strict}"
    if _trees_of(cap) != saved:
        return ""
    parts = []
    if cap.inexact:
        parts.append(f"{_paths(path, cap.inexact)} would not come back from it byte for "
                     "byte (line-ending or filter conversion, core.fileMode)")
    if st.left_out:
        parts.append(f"{_paths(path, st.left_out)}: nested repository or worktree, in no "
                     "save")
    if cap.submodules_left:
        parts.append(", ".join(f"submodule '{os.path.join(path, p)}' has {why}"
                               for p, why in sorted(cap.submodules_left.items()))
                     + ", which no save holds")
    if cap.filter_failed:
        parts.append(f"a required filter fails on {_paths(path, sorted(cap.filter_failed))}")
    return ("its work is in the worktree as a checkpoint saves it, but not proven there "
            f"exactly: {'; '.join(parts) or strict}")


def as_checkpoint(path: str, git_dir: str) -> tuple[git.Status, Capture]:
    """The worktree at `path` captured as a checkpoint takes it, writing nothing:
    its nested repositories and worktrees and its submodules' own state left out, a
    file that would not come back byte for byte or that a required filter fails
    on saved as git would and named. Returns (its status, with `left_out`, and the
    Capture). Raises CannotCapture for what a checkpoint refuses too (an operation
    in progress, an unborn branch), GitError."""
    st = inspect(path, git_dir, leave_nested=True)
    return st, capture(path, git_dir, None, write=False, st=st, lossy_ok=True,
                       unfiltered_ok=True, leave_submodules=True)


def _trees_of(cap: Capture) -> tuple[str | None, str | None, str | None, str | None]:
    """(H, index tree, worktree tree, untracked tree or None) of a capture, as
    `saved_trees` gives them of a commit."""
    return cap.head, cap.index_tree, cap.worktree_tree, cap.untracked_tree
