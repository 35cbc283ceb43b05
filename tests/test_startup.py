"""Start-up: commands with little to do import only what they use.

Nothing here times anything (bench/run.py does, against a bare interpreter
start); these tests pin down which modules a start imports."""

import subprocess
import sys

import pytest

from tests.conftest import ao
from tests.support import ROOT

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


def test_the_log_still_writes_after_a_lazy_import(tmp_path):
    from git_ao.store import log
    log.event(str(tmp_path), "list", "s1", "ok", note="two words")
    log.close()
    text = (tmp_path / "logs" / log.LOG_NAME).read_text()
    assert "list s1 ok note='two words'" in text


def test_a_listing_to_a_pipe_reads_no_git_config(repo, worktrees):
    """The colour is decided when something coloured is printed: a listing to a
    pipe prints nothing coloured, so it starts no `git config`."""
    worktrees(repo, "w1")
    res = ao("ao", "list", "-v", cwd=repo)
    assert "trace: git for-each-ref" in res.stderr
    assert "trace: git config" not in res.stderr
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
