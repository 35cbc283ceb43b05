"""What every git-ao command shares: the common options, the run context, and
the mapping of errors to one line and git's exit statuses."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

# Only light imports here: shell completion runs these modules on every TAB, so
# git_ao.git, the workflows and rich are imported where they are used.
from git_ao.cli.app import _json_error, begin, end, failed, invoke
from git_ao.errors import ExitStatus, current_directory

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


F = TypeVar("F", bound=Callable[..., Any])

# No click help option: `--help` opens the man page, as git's own commands do
# (help_option), and -h prints the short usage (short_help_option).
CONTEXT_SETTINGS = {"help_option_names": [], "max_content_width": 100}
# Usage lines for commands whose forms differ (the ids of `git ao-prune` need
# --force): command path -> what follows it on each `usage:` / `or:` line.
USAGE: dict[str, tuple[str, ...]] = {}


class Seconds(click.FloatRange):
    """A number of seconds, 0 or more and finite: nan and inf are refused, as the
    config file refuses them (nan compares false with every bound)."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """The value as a float, refused (a usage error) unless finite and 0 or more."""
        import math
        try:
            number = super().convert(value, param, ctx)
        except click.BadParameter:
            number = math.nan
        if not math.isfinite(number):
            self.fail(f"expects a number of seconds, 0 or more, not '{value}'", param, ctx)
        return number


if TYPE_CHECKING:
    _Choice = click.Choice[str]
else:
    _Choice = click.Choice  # not generic before click 8.2 (the floor is 8.1.3)


class Choice(_Choice):
    """click.Choice refusing a value in git's words (`expects one of ...`)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            self.fail(f"expects one of {', '.join(map(str, self.choices))}, not '{value}'",
                      param, ctx)


class IntRange(click.IntRange):
    """click.IntRange refusing a value in git's words (`expects a whole number ...`)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            if self.max is None:
                want = f"a whole number, {self.min} or more"
            else:
                want = f"a whole number from {self.min} to {self.max}"
            self.fail(f"expects {want}, not '{value}'", param, ctx)


class NoCommand(click.UsageError):
    """A command group run with no subcommand (`git ao` alone)."""


def _in_context(parse: Callable[[click.Context, list[str]], list[str]], ctx: click.Context,
                args: list[str]) -> list[str]:
    """`parse(ctx, args)`, with a usage error given `ctx` when click's parser raised
    it without one, so the short usage follows the error line."""
    try:
        return parse(ctx, args)
    except click.UsageError as exc:
        if exc.ctx is None:
            exc.ctx = ctx
        raise


class Command(click.Command):
    """A click command whose usage errors always carry their context."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return _in_context(super().parse_args, ctx, args)


# A negative number ("-5", "-1.5", "-.5"): a value, never an option (git-ao has no
# short option that is a digit).
_NEGATIVE = re.compile(r"-\.?[0-9]")


class ValueCommand(Command):
    """A command whose arguments may be negative numbers (`git ao config set
    history.keep -5`): click would take "-5" for the switch 5 and say "unknown
    switch", so each is an argument, as after `--` (which works too), and its
    value is then checked as any other."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args and any(_NEGATIVE.match(a) for a in args):
            valued = {o for p in self.params if isinstance(p, click.Option)
                      and not (p.is_flag or p.count) for o in p.opts}
            opts: list[str] = []
            rest: list[str] = []
            given = iter(args)
            for arg in given:
                if _NEGATIVE.match(arg) or not arg.startswith("-") or arg == "-":
                    rest.append(arg)
                    continue
                opts.append(arg)
                value = next(given, None) if arg in valued else None
                if value is not None:  # the option's value is the next word, whatever it is
                    opts.append(value)
            args = [*opts, "--", *rest]
        return super().parse_args(ctx, args)


class Group(click.Group):
    """A click group that, run with no subcommand, prints its help on stderr and
    exits 129 as `git worktree` alone does. click's own no-args help differs by
    version (8.1 prints it on stdout and exits 0; 8.2 raises NoArgsIsHelpError),
    so the group decides here."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        kw["no_args_is_help"] = False
        super().__init__(*args, **kw)

    command_class = Command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            raise NoCommand("no command given", ctx)
        return _in_context(super().parse_args, ctx, args)


# What the other parameters on the line make of a command's ids: given them
# ({name: value}, as click parsed them so far) and the ids typed already, the
# state of the sessions it takes there, or None when it takes no id there.
IdsBy = Callable[[dict[str, Any], set[str]], "str | None"]


