"""``ragd backup DEST`` and ``ragd restore SRC`` (docs/operations.md, "Backup and restore").

``backup`` opens the data dir itself, so it runs while no server holds the index (a server that
does: STORE_LOCKED naming it).  ``restore`` verifies every part's SHA-256 before it writes
anything, and writes only into an empty data dir.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from ragd.bootstrap import open_services
from ragd.bootstrap.backups import RestoreReport, backup_services, restore_into
from ragd.cli.held import refuse_if_served, run_remote, via_server
from ragd.cli.runner import console, err_console, load_settings, run_or_exit
from ragd.errors import InvalidRequest
from ragd.kb.audit import CLI_CLIENT
from ragd.kb.backup import BackupReport
from ragd.observe.logging import configure_logging

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="index folder (default: RAGD_DATA_DIR or .ragd)")
]


def backup_command(
    dest: Annotated[Path, typer.Argument(help="a new (or empty) folder for the backup")],
    data_dir: DataDir = None,
) -> None:
    """Back up the catalog, the index, its manifest and the stored uploads, with checksums."""
    settings = load_settings(data_dir)
    configure_logging(settings.log.model_copy(update={"level": "WARNING"}))
    record = via_server(settings)
    if record is not None:
        name = _name_in(dest, settings.backup_dir)
        done = run_remote(settings, record, lambda remote: remote.backup(name))
        console.print(
            f"the server backed up {done['points']:,} points and {done['files']:,} stored files "
            f"({done['bytes'] / 1e6:.1f} MB) to {done['path']} in {done['seconds']:.1f} s"
        )
        return

    async def main() -> BackupReport:
        refuse_if_served(settings)
        async with open_services(settings) as services:
            return await backup_services(services, dest.resolve(), client=CLI_CLIENT)

    report = run_or_exit(main)
    console.print(
        f"backed up {report.points:,} points and {report.files:,} stored files "
        f"({report.bytes / 1e6:.1f} MB) to {report.path} in {report.seconds:.1f} s"
    )


def _name_in(dest: Path, backup_dir: Path) -> str:
    """A running server writes backups only into its backup dir: DEST must be a folder right in it."""
    target = dest.resolve()
    if target.parent != backup_dir.resolve():
        raise_exit(
            InvalidRequest(
                f"a server holds the index, and it writes backups only into {backup_dir.resolve()}",
                hint=f"give a new folder there, e.g. {backup_dir.resolve() / target.name} (RAGD_BACKUP__DIR)",
            )
        )
    return target.name


def restore_command(
    src: Annotated[Path, typer.Argument(help="a folder written by `ragd backup`")],
    data_dir: DataDir = None,
) -> None:
    """Restore a backup into an empty data dir (every checksum is verified first)."""
    settings = load_settings(data_dir)
    configure_logging(settings.log.model_copy(update={"level": "WARNING"}))

    async def main() -> RestoreReport:
        return await restore_into(settings, src.resolve())

    report = run_or_exit(main)
    console.print(
        f"restored {report.points:,} points and {report.uploads:,} stored files into {settings.data_dir}"
    )
    if report.files_to_reindex:
        console.print(
            f"{len(report.files_to_reindex)} file(s) were being indexed during the backup and are "
            "marked failed (NOT_IN_BACKUP): re-index them"
        )


def raise_exit(exc: InvalidRequest) -> NoReturn:
    err_console.print(f"[red]error[/red] {exc.code}: {exc}")
    raise typer.Exit(2)
