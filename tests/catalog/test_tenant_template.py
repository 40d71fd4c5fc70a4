"""The tenant template's storage and the atomic creation of a tenant with its standard datasets
(issue 34 §2, seed 001), on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from ragd.catalog.sql import SqlCatalog
from ragd.errors import Conflict
from ragd.kb.datasets import collection_name_for
from ragd.kb.tenant_template import TenantTemplate, template_datasets
from ragd.kb_types import ChunkingSpec, Dataset, DatasetTemplate, FileEntry
from ragd.types import ChunkStrategy

FAQ = DatasetTemplate("faq", "Questions", ChunkingSpec(ChunkStrategy.TOKEN, 96, 8), ("sales", "support"))


async def test_a_tenant_is_created_with_its_datasets_in_one_transaction(catalog: SqlCatalog) -> None:
    template = TenantTemplate((FAQ, DatasetTemplate("products")), custom=True)
    acme = await catalog.create_tenant("acme", template_datasets(template))
    made = await catalog.list_datasets(acme.id)
    assert [(d.name, d.tenant_id) for d in made] == [("faq", acme.id), ("products", acme.id)]
    assert made[0].chunking == FAQ.chunking
    assert made[0].allowed_roles == ("sales", "support")
    assert made[0].collection_name == collection_name_for(made[0].id)
    assert made[0].created_at == acme.created_at


async def test_a_dataset_that_cannot_be_made_leaves_no_tenant_behind(catalog: SqlCatalog) -> None:
    one = template_datasets(TenantTemplate((DatasetTemplate("faq"),), custom=True))[0]
    clash = Dataset(id=one.id.replace(one.id[:8], "0" * 8), tenant_id="", name="faq", collection_name="kb-x")
    with pytest.raises(Conflict):
        await catalog.create_tenant("acme", [one, clash])  # one name twice in one tenant
    assert await catalog.list_tenants() == []
    assert await catalog.list_datasets(None) == []
    again = await catalog.create_tenant("acme", [one])  # nothing half-made stands in the way
    assert [d.id for d in await catalog.list_datasets(again.id)] == [one.id]


async def test_the_template_is_stored_replaced_and_removed(catalog: SqlCatalog) -> None:
    assert await catalog.get_tenant_template() is None  # never set: the settings' default applies
    await catalog.set_tenant_template([FAQ, DatasetTemplate("sales")])
    assert await catalog.get_tenant_template() == [FAQ, DatasetTemplate("sales")]
    await catalog.set_tenant_template([])
    assert await catalog.get_tenant_template() == []  # set to none: new tenants get no dataset
    await catalog.set_tenant_template(None)
    assert await catalog.get_tenant_template() is None


async def test_a_file_keeps_its_chunking_and_source_label(catalog: SqlCatalog) -> None:
    acme = await catalog.create_tenant("acme", template_datasets(TenantTemplate((FAQ,), custom=True)))
    dataset = (await catalog.list_datasets(acme.id))[0]
    own = ChunkingSpec(ChunkStrategy.SENTENCE, None, 0)
    entry = FileEntry(id="f1", dataset_id=dataset.id, name="a.md", chunking=own, source_label="CRM")
    await catalog.put_file(entry)
    await catalog.put_file(FileEntry(id="f2", dataset_id=dataset.id, name="b.md"))
    stored = await catalog.get_file("f1")
    assert stored is not None
    assert (stored.chunking, stored.source_label) == (own, "CRM")
    plain = await catalog.get_file("f2")
    assert plain is not None
    assert (plain.chunking, plain.source_label) == (None, None)
