"""Start-up: commands with little to do import only what they use.

Nothing here times anything (bench/run.py does, against a bare interpreter
start); these tests pin down which modules a start imports."""

import os
import subprocess
import sys

import pytest

from tests.conftest import ao
from tests.support import ROOT, git

# What a listing never runs: the capture code, logging (nothing is logged),
# secrets (hashlib and OpenSSL, for a random name).
NOT_FOR_A_LISTING = ("git_ao.save.capture", "logging", "secrets", "hashlib", "json",
                     "git_ao.store.trash", "git_ao.git.query", "tempfile")


def _imported(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    script = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    res = subprocess.run([sys.executable, "-c", script],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return set(res.stdout.split())


@pytest.mark.parametrize("module", ["git_ao.manage.listing", "git_ao.context",
                                    "git_ao.store.log", "git_ao.store.database",
                                    "git_ao.cli.output", "git_ao.cli.bodies"])
def test_listing_modules_import_no_capture_logging_or_secrets(module):
    held = _imported(f"import {module}")
    assert module in held
    assert not held & set(NOT_FOR_A_LISTING), sorted(held & set(NOT_FOR_A_LISTING))


# What a checkpoint never runs: the agents' process scan, a pool of threads for a
# batch, the compression modules shutil loads, a scratch file for a merge.
NOT_FOR_A_CHECKPOINT = ("psutil", "git_ao.agents.processes", "concurrent.futures", "shutil",
                        "tempfile", "logging")


def test_a_checkpoint_imports_no_agent_scan_pool_or_shutil():
    held = _imported("import git_ao.preserve.checkpoint")
    assert "git_ao.save.capture" in held
    assert not held & set(NOT_FOR_A_CHECKPOINT), sorted(held & set(NOT_FOR_A_CHECKPOINT))


def test_the_log_still_writes_after_a_lazy_import(tmp_path):
    from git_ao.store import log
    log.event(str(tmp_path), "list", "s1", "ok", note="two words")
    log.close()
    text = (tmp_path / "logs" / log.LOG_NAME).read_text()
    assert "list s1 ok note='two words'" in text


def test_a_listing_to_a_pipe_reads_no_git_config(repo, worktrees):
    """The colour is decided when something coloured is printed: a listing to a
    pipe prints nothing coloured, so it starts no `git config`; its repository and
    preserve refs are read from git's files, so it starts no git at all."""
    (worktrees(repo, "w1") / "work.txt").write_text("work\n")
    ao("ao-preserve", "--keep-worktree", "w1", cwd=repo)
    res = ao("ao", "list", "-v", cwd=repo)
    assert "refs/ao/preserved/w1" in res.stdout
    assert "trace: git " not in res.stderr, res.stderr
    # With a record to print, git's config still decides its colour.
    res = ao("-c", "color.ui=always", "ao-preserve", "-n", "w1", cwd=repo)
    assert "\x1b[32mok\x1b[m" in res.stdout
    res = ao("-c", "color.ui=never", "ao-preserve", "-n", "w1", cwd=repo)
    assert "\x1b[" not in res.stdout and "\tok\t" in res.stdout


@pytest.mark.parametrize("path", ["/plain/path", "/a b/c%d?e#f", "/ünï/cödé", "/x\udcff/y",
                                  "/~user/.ao-data_1/git-ao.db", "/tab\tnew\nline"])
def test_the_database_uri_encodes_a_path_as_urllib_does(path):
    from urllib.parse import quote

    from git_ao.store.datadir import uri_path
    assert uri_path(path) == quote(path, errors="surrogateescape")


def test_a_listing_opens_the_database_in_a_directory_named_oddly(repo, worktrees, tmp_path):
    data = tmp_path / "a b%c?d#é"
    env = {"AO_DATA_DIR": str(data)}
    worktrees(repo, "w1", register=False)
    ao("ao", "add", tmp_path / "wt" / "w1", "--id", "w1", cwd=repo, env=env)
    res = ao("ao", "list", cwd=repo, env=env)
    assert res.stdout.startswith("w1\t")


# What a listing, the boot's restore with nothing pending and a TAB on ids never
# need: typing (most of all), inspect (which dataclasses reads only for a class
# without a docstring), shutil and its compression modules, click, the parser of
# git-ao.toml when there is no such file.
NOT_FOR_A_QUICK_START = {"typing", "inspect", "shutil", "lzma", "click", "tomllib",
                         "git_ao.manage.doctor", "git_ao.context"}


@pytest.mark.parametrize("entry,argv", [("ao", ["list"]), ("ao", ["list", "--json"]),
                                        ("restore", ["-q"])])
def test_a_listing_and_the_boot_import_no_typing_inspect_or_shutil(repo, worktrees, entry,
                                                                   argv):
    worktrees(repo, "w1")
    ao("ao", "list", cwd=repo)  # the database exists, git's version is remembered
    code = (f"import sys\nsys.argv = ['git-ao', *{argv!r}]\nfrom git_ao.cli import entry\n"
            f"try:\n    entry.{entry}()\nexcept SystemExit:\n    pass")
    script = f"{code}\nprint('\\n'.join(sorted(sys.modules)))"
    res = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True,
                         text=True, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    held = set(res.stdout.split())
    assert "git_ao.cli.entry" in held
    assert not held & NOT_FOR_A_QUICK_START, sorted(held & NOT_FOR_A_QUICK_START)


def test_a_tab_on_ids_imports_no_typing_re_or_click(repo, worktrees):
    worktrees(repo, "w1")
    ao("ao", "list", cwd=repo)
    code = ("import os, sys\nos.environ.update(COMP_WORDS='git-ao-preserve ', COMP_CWORD='1',"
            " _GIT_AO_PRESERVE_COMPLETE='bash_complete')\nfrom git_ao.cli import entry\n"
            "entry.preserve()\nprint('\\n'.join(sorted(sys.modules)))")
    res = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                         text=True, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "plain,w1" in res.stdout.split()
    held = set(res.stdout.split())
    assert not held & {"typing", "re", "click", "subprocess"}, held & {"typing", "re", "click"}


def test_an_unchanged_checkpoint_imports_no_array_collections_or_subprocess(repo, worktrees):
    import time
    worktrees(repo, "w1")
    time.sleep(0.1)  # out of the racy window: the checkpoint writes its stat file
    ao("ao", "checkpoint", "w1", cwd=repo)
    code = ("import sys\nsys.argv = ['git-ao', 'checkpoint', 'w1', '-q']\n"
            "from git_ao.cli import entry\ntry:\n    entry.ao()\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\nprint('\\n'.join(sorted(sys.modules)))")
    res = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                         text=True, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    held = set(res.stdout.split())
    assert "git_ao.save.unchanged" in held  # answered by the quick path
    unwanted = {"array", "collections", "subprocess", "typing", "click", "sqlite3"}
    assert not held & unwanted, sorted(held & unwanted)


def _run_entry(cwd, argv, main="from git_ao.cli import entry\nentry.ao()", stdin=""):
    """Run an entry point in a fresh interpreter: (exit status, stdout, modules held)."""
    code = (f"import sys\nsys.argv = ['git-ao', *{argv!r}]\ntry:\n    "
            + main.replace("\n", "\n    ") + "\nexcept SystemExit as e:\n    rc = e.code\n"
            "else:\n    rc = 0\nsys.stdout.flush()\n"
            "sys.stderr.write('\\n'.join(sorted(sys.modules)))\nsys.exit(rc)")
    res = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                         input=stdin, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=False)
    return res.returncode, res.stdout, set(res.stderr.split())


def test_a_checkpoint_with_something_to_save_imports_no_click(repo, worktrees):
    """A hook's or timer's checkpoint to a pipe runs the command's body without
    click, and says and exits as the click command does."""
    import re
    for name in ("w1", "w2"):
        (worktrees(repo, name) / "new.txt").write_text("work\n")
    quick = _run_entry(repo, ["checkpoint", "w1"])
    full = _run_entry(repo, ["checkpoint", "w2"], main="from git_ao.cli.ao import main\nmain()")
    assert "click" not in quick[2] and "click" in full[2]

    def same(out):
        return re.sub(r"\b[0-9a-f]{12,40}\b", "OID", out.replace("w2", "w1"))
    assert (quick[0], same(quick[1])) == (full[0], same(full[1])) == (0, same(quick[1]))
    assert "1 untracked" in quick[1]
    # A usage error is git's, from either path alike.
    bad = _run_entry(repo, ["checkpoint", "w1", "--all"])
    assert bad[0] == 129 and "click" not in bad[2]


def test_a_hook_checkpoint_reads_its_json_once_on_the_quick_path(repo, worktrees):
    import json
    w = worktrees(repo, "w1")
    (w / "new.txt").write_text("work\n")
    rc, out, held = _run_entry(repo, ["checkpoint", "--hook-input", "--trigger", "hook", "-q"],
                               stdin=json.dumps({"cwd": str(w), "session_id": "x"}))
    assert (rc, out) == (0, "") and "click" not in held
    res = ao("ao", "history", "w1", "--json", cwd=repo)
    assert [e["trigger"] for e in json.loads(res.stdout)["entries"]] == ["hook"]


@pytest.mark.parametrize("where", ["main", "sub", "linked", "nested", "git-dir", "elsewhere"])
def test_a_listing_finds_its_repository_as_git_does_with_no_git_process(
        repo, make_repo, worktrees, where, tmp_path):
    """`git ao list` reads its repository and the preserve refs from git's files:
    the sessions it shows are those git's own discovery names, and it starts no
    git process where the files can answer (here: every case but GIT_DIR)."""
    other = make_repo()
    w1 = worktrees(repo, "w1")
    worktrees(other, "o1")
    (w1 / "work.txt").write_text("work\n")
    ao("ao-preserve", "--keep-worktree", "w1", cwd=repo)
    (repo / "sub").mkdir()
    git("init", "-q", str(w1 / "inner"), cwd=w1)
    cwd = {"main": repo, "sub": repo / "sub", "linked": w1, "nested": w1 / "inner",
           "git-dir": repo / ".git", "elsewhere": tmp_path}[where]
    res = ao("ao", "list", "-v", cwd=cwd)
    shown = {ln.split("\t")[0] for ln in res.stdout.splitlines() if ln}
    want = {"main": {"w1"}, "sub": {"w1"}, "linked": {"w1"}, "nested": set(),
            "git-dir": {"w1"}, "elsewhere": {"w1", "o1"}}[where]
    assert shown == want, res.stdout
    if where != "nested":  # a repository no session is in: git is asked
        assert "trace: git " not in res.stderr, res.stderr
    # GIT_DIR moves git's discovery: git is asked, and says what it says.
    res = ao("ao", "list", "-v", cwd=w1, env={**os.environ, "GIT_DIR": str(other / ".git")})
    assert "trace: git rev-parse" in res.stderr


@pytest.mark.parametrize("layout", ["loose", "packed", "both", "none", "symbolic", "nested"])
def test_refs_under_agrees_with_git_for_each_ref(repo, layout):
    from git_ao import gitfiles
    head = git("rev-parse", "HEAD", cwd=repo).strip()
    if layout != "none":
        git("update-ref", "refs/ao/preserved/a", head, cwd=repo)
        git("update-ref", "refs/ao/preserved/b.c-d_e", head, cwd=repo)
    if layout in ("packed", "both"):
        git("pack-refs", "--all", cwd=repo)
    if layout == "both":
        git("commit", "-q", "--allow-empty", "-m", "next", cwd=repo)
        git("update-ref", "refs/ao/preserved/a", "HEAD", cwd=repo)  # loose wins
    if layout == "symbolic":
        git("symbolic-ref", "refs/ao/preserved/s", "refs/heads/main", cwd=repo)
    if layout == "nested":
        git("update-ref", "refs/ao/preserved/x/y", head, cwd=repo)
    out = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/ao/preserved/",
              cwd=repo)
    theirs = dict(ln.split() for ln in out.splitlines())
    ours = gitfiles.refs_under(str(repo / ".git"), "refs/ao/preserved/")
    if layout in ("symbolic", "nested"):
        assert ours is None  # only git can tell: the listing asks it
    else:
        assert ours == theirs
