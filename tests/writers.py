"""Live writers for tests: processes that keep writing into a worktree the way
agents do, and a checker that every write they logged came back.

Four kinds (start(kind, worktree, log)):

- "cwd": its working directory is the worktree; writes relative paths
  (`cwd/file-<n>.txt`) in a loop, whole content each time;
- "abspath": its working directory is elsewhere; writes by absolute path after
  `os.makedirs(dirname, exist_ok=True)`, so it re-creates the worktree's path
  once the worktree was moved away;
- "append": holds `transcript.log` open for appending and writes numbered
  lines (a transcript);
- "editor": writes `.notes.txt.swp`, then renames it over `notes.txt`.

Each writer logs every write as one JSON line to a log file outside the
worktree, flushed per write, after the write itself: {"seq", "path" (relative
to the worktree), "content"} for whole files, {"seq", "path", "line"} for the
appender. SIGTERM sets a flag: the current write (and its log line) finishes,
then the writer exits 0.

This file is also the writers' program: `python tests/writers.py KIND
WORKTREE LOG INTERVAL` (it imports nothing from the test package).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

KINDS = ("cwd", "abspath", "append", "editor")


class Writer:
    """A running writer: its Popen, kind and log path."""

    def __init__(self, proc: subprocess.Popen, kind: str, log: Path):
        self.proc, self.kind, self.log = proc, kind, log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def entries(self) -> list[dict]:
        """The writes logged so far (a torn last line, mid-write, is left out)."""
        return read_log(self.log)

    def wait_writes(self, n: int = 1, *, polls: int = 600) -> None:
        """Wait until at least `n` writes are logged (bounded polling, 0.05 s a
        poll); fails when the writer exits first or never gets there."""
        for _ in range(polls):
            if len(self.entries()) >= n:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.kind} writer exited with {self.proc.returncode}")
            time.sleep(0.05)
        raise AssertionError(f"{self.kind} writer logged fewer than {n} writes")

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait for the exit status (killed only when it hangs)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self) -> None:
        """Clean-up: SIGKILL if still running, and reap."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def start(kind: str, worktree: Path, log: Path, *, interval: float = 0.01,
          elsewhere: Path | None = None) -> Writer:
    """Start a writer of `kind` on `worktree`, logging to `log` (which must lie
    outside the worktree). `elsewhere`: the working directory of the writers
    that do not sit in the worktree (default: the log's directory)."""
    if kind not in KINDS:
        raise ValueError(f"unknown writer kind {kind!r}")
    worktree, log = Path(worktree).absolute(), Path(log).absolute()
    if log == worktree or worktree in log.parents:
        raise ValueError("the log must lie outside the worktree")
    cwd = worktree if kind == "cwd" else (elsewhere or log.parent)
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), kind, str(worktree), str(log),
         repr(interval)],
        cwd=cwd, stdin=subprocess.DEVNULL, start_new_session=True)
    return Writer(proc, kind, log)


def read_log(log: Path) -> list[dict]:
    """The logged writes in order; a last line without its newline is left out."""
    try:
        text = Path(log).read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]


def check_writes(log_path: Path, restored_worktree: Path, reported: set[str]) -> list[str]:
    """Problems with the writes logged in `log_path`, against `restored_worktree`.

    Each path's last whole-content write must be what the file holds, and each
    line appended must be a line of its file, unless the path is in `reported`
    (the caller was told that path's latest work may be lost). Returns one
    message per problem, [] when every write is there."""
    last: dict[str, str] = {}
    lines: dict[str, list[str]] = {}
    for e in read_log(log_path):
        if "line" in e:
            lines.setdefault(e["path"], []).append(e["line"])
        else:
            last[e["path"]] = e["content"]  # a later write supersedes an earlier one
    problems = []
    for rel, content in sorted(last.items()):
        if rel in reported:
            continue
        f = Path(restored_worktree) / rel
        try:
            have = f.read_text()
        except OSError as exc:
            problems.append(f"{rel}: missing ({exc.strerror}), last write {content!r}")
            continue
        if have != content:
            problems.append(f"{rel}: holds {have[:60]!r}, last write was {content!r}")
    for rel, want in sorted(lines.items()):
        if rel in reported:
            continue
        try:
            have_lines = set((Path(restored_worktree) / rel).read_text().splitlines())
        except OSError as exc:
            problems.append(f"{rel}: missing ({exc.strerror}), {len(want)} lines appended")
            continue
        lost = [line for line in want if line not in have_lines]
        if lost:
            problems.append(f"{rel}: {len(lost)} of {len(want)} appended lines missing, "
                            f"first {lost[0]!r}")
    return problems


# ------------------------------------------------------------ the writer program


def _main(kind: str, worktree: str, log_path: str, interval: float) -> int:
    stopping = False

    def on_term(signum, frame):
        nonlocal stopping
        stopping = True  # finish the write in hand, then leave the loop

    signal.signal(signal.SIGTERM, on_term)
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(open(log_path, "a", encoding="utf-8"))
        if kind == "append":
            os.makedirs(worktree, exist_ok=True)
            transcript = stack.enter_context(
                open(os.path.join(worktree, "transcript.log"), "a", encoding="utf-8"))
        seq = 0
        while not stopping:
            seq += 1
            log.write(json.dumps(_write_once(kind, worktree, seq, transcript
                                             if kind == "append" else None)) + "\n")
            log.flush()
            time.sleep(interval)
    return 0


def _write_once(kind: str, worktree: str, seq: int, transcript) -> dict:
    """One write of `kind`; returns its log entry."""
    n = seq % 3
    if kind == "append":
        line = f"transcript line {seq}"
        transcript.write(line + "\n")
        transcript.flush()
        return {"seq": seq, "path": "transcript.log", "line": line}
    if kind == "cwd":
        rel = os.path.join("cwd", f"file-{n}.txt")
        os.makedirs("cwd", exist_ok=True)
        content = f"cwd write {seq}\n"
        with open(rel, "w", encoding="utf-8") as f:  # relative: wherever the cwd went
            f.write(content)
    elif kind == "abspath":
        rel = os.path.join("abs", f"file-{n}.txt")
        full = os.path.join(worktree, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)  # re-creates a moved worktree
        content = f"abspath write {seq}\n"
        with open(full, "w", encoding="utf-8") as f:
            f.write(content)
    else:
        rel = "notes.txt"
        swp = os.path.join(worktree, ".notes.txt.swp")
        content = f"editor save {seq}\n"
        with open(swp, "w", encoding="utf-8") as f:
            f.write(content)
        os.rename(swp, os.path.join(worktree, rel))
    return {"seq": seq, "path": rel, "content": content}


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
