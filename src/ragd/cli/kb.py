"""``ragd tenants`` / ``ragd keys`` / ``ragd grants`` (straight on the catalog) and ``ragd jobs watch``
(over HTTP)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import httpx
import typer
from rich.table import Table

from ragd.bootstrap.knowledge import open_catalog_only
from ragd.catalog.base import Catalog
from ragd.cli.progress import RateProgress
from ragd.cli.runner import console, err_console, load_settings, run_or_exit
from ragd.errors import NotFound
from ragd.kb import audit
from ragd.kb import grants as kb_grants
from ragd.kb.tenant_template import current_template, template_datasets
from ragd.kb_types import SourceGrant, SourceKind, SourceSpec
from ragd.settings import Settings

T = TypeVar("T")

tenants_app = typer.Typer(
    help="Tenants (the service admin's view, straight on the catalog).", no_args_is_help=True
)
keys_app = typer.Typer(help="Tenant-scoped API keys.", no_args_is_help=True)
jobs_app = typer.Typer(help="Follow jobs of a running `ragd serve`.", no_args_is_help=True)


def _catalog_run(settings: Settings, job: Callable[[Catalog], Awaitable[T]]) -> T:
    async def main() -> T:
        async with open_catalog_only(settings) as catalog:
            return await job(catalog)

    return run_or_exit(main)


@tenants_app.command("create")
def tenant_create(name: Annotated[str, typer.Argument(help="the tenant's name")]) -> None:
    """Create a tenant with the tenant template's datasets; prints its id."""
    settings = load_settings()

    async def job(catalog: Catalog) -> Any:
        template = await current_template(catalog, settings.tenants.datasets)
        made = await catalog.create_tenant(name.strip(), template_datasets(template))
        names = [d.name for d in template.datasets]
        await audit.record(
            catalog,
            audit.OPERATOR,
            "tenant.create",
            tenant_id=made.id,
            target_kind="tenant",
            target_id=made.id,
            detail={"name": made.name, "datasets": names},
            client=audit.CLI_CLIENT,
        )
        return made, names

    tenant, names = _catalog_run(settings, job)
    console.print(f"tenant [bold]{tenant.name}[/bold] id {tenant.id}")
    if names:
        console.print(f"datasets: {', '.join(names)}", highlight=False)


@tenants_app.command("template")
def tenant_template() -> None:
    """Show the datasets every new tenant is created with (set them: PUT /api/v1/tenants/template)."""
    settings = load_settings()
    template = _catalog_run(settings, lambda c: current_template(c, settings.tenants.datasets))
    table = Table("name", "description", "chunking", "allowed roles")
    for d in template.datasets:
        c = d.chunking
        chunking = "/".join(str(v) for v in (c.strategy.value if c.strategy else None, c.size, c.overlap))
        table.add_row(d.name, d.description, chunking, ", ".join(d.allowed_roles))
    console.print(table)
    console.print("set by the service key" if template.custom else "the default (RAGD_TENANTS__DATASETS)")


@tenants_app.command("list")
def tenant_list() -> None:
    tenants = _catalog_run(load_settings(), lambda c: c.list_tenants())
    table = Table("id", "name")
    for t in tenants:
        table.add_row(t.id, t.name)
    console.print(table)


async def _tenant_id(catalog: Catalog, name_or_id: str) -> str:
    for tenant in await catalog.list_tenants():
        if name_or_id in (tenant.id, tenant.name):
            return tenant.id
    raise NotFound(f"no tenant {name_or_id!r} (see `ragd tenants list`)")


@keys_app.command("create")
def key_create(
    tenant: Annotated[str, typer.Option("--tenant", "-t", help="tenant name or id")],
    role: Annotated[str, typer.Option("--role", "-r", help="admin, editor, ingest, or a reader role name")],
    name: Annotated[str, typer.Option("--name", help="a label for the key")] = "",
) -> None:
    """Create a key; its secret is printed once (only a hash is kept)."""

    async def job(catalog: Catalog) -> tuple[Any, str]:
        info, secret = await catalog.create_key(await _tenant_id(catalog, tenant), role, name)
        await audit.record(
            catalog,
            audit.OPERATOR,
            "key.create",
            tenant_id=info.tenant_id,
            target_kind="key",
            target_id=info.id,
            detail={"role": role, "name": name},
            client=audit.CLI_CLIENT,
        )
        return info, secret

    info, secret = _catalog_run(load_settings(), job)
    console.print(f"key {info.id} (role {info.role}) for tenant {info.tenant_id}:")
    console.print(secret, soft_wrap=True, highlight=False)


@keys_app.command("list")
def key_list(tenant: Annotated[str, typer.Option("--tenant", "-t", help="tenant name or id")]) -> None:
    async def job(catalog: Catalog) -> list[Any]:
        return await catalog.list_keys(await _tenant_id(catalog, tenant))

    table = Table("id", "role", "name", "prefix")
    for k in _catalog_run(load_settings(), job):
        table.add_row(k.id, k.role, k.name, k.prefix + "…")
    console.print(table)


