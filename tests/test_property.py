"""Property: any worktree state built from the operations below survives
preserve then restore exactly, or preserve refuses and leaves it untouched.

Each example builds a state in a fresh linked worktree of one repository made
once per test function, takes the comparator's picture (tests/worktree_state),
preserves, restores and compares. The workflow functions are driven
in-process (real git, real repositories) to keep 200 examples quick; the
subprocess path is covered by the other tests.

Profiles: "ci" (the default: derandomized, 200 examples) and "dev"
(HYPOTHESIS_PROFILE=dev: 2000 random examples), split evenly over four test
functions so parallel workers share them. Every shrunk failure is kept
below as an explicit @example.
"""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from git_ao import context
from git_ao.manage import register
from git_ao.preserve import workflow as preserve
from git_ao.restore import workflow as restore
from git_ao.save import capture
from git_ao.store.database import Store
from tests.support import git, init_repo
from tests.worktree_state import assert_restored, state

settings.register_profile(
    "ci", derandomize=True, max_examples=200, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large])
settings.register_profile(
    "dev", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large])
# HYPOTHESIS_PROFILE=explicit runs only the kept @examples (a quick regression run).
settings.register_profile("explicit", parent=settings.get_profile("ci"),
                          phases=[Phase.explicit])
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Names that trip up shells, pathspecs and quoting.
NAMES = ["a", "b c", "é ü", "-dash", "q\"'", "new\nline", "tab\tx", "n.txt"]
DIRS = ["d", "e f", "ñ", "-g"]
IGNORE_NAMES = ["i1", "i 2", "ï3"]
CONTENT = st.one_of(
    st.sampled_from([b"", b"x\n", b"one\ntwo\n", b"crlf\r\nline\r\n", b"no newline"]),
    st.binary(max_size=40),
)

