"""How the command line itself behaves: help without Python types, one usage style, every error as one line with
its exit code (click's usage errors, a command's OrderlabError, Ctrl-C, SIGTERM), and how its process ends.

typer's help shows each parameter's Python type (`<bool>` for a flag, `<list[Path]>`) and marks required arguments
`{spec}` beside `[SPEC]...`; its errors for a bad option value are a boxed panel that wraps to the terminal's width
(27 lines at COLUMNS=10) and prints nothing at COLUMNS=0. `Group` shows parameters as click does (SPEC, [SPEC]...,
--out PATH, a flag alone) and every usage error as one line, `error: ...`, exit 2, whatever the width.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from orderlab.errors import OrderlabError

VALUE_NAMES = {"int": "INTEGER", "float": "FLOAT", "str": "TEXT", "path": "PATH", "Path": "PATH", "bool": ""}


class PlainArgument(TyperArgument):
    """An argument named in capitals, `...` when it takes several, in brackets when optional; no type column."""

    def _rich_display_name(self) -> str:
        return self.display_name_raw.upper() + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        name = self.display_name_raw.upper()
        return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class PlainOption(TyperOption):
    """An option's value named as click names it (PATH, INTEGER, cpu|cuda, or its metavar); a flag takes none."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag:
            return None
        if self.metavar is not None:
            return self.metavar
        shown = str(self.display_type(ctx)).strip("<>")  # typer's: <int>, <path>, <list[str]>, <cpu|cuda>
        shown = shown.removeprefix("list[").removesuffix("]")  # a repeatable option: its help says so
        return VALUE_NAMES.get(shown.removesuffix(" range"), shown)  # a bounded int: its range follows


def plain(param: object) -> None:
    """typer's argument or option shown plainly (the classes differ in display only)."""
    if type(param) is TyperArgument:
        param.__class__ = PlainArgument
    elif type(param) is TyperOption:
        param.__class__ = PlainOption


class PlainCommand(TyperCommand):
    """A command whose parameters, --help among them (made anew for each context), are shown plainly."""

    def get_params(self, ctx: Any) -> Any:
        params = super().get_params(ctx)
        for param in params:
            plain(param)
        return params


class Group(TyperGroup):
    """The `orderlab` group: its commands' parameters shown plainly, its usage errors in one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            if type(command) is TyperCommand:
                command.__class__ = PlainCommand

    def get_params(self, ctx: Any) -> Any:
        params = super().get_params(ctx)
        for param in params:
            plain(param)
        return params

    def main(self, *args: Any, **kwargs: Any) -> Any:
        standalone = kwargs.pop("standalone_mode", True)
        kwargs["standalone_mode"] = False  # errors come back here: an int is a command's typer.Exit
        try:
            code = super().main(*args, **kwargs)
        except typer.TyperException as error:  # click's usage errors: a bad option value, a missing argument
            if not standalone:
                raise
            if type(error).__name__ != "NoArgsIsHelpError":  # `orderlab` alone: typer drew the help already
                sys.stderr.write(f"error: {one_line(error)}\n")
            sys.exit(error.exit_code)
        except typer.Abort:
            if not standalone:
                raise
            sys.stderr.write("aborted\n")
            sys.exit(1)
        if standalone:
            sys.exit(code if isinstance(code, int) else 0)
        return code


def one_line(error: typer.TyperException) -> str:
    """click's message on one line, with the command's help option named: 'Invalid value for '--device': ...'."""
    message = " ".join(error.format_message().split())
    context = getattr(error, "ctx", None)
    if context is not None and context.command.get_help_option(context) is not None:
        message += f" (see {context.command_path} {context.help_option_names[0]})"
    return message


def echo_error(message: str) -> None:
    """'error: ...' on stderr, one line a problem (a SpecErrors lists all of a spec's)."""
    for line in message.splitlines() or [""]:
        typer.echo(f"error: {line}", err=True)


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that cleanup (finally, except BaseException) runs as for Ctrl-C."""


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn OrderlabError into one line on stderr and exit code 2; Ctrl-C into 130, SIGTERM into 143."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with sigterm_raises():
                return command(*args, **kwargs)
        except OrderlabError as error:
            echo_error(str(error))
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("interrupted: no results were written", err=True)
            raise typer.Exit(130) from None
        except Terminated:
            typer.echo("terminated: no results were written", err=True)
            raise typer.Exit(143) from None

    return wrapper


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated (in the main thread, where signals are delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
    raise Terminated


def run_as_process(app: Callable[[], Any]) -> None:
    """The command line as a program: output streams that cannot fail on a character (report/streams.py), then the
    app. On the way out, every object the command made is frozen: the interpreter's shutdown collects every object
    still tracked, 1.4 s after a zoo run with torch and transformers imported, 0.2 s frozen (benchmarks/bench_exit.py);
    atexit hooks, finalizers, thread joins and file flushes run as ever. Never in a test's CliRunner: its process
    goes on, and would keep what it froze."""
    from orderlab.report.streams import safe_output_streams

    safe_output_streams()
    try:
        app()
    finally:
        gc.freeze()