@jobs_app.command("watch")
def jobs_watch(
    job_id: Annotated[str, typer.Argument(help="the job to follow")],
    url: Annotated[str, typer.Option(help="the ragd server", envvar="RAGD_URL")] = "http://127.0.0.1:8000",
    key: Annotated[str | None, typer.Option(help="API key", envvar="RAGD_API_KEY")] = None,
) -> None:
    """A progress bar for one job, fed by the server's event stream; exit 1 if the job failed."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        final = asyncio.run(_follow(url.rstrip("/"), job_id, headers))
    except httpx.HTTPError as exc:
        err_console.print(f"[red]error[/red] cannot follow the job at {url}: {exc}")
        raise typer.Exit(2) from exc
    for error in final.get("errors") or []:
        err_console.print(f"  [red]{error['code']}[/red] {error['key']}: {error['message']}")
    err = final.get("error")
    console.print(f"job {job_id}: {final['status']}" + (f" ({err['code']}: {err['message']})" if err else ""))
    if final["status"] != "succeeded":
        raise typer.Exit(1)


async def _follow(url: str, job_id: str, headers: dict[str, str]) -> dict[str, Any]:
    timeout = httpx.Timeout(30.0, read=None)
    async with (
        httpx.AsyncClient(timeout=timeout, headers=headers) as client,
        client.stream("GET", f"{url}/api/v1/events", params={"job_id": job_id}) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            message = f"HTTP {response.status_code}: {response.text[:300]}"
            raise httpx.HTTPStatusError(message, request=response.request, response=response)
        return await _render(response)


async def _render(response: httpx.Response) -> dict[str, Any]:
    last: dict[str, Any] = {}
    with RateProgress(console, "job", 0, unit="items") as bar:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                last = json.loads(line[6:])
                bar.update_to(
                    done=last["done"] + last["failed"],
                    total=last["total"],
                    chunks=last["chunks"],
                    failed=last["failed"],
                )
    return last


# -- ragd grants: what a tenant's folder and S3 sources may reach ----------------------------------

grants_app = typer.Typer(
    help="What a tenant's folder and S3 sources may reach (straight on the catalog).", no_args_is_help=True
)
_TENANT_OPTION = typer.Option("--tenant", "-t", help="tenant name or id")


@grants_app.command("add")
def grant_add(
    tenant: Annotated[str, _TENANT_OPTION],
    kind: Annotated[str, typer.Argument(help="folder or s3")],
    target: Annotated[str, typer.Argument(help="an absolute folder, or bucket/prefix (bucket alone: all)")],
    shared: Annotated[
        bool, typer.Option("--shared", help="let it overlap other tenants' grants (both reach it)")
    ] = False,
) -> None:
    """Grant a folder (and everything under it) or an S3 bucket/prefix to a tenant's sources;
    its disabled sources that the grant covers are enabled again."""
    settings = load_settings()

    async def job(catalog: Catalog) -> SourceGrant:
        return await kb_grants.create_grant(
            catalog,
            audit.OPERATOR,
            await _tenant_id(catalog, tenant),
            SourceKind.parse(kind),
            target,
            shared=shared,
            folder_roots=settings.catalog.folder_roots,
            allowed_buckets=settings.s3.allowed_buckets,
            client=audit.CLI_CLIENT,
        )

    made = _catalog_run(settings, job)
    console.print(f"grant {made.id}: {made.kind.value} {made.target}{' (shared)' if made.shared else ''}")


@grants_app.command("list")
def grant_list(
    tenant: Annotated[str, _TENANT_OPTION],
    include_revoked: Annotated[bool, typer.Option("--all", help="revoked grants too")] = False,
) -> None:
    async def job(catalog: Catalog) -> list[SourceGrant]:
        tenant_id = await _tenant_id(catalog, tenant)
        return await kb_grants.list_grants(
            catalog, audit.OPERATOR, tenant_id, include_revoked=include_revoked
        )

    table = Table()
    table.add_column("id", no_wrap=True)  # whole: `ragd grants revoke` takes it
    for name in ("kind", "target", "shared", "revoked"):
        table.add_column(name, overflow="fold")
    for g in _catalog_run(load_settings(), job):
        table.add_row(g.id, g.kind.value, g.target, "yes" if g.shared else "", "yes" if g.revoked_at else "")
    console.print(table)


@grants_app.command("revoke")
def grant_revoke(
    tenant: Annotated[str, _TENANT_OPTION],
    grant_id: Annotated[str, typer.Argument(help="the grant's id (ragd grants list)")],
) -> None:
    """Revoke a grant; the tenant's sources no other grant covers are disabled."""

    async def job(catalog: Catalog) -> list[SourceSpec]:
        tenant_id = await _tenant_id(catalog, tenant)
        _, disabled = await kb_grants.revoke_grant(
            catalog, audit.OPERATOR, tenant_id, grant_id, client=audit.CLI_CLIENT
        )
        return disabled

    disabled = _catalog_run(load_settings(), job)
    console.print(f"revoked {grant_id}; {len(disabled)} source(s) disabled")
    for spec in disabled:
        console.print(f"  disabled {spec.id} ({spec.kind.value})")
