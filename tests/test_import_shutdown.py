"""The import a preserve --all or a restore runs first (import.tools): a row of
another type, an adapter that fails, or the import step itself failing never stops
the save or the restore; a refusal reported before is not printed again at boot."""


from tests import tool_state_b as tb
from tests.support import ao, dirty, sessions_by_id


def _crystal_blob_at_shutdown(repo, worktrees):
    """The first report's state: a session `w` with work, import.tools auto, and a
    crystal database holding a path as a BLOB."""
    w = worktrees(repo, "w")
    dirty(w)
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    db = tb.crystal_db()
    tb.crystal_row(db, id="s1", name="n", initial_prompt="p", worktree_name="w",
                 worktree_path=b"/tmp", status="running", archived=0)
    return w


def test_preserve_all_and_restore_go_on_past_a_row_of_another_type(repo, worktrees, ao_env):
    w = _crystal_blob_at_shutdown(repo, worktrees)
    res = ao("ao-preserve", "--all", cwd=repo, rc=1)  # the new refusal: said once
    assert "session 's1' worktree_path is a BLOB" in res.stdout + res.stderr
    assert not w.exists() and sessions_by_id(repo)["w"]["state"] == "pending"
    # The boot: the same refusal, reported before, is not printed again.
    res = ao("ao-restore", cwd=repo)
    assert w.exists() and "crystal" not in res.stdout + res.stderr
    res = ao("ao-preserve", "--all", cwd=repo)
    assert "crystal" not in res.stdout + res.stderr
    # `git ao import` by hand still says it, with status nothing.
    res = ao("ao", "import", "--tool", "crystal", cwd=repo)
    assert "still not importable (reported before)" in res.stdout


def test_preserve_all_and_restore_go_on_past_an_adapter_that_crashes(repo, worktrees, ao_env,
                                                                     monkeypatch):
    from git_ao.importers import crystal

    def crash(conn, path):
        raise TypeError("expected str, bytes or os.PathLike object, not int")

    monkeypatch.setattr(crystal, "_read", crash)
    w = _crystal_blob_at_shutdown(repo, worktrees)
    res = ao("ao-preserve", "--all", cwd=repo, rc=1)
    assert "internal error: TypeError: expected str" in res.stdout
    assert "fatal" not in res.stderr
    assert not w.exists() and sessions_by_id(repo)["w"]["state"] == "pending"
    res = ao("ao-restore", cwd=repo)
    assert w.exists() and "crystal" not in res.stdout + res.stderr


def test_preserve_all_and_restore_go_on_past_an_import_that_crashes(repo, worktrees, ao_env,
                                                                    monkeypatch):
    """Whatever fails inside the import step itself: one refused line, logged; the
    save and the restore still run."""
    from git_ao.importers import tools

    def crash(*args, **kw):
        raise KeyError("boom")

    monkeypatch.setattr(tools, "run", crash)
    w = _crystal_blob_at_shutdown(repo, worktrees)
    res = ao("ao-preserve", "--all", cwd=repo, rc=1)
    assert "import.tools: internal error: KeyError: 'boom'" in res.stdout
    assert not w.exists() and sessions_by_id(repo)["w"]["state"] == "pending"
    res = ao("ao-restore", cwd=repo, rc=1)
    assert "import.tools: internal error: KeyError" in res.stdout
    assert w.exists() and sessions_by_id(repo)["w"]["state"] == "live"
    log = (ao_env / "aodata" / "logs" / "git-ao.log").read_text()
    assert "import - failed" in log or "KeyError" in log
