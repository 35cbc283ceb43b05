"""How results reach a person or a program.

On a terminal: rich tables, colour and a progress bar for batches. Otherwise:
plain, stable one-line records, tab-separated, no colour:

    <action>\t<status>\t<session-id>\t<message>

A field holding a tab, a newline, a double quote, a backslash or another
control character is written C-style quoted, as git quotes such paths
(core.quotePath). With -z every field is followed by a NUL instead and nothing
is quoted (git's -z). With --json: one JSON document on stdout,
`{"schema": 1, "command": ..., ...}`. Errors, warnings and the summary go to
stderr, and so do the records -q still prints (refused, failed, attention).

Colour: --color=WHEN, else git's color.ao, else color.ui (so `git -c
color.ui=never ao list` works), else NO_COLOR (no colour, no bold, no dim), else
CLICOLOR_FORCE or FORCE_COLOR, else only on a terminal.
"""

from __future__ import annotations

import sys
import threading

from git_ao.errors import one_line

# Not typing's: a listing imports nothing it does not run (mypy takes any name
# TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from contextlib import AbstractContextManager
    from types import TracebackType
    from typing import IO, Any

    from rich.console import Console

    from git_ao.outcome import Outcome

JSON_SCHEMA = 1
# The records a summary counts apart from the sessions of the command.
APART = ("import", "push", "relaunch")

# By outcome.Status, whose members are these strings.
_STYLE = {"ok": "green", "nothing": "dim", "attention": "yellow", "refused": "red",
          "failed": "red"}


_SGR = {"green": "32", "dim": "2", "yellow": "33", "red": "31"}
def quote_field(text: str) -> str:
    """`text` as it goes into a plain record: unchanged, or C-style quoted (as git
    quotes paths) when it holds a character that does not print (a newline, a tab,
    a byte that was not UTF-8) or starts with a double quote (`errors.one_line`)."""
    return one_line(text, quoted=True)


def colour_wanted(when: str | None, tty: bool, config: dict[str, str] | None) -> bool:
    """Whether to colour: `when` (--color) wins, then color.ao, then color.ui from
    git's `config` (lower-case keys), then NO_COLOR, then CLICOLOR_FORCE or
    FORCE_COLOR, else `tty`."""
    import os
    config = config or {}
    for value in (when, config.get("color.ao"), config.get("color.ui")):
        if value is None:
            continue
        value = value.lower()
        if value == "always":
            return True
        if value in ("never", "false", "no", "off", "0"):
            return False
        if value in ("auto", "true", "yes", "on", "1", ""):
            return tty
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("CLICOLOR_FORCE", "0") != "0" or os.environ.get("FORCE_COLOR"):
        return True
    return tty


