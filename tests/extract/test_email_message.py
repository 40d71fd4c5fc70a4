"""E-mail messages: headers, the plain or HTML body, attachment names; built with the stdlib's email package."""

from __future__ import annotations

from email.message import EmailMessage

from ragd.extract.router import RoutingExtractor
from ragd.types import Blob


def _message(subject: str = "Quarterly saffron") -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Ann Example <ann@example.org>"
    message["To"] = "bob@example.org"
    message["Cc"] = "carol@example.org"
    message["Subject"] = subject
    message["Date"] = "Tue, 24 Nov 2026 10:00:00 +0000"
    return message


def test_plain_body_headers_and_attachment_names(extractor: RoutingExtractor) -> None:
    message = _message()
    message.set_content("The quartermaster logged seventeen crates.\n\n-- \nAnn\nFinance\n")
    message.add_alternative("<p>The quartermaster logged <b>seventeen</b> crates.</p>", subtype="html")
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="minutes.pdf")
    message.add_attachment(b"a,b\n", maintype="text", subtype="csv", filename="budget.csv")
    document = extractor.extract(Blob(name="mail.eml", data=bytes(message)))
    assert document.extractor == "email"
    assert document.mime_type == "message/rfc822"
    lines = document.text.splitlines()
    assert lines[:5] == [
        "Subject: Quarterly saffron",
        "From: Ann Example <ann@example.org>",
        "To: bob@example.org",
        "Cc: carol@example.org",
        "Date: Tue, 24 Nov 2026 10:00:00 +0000",
    ]
    assert "The quartermaster logged seventeen crates." in document.text
    assert "Ann\nFinance" in document.text
    assert document.text.count("seventeen") == 1  # the HTML alternative is the same text: not twice
    assert lines[-1] == "Attachments: minutes.pdf, budget.csv"
    assert document.meta["attachments"] == ["minutes.pdf", "budget.csv"]
    assert document.meta["subject"] == "Quarterly saffron"


def test_an_html_only_body_is_read_as_html_with_table_rows_on_one_line(extractor: RoutingExtractor) -> None:
    message = _message("=?utf-8?q?R=C3=A9sum=C3=A9_of_the_audit?=")
    message.set_content(
        "<html><head><style>p {color: red}</style><script>var tracking = 1;</script></head><body>"
        "<p>Audit findings below.</p><table><tr><th>Code</th><th>Meaning</th></tr>"
        "<tr><td>FILE_TOO_LARGE</td><td>over the size limit</td></tr></table></body></html>",
        subtype="html",
    )
    document = extractor.extract(Blob(name="audit.eml", data=bytes(message)))
    assert document.text.startswith("Subject: Résumé of the audit")
    assert "Audit findings below." in document.text
    row = next(line for line in document.text.splitlines() if "over the size limit" in line)
    assert " ".join(row.replace("\\_", "_").split()) == "| FILE_TOO_LARGE | over the size limit |"
    assert "tracking" not in document.text
    assert "<p>" not in document.text


def test_a_wrong_declared_charset_falls_back_to_decoding(extractor: RoutingExtractor) -> None:
    raw = (
        b"From: a@example.org\r\nSubject: Caf\xc3\xa9\r\nContent-Type: text/plain; charset=no-such-charset\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\nLe caf\xc3\xa9 est servi \xc3\xa0 midi.\r\n"
    )
    document = extractor.extract(Blob(name="cafe.eml", data=raw))
    assert "Le café est servi à midi." in document.text
