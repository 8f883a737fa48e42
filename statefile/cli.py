"""The ``statefile`` command: a thin click layer.  Commands parse arguments and call the operations modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from statefile import __version__
from statefile.errors import EXIT_CHECK_FAILED, StatefileError


def _read_file(path: Path) -> str:
    from statefile.errors import InvalidDataError, NotFoundError

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file; check the path") from None
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read ({exc.strerror}); check the path and permissions") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(
            f"{path}: not valid UTF-8 (byte {exc.start}); re-save the file as UTF-8 — statefile will not rewrite it"
        ) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="statefile")
def cli() -> None:
    """Keep Autoloop state files (the agent's memory in git) correct and under budget."""


@cli.command("show")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def show_cmd(file: Path, as_json: bool) -> None:
    """Show a state file's structure, machine state, history summary and warnings.

    Example: statefile show perf.md --json
    """
    from statefile.document import parse
    from statefile.summary import describe

    info = describe(parse(_read_file(file)))
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    click.echo(f"{file}: {info['size_bytes']} bytes, {len(info['sections'])} sections")
    for key, value in info["machine_state"].items():
        click.echo(f"  {key}: {value}")
    hist = info["history"]
    click.echo(f"  history: {hist['iterations']} iterations, {hist['ranges']} ranges, {hist['other']} other")
    for warning in info["warnings"]:
        click.echo(f"  warning: {warning}")


@cli.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--max-bytes", type=click.IntRange(min=1), default=30720, show_default=True, help="Byte budget.")
def check_cmd(files: tuple[Path, ...], max_bytes: int) -> None:
    """Check state files: readable as UTF-8 and within the byte budget; warnings are printed.

    Example: statefile check memory/*.md --max-bytes 30720
    """
    from statefile.document import parse

    failed = 0
    for file in files:
        try:
            doc = parse(_read_file(file))
        except StatefileError as exc:
            click.echo(f"error: {exc}", err=True)
            failed += 1
            continue
        status = "ok"
        if doc.size > max_bytes:
            status = f"over budget ({doc.size} > {max_bytes} bytes)"
            failed += 1
        click.echo(f"{file}: {status}, {doc.size} bytes ({100 * doc.size // max_bytes}% of budget)")
        for warning in doc.warnings:
            click.echo(f"  warning: {warning}")
    if failed:
        sys.exit(EXIT_CHECK_FAILED)


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: run the CLI, turning statefile errors into one line on stderr and an exit code."""
    try:
        return cli.main(args=argv, prog_name="statefile", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except StatefileError as exc:
        click.echo(f"statefile: error: {exc}", err=True)
        sys.exit(exc.exit_code)
