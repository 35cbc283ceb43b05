"""git ao log: the recent decisions of preserve, restore and prune; no prompt text ever."""

import json
import os

from tests.support import ao, dirty


def test_log_shows_recent_decisions_and_never_the_prompt(repo, worktrees, ao_env):
    secret = "PROMPT-TEXT please refactor"
    wt = worktrees(repo, "lg", prompt=secret, harness="my agent")
    dirty(wt)
    ao("ao-preserve", "lg", cwd=repo)
    ao("ao-restore", cwd=repo)
    ao("ao-preserve", "lg", "--keep-worktree", cwd=repo)
    ao("ao-prune", cwd=repo)
    worktrees(repo, "other")
    entries = json.loads(ao("ao", "log", "-n", "100", "--json", cwd=repo).stdout)["entries"]
    actions = [(e["action"], e["session"]) for e in entries]
    assert ("preserve", "lg") in actions and ("restore", "lg") in actions
    assert ("register", "other") in actions
    reg = next(e for e in entries if e["action"] == "register" and e["session"] == "lg")
    assert reg["fields"]["harness"] == "my agent"
    only = json.loads(ao("ao", "log", "--session", "lg", "--json", cwd=repo).stdout)["entries"]
    assert only and {e["session"] for e in only} == {"lg"}
    text = ao("ao", "log", "-n", "2", cwd=repo).stdout.splitlines()
    assert len(text) == 2 and "register other" in text[-1]
    logs = "".join(p.read_text() for p in (ao_env / "aodata" / "logs").iterdir())
    assert secret not in logs and "PROMPT-TEXT" not in logs


def test_log_reads_rotated_files_and_an_empty_log(repo, ao_env):
    assert ao("ao", "log", cwd=repo).stdout == ""
    logs = ao_env / "aodata" / "logs"
    logs.mkdir(parents=True)
    (logs / "git-ao.log.1").write_text(
        "2026-01-01T00:00:00+0000 pid=1 preserve a ok ref=refs/ao/preserved/a\n")
    (logs / "git-ao.log").write_text(
        "2026-01-02T00:00:00+0000 pid=2 restore a ok detail='applied 3 files'\n")
    entries = json.loads(ao("ao", "log", "--json", cwd=repo).stdout)["entries"]
    assert [e["action"] for e in entries] == ["preserve", "restore"]
    assert entries[1]["fields"] == {"detail": "applied 3 files"}


def _open_files_under(root):
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(root)):
            held.append(target)
    return held


def test_switching_data_dir_in_one_process_closes_the_previous_log(tmp_path):
    """One process serving several data dirs (the property test does) must close
    the log file it no longer writes, not leave it to the garbage collector, which
    reports it as an unclosed file in whatever test runs next."""
    from git_ao.store import log
    first, second = tmp_path / "first", tmp_path / "second"
    log.event(str(first), "preserve", "a", "saved")
    log.event(str(second), "preserve", "b", "saved")
    assert _open_files_under(first) == []
    assert "preserve a saved" in (first / "logs" / "git-ao.log").read_text()
    assert "preserve b saved" in (second / "logs" / "git-ao.log").read_text()


def test_the_log_rotates_by_size_keeping_whole_lines_and_the_backups(tmp_path, monkeypatch):
    from git_ao.store import log
    monkeypatch.setattr(log, "MAX_BYTES", 400)
    data = str(tmp_path / "data")
    try:
        for i in range(60):
            log.event(data, "preserve", f"s{i}", "ok", note="x" * 20)
    finally:
        log.close()
    logs = tmp_path / "data" / "logs"
    names = sorted(p.name for p in logs.iterdir())
    assert names == ["git-ao.log"] + [f"git-ao.log.{n}" for n in range(1, log.BACKUPS + 1)]
    lines = []
    for name in reversed(names[1:]):
        lines += (logs / name).read_text().splitlines()
    lines += (logs / "git-ao.log").read_text().splitlines()
    assert all(os.path.getsize(logs / n) <= 400 for n in names)
    assert all(ln.split(" ")[1] == f"pid={os.getpid()}" for ln in lines)
    # The newest lines, whole and in order; the oldest went with the last backup.
    kept = [int(ln.split(" ")[3][1:]) for ln in lines]
    assert kept == list(range(60 - len(kept), 60))
    assert oct(os.stat(logs / "git-ao.log").st_mode & 0o777) == "0o600"


def test_a_log_another_process_rotated_is_written_where_its_path_now_points(tmp_path):
    from git_ao.store import log
    data = str(tmp_path / "data")
    logs = tmp_path / "data" / "logs"
    try:
        log.event(data, "preserve", "a", "ok")
        os.replace(logs / "git-ao.log", logs / "git-ao.log.1")  # as another process rotates
        log.event(data, "preserve", "b", "ok")
    finally:
        log.close()
    assert " b ok" in (logs / "git-ao.log").read_text()
    assert " b " not in (logs / "git-ao.log.1").read_text()