def complete_ids(state: str, by: IdsBy | None = None
                 ) -> Callable[[click.Context, click.Parameter, str], list[CompletionItem]]:
    """A click shell_complete callback offering session ids from the database.

    state: 'live', 'pending' or 'all'. by: the state the options given decide
    instead (`git ao-restore --at` takes one live session, `--all` takes none),
    so a TAB offers only ids the command would take there. Reads git-ao.db
    read-only and starts no process, so a TAB answers in the time Python takes
    to start. Each id comes with its state and branch as help, which zsh and
    fish show."""

    def _complete(ctx: click.Context, param: click.Parameter,
                  incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        from git_ao.cli.completion import id_candidates
        taken = set(ctx.params.get(param.name) or ())
        wanted = by(ctx.params, taken) if by is not None else state
        if wanted is None:
            return []
        # zsh and fish show the help beside each id: its state and branch.
        return [CompletionItem(i, help=about) for i, about in
                id_candidates(wanted, incomplete, taken)]

    return _complete


def complete_entries(ctx: click.Context, _param: click.Parameter,
                     incomplete: str) -> list[CompletionItem]:
    """A click shell_complete callback offering the entry numbers of the history of
    the session the line names (`git ao-restore feat --at <TAB>`), else of the live
    session whose worktree the line runs in: newest first, each with its time,
    trigger and counts as help (zsh and fish show it). One read-only look at the
    database and the one `git log` of `history.entries`; nothing when no session
    is known."""
    from click.shell_completion import CompletionItem

    from git_ao.errors import AoError, utc_time
    from git_ao.store.datadir import completion_session
    # The value being completed is missing, so click stopped before the ids: those
    # typed before `--at` are left in ctx.args as they were.
    ids = ctx.params.get("ids") or tuple(a for a in ctx.args if not a.startswith("-"))
    if len(ids) > 1:
        return []
    top = None
    if not ids:
        from git_ao.cli.entry import worktree_top
        try:
            where = current_directory()
        except AoError:
            return []
        for d in ctx.params.get("chdir") or ():
            where = os.path.join(where, d)
        top = worktree_top(where)
        if top is None:
            return []
    found = completion_session(ids[0] if ids else None, top)
    if found is None:
        return []
    from git_ao.save import history
    try:
        entries = history.entries(found[1], found[0])
    except (AoError, OSError):
        return []
    return [CompletionItem(str(e.number), help=f"{utc_time(e.time_ns)} {e.trigger}, "
                           f"{e.changed} changed, {e.untracked} untracked")
            for e in entries if str(e.number).startswith(incomplete)]


def complete_remotes(ctx: click.Context, _param: click.Parameter,
                     incomplete: str) -> list[str]:
    """A click shell_complete callback offering the remotes of the repository the
    line runs in (after -C, as git applies it), as git's completion offers them
    after `git push`; one `git remote`."""
    from git_ao import git
    from git_ao.errors import AoError
    try:
        where = current_directory()
    except AoError:
        return []  # a TAB in a directory that is gone: no repository, no remotes
    for d in ctx.params.get("chdir") or ():
        where = os.path.join(where, d)
    return [r for r in git.remote_names(where) if r.startswith(incomplete)]


def short_help_option() -> Callable[[F], F]:
    """The -h option (usage on stdout and exit 129, like git's own commands) and
    --help (the man page); for groups, which take no `options()`."""
    def deco(f: F) -> F:
        f = help_option()(f)
        return click.option("-h", is_flag=True, expose_value=False, is_eager=True,
                            callback=_short_help,
                            help="Show this usage and exit (status 129).")(f)
    return deco


def help_option() -> Callable[[F], F]:
    """--help: open the command's man page with `git help`, as `git <cmd> --help`
    does for git's own commands (git itself turns only a first `--help` into `git
    help`; `git ao list --help` reaches git-ao)."""
    return click.option("--help", is_flag=True, expose_value=False, is_eager=True,
                        hidden=True, callback=_open_manual, help="Open the man page.")


def _open_manual(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from git_ao import git
    # The page of the executable: git-ao(1) documents every `git ao` subcommand.
    ctx.exit(git.show_manual(ctx.find_root().command.name or "ao"))


def _short_help(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    # git's own commands print usage on stdout for -h and exit 129.
    if value and not ctx.resilient_parsing:
        click.echo(short_usage(ctx), nl=False)
        ctx.exit(ExitStatus.USAGE)


# Options whose names are longer go on a line of their own, the help below
# them, as git's parse-options prints them (never run into the help).
_NAMES_WIDTH = 24


def short_usage(ctx: click.Context) -> str:
    """What -h prints, shaped like git's parse-options usage: `usage: ...` (then
    `   or: ...` for each other form), the subcommands of a group with their
    short help (whole sentences, never cut), then one line per option, metavars
    written `<name>`. `--help` opens the man page and is not listed."""
    cmd = ctx.command
    if isinstance(cmd, click.Group):
        lines = [f"usage: {ctx.command_path} <command> [<options>]", "", "commands:"]
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                lines.append(f"    {name:<14}{_first_line(sub.short_help or _summary(sub))}")
        lines.append("")
    else:
        forms = USAGE.get(ctx.command_path) or (" ".join(
            ["[<options>]", *(_arg_usage(a) for a in cmd.get_params(ctx)
                              if isinstance(a, click.Argument))]),)
        lines = [f"{'usage' if i == 0 else '   or'}: {ctx.command_path} {form}".rstrip()
                 for i, form in enumerate(forms)] + [""]
    for p in cmd.get_params(ctx):
        if not isinstance(p, click.Option) or p.hidden:
            continue
        names = ", ".join(sorted(p.opts + p.secondary_opts, key=len))
        metavar = None
        if not p.is_flag and not p.count:
            metavar = p.metavar or p.make_metavar(*(() if _CLICK_OLD else (ctx,)))
            names += f" <{_bare(metavar)}>"
        text = _first_line(p.help or "")
        if metavar:
            # The help names the value as the usage does: STATE -> <state>.
            text = re.sub(rf"\b{re.escape(_bare(metavar).upper())}\b", f"<{_bare(metavar)}>",
                          text)
        if len(names) > _NAMES_WIDTH:
            lines += [f"    {names}", f"    {'':<{_NAMES_WIDTH + 2}}{text}"]
        else:
            lines.append(f"    {names:<{_NAMES_WIDTH + 2}}{text}")
    return "\n".join(lines) + "\n"


_CLICK_OLD = click.Option.make_metavar.__code__.co_argcount < 2


def _bare(metavar: str) -> str:
    # click's "[worker|orchestrator]" or "N" -> "worker|orchestrator", "n"
    return metavar.strip("[]<>").lower()


def _arg_usage(a: click.Argument) -> str:
    """An argument as git's usage writes it: `<id>...`, `[<path>]`, `[<id>...]`,
    `(bash | zsh | fish)`."""
    meta = a.metavar or a.name or ""
    optional = meta.startswith("[") or not a.required
    many = meta.endswith("...") or a.nargs == -1
    word = _arg_word(a)
    if isinstance(a.type, click.Choice) and not a.metavar:
        return "(" + " | ".join(map(str, a.type.choices)) + ")"
    text = f"<{word}>" + ("..." if many else "")
    return f"[{text}]" if optional else text


def _arg_word(a: click.Parameter) -> str:
    """An argument's name as usage shows it: metavar `[ID]...` -> `id`."""
    meta = a.metavar or a.name or ""
    return meta.strip("[]").removesuffix("...").strip("[]").lower()


def _summary(cmd: click.Command) -> str:
    """The first sentence of a command's help, whole."""
    text = " ".join((cmd.help or "").split("\n\n")[0].split())
    return re.split(r"(?<=\.)\s", text, maxsplit=1)[0]


def _first_line(text: str) -> str:
    # git's option help: lower-case, no final full stop.
    text = " ".join(text.split()).rstrip(".")
    return text[:1].lower() + text[1:]


def options(*, changes: bool = True, records: bool = False,
            read_only: bool | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator adding -h, -q, -v, --json, --color=WHEN, -C PATH (repeatable), -z for
    commands printing records (`records`), and -n/--dry-run for commands that change
    anything (`changes`). read_only: open the database read-only (default: when
    nothing changes; doctor changes nothing but with --recover, which opens its
    own). The wrapped function receives an `app: App` first."""
    ro = not changes if read_only is None else read_only

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, quiet: bool, verbose: bool, json_mode: bool,
                    chdir: tuple[str, ...], color: str | None, dry_run: bool = False,
                    nul: bool = False, **kw: Any) -> Any:
            return invoke(click.get_current_context().command_path,
                          lambda app: f(app, *args, **kw),
                          quiet=quiet, verbose=verbose, json_mode=json_mode, chdirs=chdir,
                          dry_run=dry_run, nul=nul, color=color, read_only=ro)

        opts = [
            help_option(),
            click.option("-h", is_flag=True, expose_value=False, is_eager=True,
                         callback=_short_help, help="Show this usage and exit (status 129)."),
            click.option("-q", "--quiet", is_flag=True, help="Print only what is not ok (errors, attention) and warnings, on stderr."),
            click.option("-v", "--verbose", is_flag=True, help="Show each git command run."),
            click.option("--json", "json_mode", is_flag=True,
                         help="Print one JSON document for scripts."),
            click.option("--color", "color", type=Choice(("always", "never", "auto")),
                         default=None, metavar="WHEN",
                         help="Colour: always, never or auto (default: color.ao, color.ui, "
                         "NO_COLOR, else on a terminal)."),
            click.option("-C", "chdir", multiple=True, metavar="PATH",
                         type=click.Path(),
                         help="Run as if started in PATH (like git -C)."),
        ]
        if records:
            opts.append(click.option("-z", "nul", is_flag=True,
                                     help="End each field of the plain records with NUL "
                                     "instead of a tab or newline; quote nothing."))
        if changes:
            opts.append(click.option("-n", "--dry-run", is_flag=True,
                                     help="Show what would be done; change nothing."))
        for opt in reversed(opts):
            wrapper = opt(wrapper)
        return wrapper

    return deco


def run(command: click.Command, prog_name: str) -> None:
    """Run a click command the way git runs its own: usage errors exit 129, fatal
    errors 128, one line on stderr and no traceback (unless GIT_AO_DEBUG is set)."""
    try:
        # Inside: a relative AO_DATA_DIR in a directory that is gone is a Fatal.
        var = begin(prog_name)
        rv = command.main(prog_name=prog_name, complete_var=var, standalone_mode=False)
    except click.exceptions.Exit as exc:
        rv = exc.exit_code
    except NoCommand as exc:
        # `git ao` alone: the help, as `git worktree` alone prints its usage (129).
        assert exc.ctx is not None
        sys.stderr.write(short_usage(exc.ctx))
        rv = ExitStatus.USAGE
    except click.UsageError as exc:
        msg = git_usage_message(exc)
        sys.stderr.write(f"error: {msg}\n")
        if exc.ctx is not None:
            sys.stderr.write(short_usage(exc.ctx))
        rv = ExitStatus.USAGE
        _json_error(exc.ctx.command_path if exc.ctx else prog_name, rv, f"error: {msg}")
    except click.Abort:
        rv = ExitStatus.INTERRUPTED
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - failed() maps each kind
        rv = failed(exc, prog_name)
    end(rv)


def git_usage_message(exc: click.UsageError) -> str:
    """click's usage errors in git's words: `unknown option 'bogus'`, `unknown
    switch 'x'`, `option 'state' requires a value`, `option 'jobs' expects ...`,
    `unknown subcommand: 'x'`, `too many arguments`; anything else as click says
    it, lower-case and without the final full stop."""
    if isinstance(exc, click.NoSuchOption):
        name = exc.option_name
        return f"unknown switch '{name[1:]}'" if not name.startswith("--") \
            else f"unknown option '{name[2:]}'"
    if isinstance(exc, click.BadOptionUsage) and "requires an argument" in exc.message:
        return f"option '{exc.option_name.lstrip('-')}' requires a value"
    if isinstance(exc, click.MissingParameter) and isinstance(exc.param, click.Argument):
        return f"<{_arg_word(exc.param)}> is required"
    if isinstance(exc, click.MissingParameter) and exc.param is not None:
        return f"option '{exc.param.opts[0].lstrip('-')}' requires a value"
    if isinstance(exc, click.BadParameter) and exc.param is not None:
        p = exc.param
        name = f"option '{max(p.opts, key=len).lstrip('-')}'" if isinstance(p, click.Option) \
            else f"<{_arg_word(p)}>"
        text = exc.message
        if text.startswith("expects "):
            return f"{name} {text}"
        return f"invalid value for {name}: {_first_line(text)}"
    text = exc.format_message()
    m = re.match(r"No such command '(.*)'", text)
    if m:
        return f"unknown subcommand: '{m.group(1)}'"
    if text.startswith("Got unexpected extra argument"):
        return "too many arguments"
    return _first_line(text)





def session_here(app: Any, form: str) -> Any:
    """The live session whose worktree holds the current directory (`git rev-parse
    --show-toplevel`), for a command given no ID; nothing is registered. A usage
    error (exit 129) when there is none, outside any repository too, naming the
    command with the id (`form`: "git ao history ID")."""
    from git_ao import git
    from git_ao.cli.app import usage
    from git_ao.errors import NotARepository
    try:
        top = git.repo_dirs(current_directory()).toplevel
    except NotARepository:
        usage(f"name the session ({form}): the current directory is in no git repository")
    found = [s for s in app.store.sessions()
             if top and s.live and s.worktree_path == os.path.realpath(top)]
    if not found:
        usage(f"name the session ({form}): the current directory is in no live session's "
              "worktree")
    return found[0]