_ops = st.one_of(
    st.tuples(st.just("edit"), st.integers(0, 50), CONTENT),
    st.tuples(st.just("append"), st.integers(0, 50), CONTENT),
    st.tuples(st.just("truncate"), st.integers(0, 50)),
    st.tuples(st.just("delete"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("rename"), st.integers(0, 50), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("stage"), st.integers(0, 50)),
    st.tuples(st.just("new"), st.lists(st.sampled_from(DIRS), max_size=3),
              st.sampled_from(NAMES), CONTENT),
    st.tuples(st.just("binary"), st.integers(0, 50), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("chmod"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("symlink"), st.sampled_from(NAMES),
              st.sampled_from(["file", "dir", "dangling"])),
    st.tuples(st.just("file_to_dir"), st.integers(0, 50)),
    st.tuples(st.just("dir_to_file"), st.integers(0, 50), CONTENT),
    st.tuples(st.just("ignore"), st.sampled_from(["gitignore", "exclude", "excludesfile"]),
              st.sampled_from(IGNORE_NAMES), CONTENT),
    st.tuples(st.just("eol"), st.sampled_from(["autocrlf=true", "autocrlf=input",
                                               "attr-crlf", "attr-lf", "attr-binary"])),
    st.tuples(st.just("commit"),),
)
STATES = st.tuples(st.booleans(), st.lists(_ops, max_size=8))


def _files(wt) -> list:
    """Regular files under the worktree (not .git), sorted, as relative str paths."""
    out = []
    for root, dirs, files in os.walk(wt):
        dirs[:] = sorted(d for d in dirs if not (root == str(wt) and d == ".git"))
        for f in files:
            if root == str(wt) and f == ".git":
                continue
            full = os.path.join(root, f)
            if os.path.isfile(full) and not os.path.islink(full):
                out.append(os.path.relpath(full, wt))
    return sorted(out)


def _dirs(wt) -> list:
    out = []
    for root, dirs, _ in os.walk(wt):
        dirs[:] = sorted(d for d in dirs if not (root == str(wt) and d == ".git"))
        out += [os.path.relpath(os.path.join(root, d), wt) for d in dirs
                if not os.path.islink(os.path.join(root, d))]
    return sorted(out)


def _tracked(wt, rel) -> bool:
    """Is `rel` itself an index entry (not a directory holding some)?"""
    return rel in git("ls-files", "-z", "--", f":(literal){rel}", cwd=wt).split("\0")


def _apply_op(wt, common, home, op) -> bool:
    """Apply one operation; returns True when it turns on content conversion."""
    kind = op[0]
    files = _files(wt)
    pick = (lambda i: files[i % len(files)]) if files else (lambda i: None)
    if kind in ("edit", "binary"):
        rel = pick(op[1])
        if rel:
            (wt / rel).write_bytes(op[2])
    elif kind == "append":
        rel = pick(op[1])
        if rel:
            with open(wt / rel, "ab") as fh:
                fh.write(op[2])
    elif kind == "truncate":
        rel = pick(op[1])
        if rel:
            (wt / rel).write_bytes(b"")
    elif kind == "delete":
        rel = pick(op[1])
        if rel:
            if op[2] and _tracked(wt, rel):
                git("rm", "-q", "-f", "--", f":(literal){rel}", cwd=wt)
            else:
                os.unlink(wt / rel)
    elif kind == "rename":
        rel = pick(op[1])
        if rel and not os.path.lexists(wt / op[2]):
            if op[3] and _tracked(wt, rel):
                git("mv", "-f", "--", rel, op[2], cwd=wt)
            else:
                os.rename(wt / rel, wt / op[2])
    elif kind == "stage":
        rel = pick(op[1])
        if rel:
            git("add", "-f", "--", f":(literal){rel}", cwd=wt)
    elif kind == "new":
        d = wt.joinpath(*op[1]) if op[1] else wt
        try:
            d.mkdir(parents=True, exist_ok=True)
            if not os.path.lexists(d / op[2]):
                (d / op[2]).write_bytes(op[3])
        except (FileExistsError, NotADirectoryError):
            pass
    elif kind == "chmod":
        rel = pick(op[1])
        if rel:
            os.chmod(wt / rel, 0o755 if op[2] else 0o644)
    elif kind == "symlink":
        if not os.path.lexists(wt / op[1]):
            target = {"file": "README.md", "dir": "src", "dangling": "no/such"}[op[2]]
            os.symlink(target, wt / op[1])
    elif kind == "file_to_dir":
        rel = pick(op[1])
        if rel:
            os.unlink(wt / rel)
            (wt / rel).mkdir()
            (wt / rel / "inner").write_bytes(b"inner\n")
    elif kind == "dir_to_file":
        dirs = _dirs(wt)
        if dirs:
            rel = dirs[op[1] % len(dirs)]
            shutil.rmtree(wt / rel)
            (wt / rel).write_bytes(op[2])
    elif kind == "ignore":
        how, name, content = op[1], op[2], op[3]
        line = "/" + name + "\n"
        if how == "gitignore":
            if os.path.isdir(wt / ".gitignore"):
                return False
            with open(wt / ".gitignore", "a") as fh:
                fh.write(line)
        elif how == "exclude":
            os.makedirs(os.path.join(common, "info"), exist_ok=True)
            with open(os.path.join(common, "info", "exclude"), "a") as fh:
                fh.write(line)
        else:
            path = home / "excludes"
            with open(path, "a") as fh:
                fh.write(line)
            git("config", "--global", "core.excludesFile", str(path), cwd=wt)
        if not os.path.lexists(wt / name):
            (wt / name).write_bytes(content)
    elif kind == "eol":
        what = op[1]
        if what.startswith("autocrlf="):
            git("config", "core.autocrlf", what.split("=")[1], cwd=wt)
        else:
            attr = {"attr-crlf": "*.txt text eol=crlf\n", "attr-lf": "* text=auto eol=lf\n",
                    "attr-binary": "*.dat binary\n"}[what]
            if os.path.isdir(wt / ".gitattributes"):
                return False
            with open(wt / ".gitattributes", "a") as fh:
                fh.write(attr)
        return True
    elif kind == "commit":
        git("commit", "-q", "--allow-empty", "--no-verify", "-m", "c", cwd=wt)
    return False


class Bench:
    """One repository per test function; each example gets a fresh worktree and is
    cleaned up afterwards (config and exclude files reset)."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.repo = tmp_path / "main"
        self.repo.mkdir()
        git("init", "-q", "-b", "main", cwd=self.repo)
        init_repo(self.repo)
        (self.repo / "sp ace.txt").write_text("space\n")
        (self.repo / "ü.txt").write_text("umlaut\n")
        os.symlink("README.md", self.repo / "link")
        git("add", "-A", cwd=self.repo)
        git("commit", "-qm", "more", cwd=self.repo)
        self.common = os.path.join(self.repo, ".git")
        self.home = tmp_path / "home"
        self.store = Store()
        self.ctx = context.Context(self.store)
        self.n = 0
        self.counts = {"exact": 0, "refused": 0}

    def reset(self, wt, sid, *, passed=False):
        """Undo what the example did. passed: its round trip held, so no ref is
        left and the worktree is registered where it is (checked there); only
        what its ops set is undone, which saves a few git processes an example."""
        if os.path.lexists(wt):
            git("worktree", "remove", "-f", "-f", wt, cwd=self.repo)
        if not passed:
            git("worktree", "prune", cwd=self.repo)
            git("update-ref", "-d", f"refs/ao/preserved/{sid}", cwd=self.repo, check=False)
        git("branch", "-D", sid, cwd=self.repo, check=False)
        if self.store.get(sid):
            self.store.delete(sid)
        with open(os.path.join(self.common, "config")) as fh:
            if not passed or "autocrlf" in fh.read():
                git("config", "--unset", "core.autocrlf", cwd=self.repo, check=False)
        with open(os.environ["GIT_CONFIG_GLOBAL"]) as fh:
            if not passed or "excludesfile" in fh.read().lower():
                git("config", "--global", "--unset", "core.excludesFile", cwd=self.repo,
                    check=False)
        for f in (os.path.join(self.common, "info", "exclude"), self.home / "excludes"):
            if os.path.exists(f):
                os.unlink(f)
        shutil.rmtree(os.path.join(self.store.dir, "trash"), ignore_errors=True)

    def run(self, detached, ops):
        self.n += 1
        sid = f"p{self.n}"
        wt = self.tmp / "wt" / sid
        git("worktree", "add", "-q", "-b", sid, wt, cwd=self.repo)
        try:
            self._round_trip(wt, sid, detached, ops)
        except BaseException:
            self.reset(wt, sid)
            raise
        self.reset(wt, sid, passed=True)

    def _round_trip(self, wt, sid, detached, ops):
        register.register(self.ctx, str(wt), session_id=sid)
        if detached:
            git("checkout", "-q", "--detach", cwd=wt)
        conversion = False
        for op in ops:
            conversion |= _apply_op(wt, self.common, self.home, op)
        before = state(wt)
        try:
            out = preserve.preserve_one(self.ctx, sid)
        except capture.CannotCapture as exc:
            # Refused: allowed only where content conversion can lose bytes, and
            # then the worktree is untouched and nothing is recorded as saved.
            assert conversion, f"refused without any conversion in play: {exc}"
            assert str(wt) in str(exc)
            assert state(wt) == before
            s = self.store.get(sid)
            assert s.live and not s.pending
            assert git("for-each-ref", f"refs/ao/preserved/{sid}", cwd=self.repo) == ""
            self.counts["refused"] += 1
            return
        if out.status == "refused" and out.data.get("inexact"):
            # A file that would not come back byte for byte keeps the worktree, only
            # where content conversion is in play; the rest is saved as a checkpoint.
            assert conversion, f"kept without any conversion in play: {out.message}"
            assert state(wt) == before
            s = self.store.get(sid)
            assert s.live and not s.pending
            # (A worktree git calls clean has no save to hold.)
            held = git("for-each-ref", "--format=%(objectname)", f"refs/ao/preserved/{sid}",
                       cwd=self.repo).strip()
            assert (held or None) == out.data.get("preserved_commit"), out
            self.counts["refused"] += 1
            return
        assert out.status == "ok", out
        assert not os.path.lexists(wt)
        back = restore.restore_one(self.ctx, sid)
        assert back.status == "ok", back
        assert_restored(before, state(wt))
        assert git("for-each-ref", f"refs/ao/preserved/{sid}", cwd=self.repo) == ""
        self.counts["exact"] += 1


@pytest.fixture
def bench(tmp_path):
    b = Bench(tmp_path)
    yield b
    # Printed with -s; a refusal is a pass only where conversion is in play, and
    # most states must come back exactly.
    print(f"\nproperty examples: {b.n}, exact round trips: {b.counts['exact']}, "
          f"refused: {b.counts['refused']}")
    assert b.counts["exact"] > b.counts["refused"]


# The profile's examples in four shards, so two workers share them; each shard is
# its own test function, so its derandomized examples differ from the others'.
SHARDS = 4
SHARD = settings(PROFILE, max_examples=max(PROFILE.max_examples // SHARDS, 1))


@pytest.mark.slow
@SHARD
@given(STATES)
# Shrunk failures, kept as regressions (see docs/DESIGN.md, "Bugs the property test found"):
# a tracked file replaced by a directory: restore saw a false clash.
@example((False, [("file_to_dir", 0)]))
# a tracked directory replaced by a file: restore saw a false clash.
@example((False, [("dir_to_file", 0, b"")]))
# autocrlf: `git cat-file --batch --filters` gives the unconverted size.
@example((False, [("eol", "autocrlf=true")]))
# an emptied directory where a tracked file was is not a file to compare.
@example((False, [("file_to_dir", 0), ("delete", 0, False)]))
# new .gitattributes under autocrlf: files were checked out before it came back.
@example((False, [("eol", "autocrlf=true"), ("eol", "attr-lf")]))
def test_round_trip_or_refusal_1(bench, case):
    detached, ops = case
    bench.run(detached, ops)


@pytest.mark.slow
@SHARD
@given(STATES)
def test_round_trip_or_refusal_2(bench, case):
    detached, ops = case
    bench.run(detached, ops)


@pytest.mark.slow
@SHARD
@given(STATES)
def test_round_trip_or_refusal_3(bench, case):
    detached, ops = case
    bench.run(detached, ops)


@pytest.mark.slow
@SHARD
@given(STATES)
def test_round_trip_or_refusal_4(bench, case):
    detached, ops = case
    bench.run(detached, ops)


def test_property_profile_is_fixed_and_long_enough():
    """CI runs a derandomized profile of at least 200 examples."""
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.max_examples >= 200 and ci.deadline is None
