"""A ``.zip`` of documents is ingested member by member (agent-cli's archives, issue 34 §2): each
member a file with its own record and code, the archive refused whole for a traversing name, a
bomb or too many members, a member refused on its own when it is too large, encrypted, a link or an
archive itself.  The reader alone, then a live service on each catalog."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest

from ragd.errors import ArchiveInvalid, InvalidRequest, PayloadTooLarge
from ragd.kb.files import Upload
from ragd.kb.zip_uploads import ZipLimits, expand
from tests.kb.conftest import Api, new_tenant

LIMITS = ZipLimits(max_file_bytes=1000, max_unpacked_bytes=5000, max_files=10)


def make_zip(
    members: dict[str, bytes], *, links: tuple[str, ...] = (), encrypted: tuple[str, ...] = ()
) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in links:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, data)
    raw = bytearray(buf.getvalue())
    for name in encrypted:  # set the "encrypted" flag bit in the member's central directory entry
        at = raw.rfind(b"PK\x01\x02", 0, raw.rfind(name.encode()))
        raw[at + 8] |= 0x1
    return bytes(raw)


def upload_of(tmp_path: Path, name: str, data: bytes) -> Upload:
    path = tmp_path / f"upload-{len(list(tmp_path.iterdir()))}"
    path.write_bytes(data)
    return Upload(name=name, path=path, size=len(data))


def test_members_become_uploads_and_refusals_are_per_member(tmp_path: Path) -> None:
    data = make_zip(
        {
            "docs/a.md": b"# A\n\nalpha",
            "b.txt": b"beta",
            "docs/": b"",
            "inner.zip": make_zip({"c.md": b"c"}),
            "big.md": b"x" * 1001,
            "link.md": b"/etc/passwd",
            "locked.md": b"secret",
        },
        links=("link.md",),
        encrypted=("locked.md",),
    )
    plain = upload_of(tmp_path, "notes.md", b"# notes")
    out = expand([plain, upload_of(tmp_path, "Bundle.ZIP", data)], tmp_path, LIMITS)
    assert out[0] is plain  # not an archive: as it came
    by_name = {u.name: u for u in out[1:]}
    assert sorted(by_name) == ["a.md", "b.txt", "big.md", "inner.zip", "link.md", "locked.md"]
    assert by_name["a.md"].refused is None
    assert by_name["a.md"].path.read_bytes() == b"# A\n\nalpha"
    assert by_name["a.md"].path.parent == tmp_path  # ragd's own name, never the member's path
    assert by_name["b.txt"].size == 4
    codes = {n: u.refused.code for n, u in by_name.items() if u.refused is not None}
    assert codes == {
        "inner.zip": "UNSUPPORTED_TYPE",
        "big.md": "FILE_TOO_LARGE",
        "link.md": "UNSUPPORTED_TYPE",
        "locked.md": "ENCRYPTED_DOCUMENT",
    }


@pytest.mark.parametrize(
    "name", ["../evil.md", "docs/../../evil.md", "/etc/evil.md", "C:/evil.md", "..\\evil.md"]
)
def test_a_traversing_member_name_refuses_the_archive(tmp_path: Path, name: str) -> None:
    data = make_zip({"fine.md": b"fine", name: b"evil"})
    with pytest.raises(ArchiveInvalid, match="points outside the archive"):
        expand([upload_of(tmp_path, "a.zip", data)], tmp_path, LIMITS)
    assert not list(tmp_path.glob("member-*"))  # refused before anything was unpacked


def test_a_bomb_too_many_members_or_not_a_zip_refuses_the_archive(tmp_path: Path) -> None:
    bomb = make_zip({f"p{i}.md": b"0" * 1000 for i in range(6)})  # 6,000 bytes declared, tiny on disk
    assert len(bomb) < 2000
    with pytest.raises(PayloadTooLarge, match="unpacks to 6,000 bytes"):
        expand([upload_of(tmp_path, "bomb.zip", bomb)], tmp_path, LIMITS)
    many = make_zip({f"f{i}.md": b"x" for i in range(11)})
    with pytest.raises(InvalidRequest, match="holds 11 files"):
        expand([upload_of(tmp_path, "many.zip", many)], tmp_path, LIMITS)
    six = upload_of(tmp_path, "six.zip", make_zip({f"f{i}.md": b"x" for i in range(6)}))
    with pytest.raises(InvalidRequest, match="archives counted by their members; got 12"):
        expand(
            [six, upload_of(tmp_path, "six2.zip", make_zip({f"g{i}.md": b"x" for i in range(6)}))],
            tmp_path,
            LIMITS,
        )
    with pytest.raises(ArchiveInvalid, match="not a readable zip"):
        expand([upload_of(tmp_path, "fake.zip", b"PK\x03\x04 not really")], tmp_path, LIMITS)
    assert not list(tmp_path.glob("member-*"))


def test_a_member_lying_about_its_size_stops_at_the_cap(tmp_path: Path) -> None:
    data = bytearray(make_zip({"liar.md": b"y" * 3000}))
    # the central directory says 10 bytes; the reader trusts it for the limits, the copy does not
    at = data.rfind(b"PK\x01\x02")
    data[at + 24 : at + 28] = (10).to_bytes(4, "little")
    (member,) = expand([upload_of(tmp_path, "l.zip", bytes(data))], tmp_path, LIMITS)
    assert member.refused is not None
    assert member.refused.code in ("FILE_TOO_LARGE", "ARCHIVE_INVALID"), member.refused
    assert not list(tmp_path.glob("member-*"))


@pytest.mark.slow
def test_a_zip_upload_is_indexed_member_by_member(service: Api) -> None:
    _, keys = new_tenant(service, "zipper", "editor")
    editor = keys["editor"]
    try:
        ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "archive"})
        data = make_zip(
            {
                "guide/intro.md": b"# Intro\n\nThe walrus ledger opens every spring.",
                "faq.txt": b"Where is the walrus ledger kept? In the lighthouse.",
                "empty.txt": b"",
                "nested.zip": make_zip({"x.md": b"x"}),
            }
        )
        sent = editor.ok(
            "POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=[("files", ("bundle.zip", data))]
        )
        names = {f["name"]: f for f in sent["files"]}
        assert sorted(names) == ["empty.txt", "faq.txt", "intro.md", "nested.zip"]
        assert names["nested.zip"]["status"] == "failed"
        job = editor.wait_job(sent["job"]["id"])
        assert job["status"] == "partial", job
        files = {f["name"]: f for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]}
        assert files["intro.md"]["status"] == files["faq.txt"]["status"] == "indexed"
        empty = files["empty.txt"]
        assert (empty["status"], empty["error"]["code"]) == ("failed", "EMPTY_DOCUMENT")
        assert files["nested.zip"]["error"]["code"] == "UNSUPPORTED_TYPE"
        hits = editor.search("walrus ledger lighthouse", ds["id"])
        assert {h["name"] for h in hits} >= {"intro.md", "faq.txt"}, hits
        # a traversing member refuses the whole archive: 422, nothing kept
        evil = make_zip({"ok.md": b"fine", "../../etc/cron.d/x": b"evil"})
        r = editor.post(f"/api/v1/datasets/{ds['id']}/files", files=[("files", ("evil.zip", evil))])
        assert r.status_code == 422, r.text
        assert r.json()["detail"]["code"] == "ARCHIVE_INVALID"
        after = editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
        assert sorted(f["name"] for f in after) == sorted(files)
    finally:
        editor.close()
