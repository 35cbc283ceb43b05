"""Read `logs/git-ao.log` back for `git ao log`.

A line is `<time> pid=<pid> <action> <session> <decision> key=value ...`, values
quoted with Python's repr when they hold spaces or quotes (see git_ao/store/log.py). The
newest entries may be in rotated files (`git-ao.log.1`, ...), read as needed.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any

from git_ao.errors import Fatal
from git_ao.store import log

_TOKEN = re.compile(r"""(?:[^\s'"=]+=)?(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)""")


def _value(text: str) -> Any:
    if text[:1] in ("'", '"'):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
    return text


def parse(line: str) -> dict[str, Any]:
    """One log line as {'line', 'time', 'pid', 'action', 'session', 'decision', 'fields'}.
    A line that does not have that shape keeps only 'line'."""
    tokens = _TOKEN.findall(line.rstrip("\n"))
    entry: dict[str, Any] = {"line": line.rstrip("\n")}
    if len(tokens) < 5 or not tokens[1].startswith("pid="):
        return entry
    fields = {}
    for tok in tokens[5:]:
        key, _, val = tok.partition("=")
        fields[key] = _value(val)
    entry.update(time=tokens[0], pid=int(tokens[1][4:]) if tokens[1][4:].isdigit() else None,
                 action=tokens[2], session=_value(tokens[3]), decision=_value(tokens[4]),
                 fields=fields)
    return entry


def tail(data_dir: str, count: int, session_id: str | None = None) -> list[dict[str, Any]]:
    """The last `count` entries (oldest first), optionally only one session's.

    Reads the current log then the rotated ones until enough are found; a
    missing log gives []; one that cannot be read raises Fatal."""
    base = log.path(data_dir)
    files = [base] + [f"{base}.{n}" for n in range(1, log.BACKUPS + 1)]
    found: list[dict[str, Any]] = []
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
        except FileNotFoundError:
            break
        except OSError as exc:
            # A log that is a directory, or unreadable: one line, not an internal error.
            raise Fatal(f"cannot read the log {path}: {exc.strerror or exc}") from exc
        entries = [parse(x) for x in lines if x.strip()]
        if session_id is not None:
            entries = [e for e in entries if e.get("session") == session_id]
        found = entries + found
        if len(found) >= count:
            break
    return found[-count:] if os.path.exists(base) or found else []