class Printer:
    """Renders outcomes and listings. json_mode: print one JSON document at the end;
    quiet: print only the records not ok (errors, attention) and warnings, on stderr; verbose: show the git commands run; nul: -z
    records; colour: whether to colour (see colour_wanted)."""

    def __init__(self, *, json_mode: bool = False, quiet: bool = False,
                 verbose: bool = False, stream: IO[str] | None = None, nul: bool = False,
                 colour: bool | None = None) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self.verbose = verbose
        self.nul = nul
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() and not json_mode and not nul
        self._colour = self.tty if colour is None else colour
        # Set by the command: asked on first use of the colour, so a run that
        # prints nothing coloured (a listing to a pipe) reads no git config.
        self.decide_colour: Callable[[], bool] | None = None
        self._deciding = threading.Lock()
        self._console: Console | None = None
        self._err_console: Console | None = None

    @property
    def colour(self) -> bool:
        """Whether to colour (see colour_wanted); decided on first use."""
        if self.decide_colour is not None:
            with self._deciding:  # batches print from worker threads
                if self.decide_colour is not None:
                    self._colour = self.decide_colour()
                    self.decide_colour = None
        return self._colour

    @colour.setter
    def colour(self, value: bool) -> None:
        self.decide_colour = None
        self._colour = value

    def _make_console(self, stream: IO[str], tty: bool) -> Console:
        from rich.console import Console
        # No colour means no style at all (color_system None drops bold and dim too).
        return Console(file=stream, highlight=False, no_color=False,
                       force_terminal=True if self.colour else tty,
                       color_system=("auto" if tty else "standard") if self.colour else None)

    @property
    def console(self) -> Console:
        """The rich Console for standard output."""
        if self._console is None:
            self._console = self._make_console(self.stream, self.tty)
        return self._console

    @property
    def err_console(self) -> Console:
        """The rich Console for standard error (the summary)."""
        if self._err_console is None:
            self._err_console = self._make_console(sys.stderr, sys.stderr.isatty())
        return self._err_console

    def _record(self, fields: Sequence[str], stream: Any = None) -> None:
        """One plain record: tab-separated and quoted, or NUL-terminated fields with -z."""
        stream = stream or self.stream
        if self.nul:
            stream.write("".join(f + "\0" for f in fields))
        else:
            stream.write("\t".join(map(quote_field, fields)) + "\n")

    # ------------------------------------------------------------ messages

    def error(self, prefix: str, message: str) -> None:
        """One line on stderr: `error: ...` or `fatal: ...` (what does not print in
        `message` escaped, so a path holding a newline keeps it one line)."""
        sys.stderr.write(f"{prefix}: {one_line(message)}\n")
        sys.stderr.flush()

    def hint(self, message: str) -> None:
        """One `hint:` line on stderr (not with -q or --json)."""
        if not self.quiet and not self.json_mode:
            sys.stderr.write(f"hint: {one_line(message)}\n")

    def trace(self, argv: Iterable[str], cwd: str) -> None:
        """The -v trace of one git command, on stderr like GIT_TRACE."""
        from shlex import quote
        sys.stderr.write(f"trace: git {' '.join(quote(a) for a in argv)}  (in {cwd})\n")

    def emit_json(self, command: str, **payload: Any) -> None:
        """Print the one JSON document of the run."""
        import json  # lazily: only --json prints a document
        doc: dict[str, Any] = {"schema": JSON_SCHEMA, "command": command}
        doc.update(payload)
        self.stream.write(json.dumps(doc, indent=2) + "\n")

    # ------------------------------------------------------------ outcomes

    def outcome(self, o: Outcome) -> None:
        """One session's result, as it happens (not in JSON mode)."""
        from git_ao.outcome import Status
        if self.json_mode:
            return
        if self.quiet and o.status in (Status.OK, Status.NOTHING):
            # Its warnings all the same: what a save left out is no success to hide
            # (the record of any other status holds them in its message).
            if o.warnings:
                for w in o.warnings:
                    sys.stderr.write(f"warning: {one_line(o.session_id)}: {one_line(w)}\n")
                sys.stderr.flush()
            return
        if self.quiet:
            # -q prints errors only, and on stderr as git's are: a boot's quiet
            # restore writes its refusals to the journal, its stdout stays empty.
            self._record([o.action, str(o.status), o.session_id, o.message], sys.stderr)
            sys.stderr.flush()
            return
        if self.tty:
            style = _STYLE.get(o.status, "")
            from rich.markup import escape
            self.console.print(f"[{style}]{o.status:>9}[/] [bold]{escape(o.session_id)}[/] "
                               f"{escape(o.message)}")
        else:
            status = str(o.status)
            if self.colour and not self.nul and _STYLE.get(o.status):
                status = f"\x1b[{_SGR[_STYLE[o.status]]}m{status}\x1b[m"
                self.stream.write("\t".join([o.action, status, *map(
                    quote_field, (o.session_id, o.message))]) + "\n")
                return
            self._record([o.action, str(o.status), o.session_id, o.message])

    def outcomes_json(self, command: str, outcomes: Iterable[Outcome], exit_status: int,
                      dry_run: bool = False) -> None:
        """The JSON document of a batch: every outcome with its facts."""
        if not self.json_mode:
            return
        self.emit_json(command, dry_run=dry_run, exit_status=exit_status, results=[
            {"id": o.session_id, "action": o.action, "status": o.status, "message": o.message,
             **o.data} for o in outcomes])

    def summary(self, outcomes: Sequence[Outcome], verb: str) -> None:
        """The counts of a batch, one line on stderr (not with -q or --json)."""
        if self.json_mode or self.quiet or not outcomes:
            return
        # Import, push and relaunch records go with the sessions they belong to;
        # counted apart, so the sessions' counts add up to the number of sessions.
        groups: dict[str, dict[str, int]] = {}
        for o in outcomes:
            counts = groups.setdefault(o.action if o.action in APART else verb, {})
            counts[o.status] = counts.get(o.status, 0) + 1
        order = sorted(groups, key=lambda name: name != verb)  # the sessions first
        line = "; ".join(f"{name}: " + ", ".join(f"{n} {k}" for k, n in groups[name].items())
                         for name in order)
        # Standard error on a terminal too: standard output holds the records.
        if sys.stderr.isatty():
            from rich.markup import escape
            self.err_console.print(f"[dim]{escape(line)}[/]")
        else:
            sys.stderr.write(line + "\n")

    def progress(self, total: int,
                 label: str) -> AbstractContextManager[Callable[[Outcome], None]]:
        """A context manager yielding `advance(outcome)`; a rich bar on a terminal for
        batches of more than a few sessions, else printing each outcome."""
        from collections.abc import Callable
        from contextlib import AbstractContextManager

        from git_ao.outcome import Outcome
        printer = self

        class _Plain(AbstractContextManager[Callable[[Outcome], None]]):
            def __enter__(self) -> Callable[[Outcome], None]:
                return printer.outcome

            def __exit__(self, *exc: object) -> None:
                return None


        if not self.tty or self.quiet or total < 4:
            return _Plain()
        from rich.progress import Progress

        class _Bar(AbstractContextManager[Callable[[Outcome], None]]):
            def __enter__(self) -> Callable[[Outcome], None]:
                self.p = Progress(console=printer.console, transient=True)
                self.p.__enter__()
                self.task = self.p.add_task(label, total=total)

                def advance(o: Outcome) -> None:
                    printer.outcome(o)
                    self.p.advance(self.task)
                return advance

            def __exit__(self, exc_type: type[BaseException] | None,
                         exc: BaseException | None, tb: TracebackType | None) -> None:
                self.p.__exit__(exc_type, exc, tb)

        return _Bar()

    # ------------------------------------------------------------ listings

    def sessions(self, records: Sequence[dict[str, Any]]) -> None:
        """`git ao list`: a table on a terminal, tab-separated records otherwise."""
        if self.json_mode:
            self.emit_json("list", sessions=records)
            return
        cols = ("id", "kind", "harness", "state", "branch", "workspace_path", "preserved")
        rows: list[tuple[str, ...]] = [
            (r["id"], r["kind"], r["harness"] or "-", r["state"], r["branch"] or "-",
             r["workspace_path"], _preserved(r)) for r in records]
        if self.tty:
            from rich.table import Table
            path_col = cols.index("workspace_path")
            rows = fit_paths(rows, [c.replace("_", " ") for c in cols], path_col,
                             self.console.width)
            table = Table(box=None, header_style="bold")
            cut = max((len(r[path_col]) for r in rows), default=0)
            for c in cols:
                # The path, cut from the left by fit_paths, is never cut again by
                # rich from the right: rich narrows the other columns instead.
                path = c == "workspace_path"
                table.add_column(c.replace("_", " "), no_wrap=True,
                                 min_width=cut if path else None)
            for row in rows:
                table.add_row(*row)
            self.console.print(table)
        else:
            for row in rows:
                self._record(row)

    def history(self, entries: Sequence[dict[str, Any]]) -> None:
        """`git ao history`: one record per entry, newest first: number, time,
        trigger, the save's commit, the counts."""
        for e in entries:
            self._record([str(e["number"]), e["time"], e["trigger"], e["commit"],
                          f"{e['changed']} changed, {e['untracked']} untracked"])

    def facts(self, pairs: Sequence[tuple[str, Any]], stat_text: str = "") -> None:
        """`git ao show`: `key: value` lines, then the stash-style stat of the saved work."""
        width = max(len(k) for k, _ in pairs)
        for k, v in pairs:
            if isinstance(v, bool):
                v = "true" if v else "false"  # as git config and the JSON write them
            if isinstance(v, str):
                v = quote_field(v)  # an id or a name with a newline stays on its line
            self.stream.write(f"{k + ':':<{width + 1}} {'-' if v in (None, '') else v}\n")
        if stat_text:
            self.stream.write("\n" + stat_text)


# A path is never cut shorter than this: its last components still say which.
MIN_PATH = 16


def fit_paths(rows: list[tuple[str, ...]], headers: list[str], col: int,
              width: int) -> list[tuple[str, ...]]:
    """The rows with column `col` (paths) cut from the left, `...` first, so the
    table fits `width` columns: the end of a path (the worktree's name) is what
    tells them apart, as git cuts paths in `git status` and diffstat. Each
    column of a rich table without a box takes its widest cell plus 2; a path is
    cut to no fewer than MIN_PATH characters."""
    if not rows:
        return rows
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    room = width - sum(w + 2 for i, w in enumerate(widths) if i != col) - 2
    room = max(room, MIN_PATH, len(headers[col].split()[0]))
    if widths[col] <= room:
        return rows
    return [(*r[:col], r[col] if len(r[col]) <= room else "..." + r[col][-(room - 3):],
             *r[col + 1:]) for r in rows]


def _preserved(r: dict[str, Any]) -> str:

    if r.get("preserve_ref") and r.get("preserved_commit"):
        return f"{r['preserve_ref']} {r['preserved_commit'][:12]}"
    return "-"
