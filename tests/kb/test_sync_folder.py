"""A folder sync that cannot list part of the folder removes nothing it could not see, through the
real services and job runner (listing failures injected by :mod:`tests.support.listing`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.bootstrap import open_services
from ragd.kb.datasets import create_dataset
from ragd.kb.files import list_files
from ragd.kb.sources import add_source, sync_source
from ragd.kb_types import JobStatus, Principal, SourceKind
from ragd.retrieve.search import SearchRequest
from ragd.settings import EmbeddingSettings, Settings
from tests.kb.conftest import run_to_end
from tests.support.listing import FailingListing

SERVICE = Principal(tenant_id=None, role="admin")
MARKERS = ("alderbrook", "birchvale", "cedarfall", "dunmoor")


def note(folder: Path, rel: str, marker: str) -> None:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Memo\nThe {marker} memo explains the travel policy.\n")


async def test_folders_that_cannot_be_listed_keep_their_files(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    note(folder, "public/a.md", "alderbrook")
    note(folder, "private/b.md", "birchvale")
    note(folder, "private/deep/c.md", "cedarfall")
    listing = FailingListing(monkeypatch)
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="folder", tenant_id=tenant.id)
        spec, job = await add_source(
            kb, SERVICE, ds.id, SourceKind.FOLDER, {"path": str(folder)}, folder_roots=[], allow_private=False
        )
        assert (await run_to_end(kb, job)).status is JobStatus.SUCCEEDED

        async def state() -> dict[str, str]:
            return {str(f.item_key): f.status.value for f in await list_files(kb, SERVICE, ds.id)}

        async def found() -> set[str]:
            hits = await services.retriever.search(
                SearchRequest(" ".join(MARKERS), (ds.collection_name,), k=10)
            )
            return {m for m in MARKERS for h in hits if m in h.content}

        async def sync() -> tuple[JobStatus, dict[str, tuple[str, str | None]]]:
            done = await run_to_end(kb, await sync_source(kb, SERVICE, ds.id, spec.id))
            return done.status, {
                i.key: (i.stage.value, i.error_code) for i in await kb.catalog.items(done.id)
            }

        everything = {"public/a.md": "indexed", "private/b.md": "indexed", "private/deep/c.md": "indexed"}
        assert await state() == everything

        # "private/" cannot be listed while "public/a.md" is really deleted and "public/d.md" added
        listing.deny(folder.resolve() / "private")
        (folder / "public/a.md").unlink()
        note(folder, "public/d.md", "dunmoor")
        status, items = await sync()
        assert status is JobStatus.PARTIAL  # the folder that could not be listed is a failed item
        assert items == {
            "private/": ("failed", "EXTRACTION_FAILED"),
            "public/a.md": ("deleted", None),
            "public/d.md": ("done", None),
        }
        assert await state() == {
            "private/b.md": "indexed",
            "private/deep/c.md": "indexed",
            "public/d.md": "indexed",
        }
        assert await found() == {"birchvale", "cedarfall", "dunmoor"}
        assert "private/" not in await kb.catalog.ledger(spec.id)

        # the root itself cannot be listed: the sync fails and changes nothing
        listing.deny(folder.resolve())
        status, items = await sync()
        assert status is JobStatus.FAILED
        assert await state() == {
            "private/b.md": "indexed",
            "private/deep/c.md": "indexed",
            "public/d.md": "indexed",
        }
        assert await found() == {"birchvale", "cedarfall", "dunmoor"}

        # listable again: what is really gone under "private/" goes now, the rest is unchanged
        listing.deny()
        (folder / "private/deep/c.md").unlink()
        status, items = await sync()
        assert status is JobStatus.SUCCEEDED
        assert items == {
            "private/b.md": ("unchanged", None),
            "private/deep/c.md": ("deleted", None),
            "public/d.md": ("unchanged", None),
        }
        assert await state() == {"private/b.md": "indexed", "public/d.md": "indexed"}
        assert await found() == {"birchvale", "dunmoor"}
