"""E-mail messages (``.eml``, RFC 5322 / MIME), read with the standard library's ``email`` package.

Output::

    Subject: <subject>
    From: <from>
    To: <to>
    Cc: <cc>
    Date: <date>

    <body>

    Attachments: minutes.pdf, budget.xlsx

The body is the message's text/plain part; a message with only an HTML body has
it converted by the HTML reader it is given (so tables keep one row per line,
styles and scripts are dropped).  Attachments are listed by name; their contents
are not indexed (ingest them as files of their own).  Headers are decoded
(RFC 2047), and a body's declared charset is honoured, falling back to ragd's
text decoding when the declaration is wrong.
"""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage, Message, MIMEPart

from ragd.errors import EmptyDocument
from ragd.extract.base import Extractor
from ragd.extract.documents import make_document, normalise_newlines
from ragd.extract.text_decoding import decode_text
from ragd.types import Blob, Document

_HEADERS = ("Subject", "From", "To", "Cc", "Date")
_MIME = "message/rfc822"


class EmailExtractor:
    """Implements :class:`ragd.extract.base.Extractor` for e-mail messages."""

    name = "email"

    def __init__(self, html: Extractor) -> None:
        self._html = html

    def extract(self, blob: Blob) -> Document:
        message = email.message_from_bytes(blob.read(), policy=email.policy.default)
        header = "\n".join(f"{key}: {value}" for key in _HEADERS if (value := _header(message, key)))
        body = self._body(message, blob.name)
        names = [name for part in message.iter_attachments() if (name := part.get_filename())]
        parts = [header, body, f"Attachments: {', '.join(names)}" if names else ""]
        return make_document(
            "\n\n".join(part for part in parts if part),
            extractor=self.name,
            source=blob.name,
            mime_type=_MIME,
            meta={
                "subject": _header(message, "Subject"),
                "authors": [_header(message, "From")],
                "created_at": _header(message, "Date"),
                "attachments": names,
            },
        )

    def _body(self, message: EmailMessage, source: str) -> str:
        part = message.get_body(preferencelist=("plain", "html"))
        if part is None:
            return ""
        if part.get_content_type() == "text/html":
            html = Blob(name=f"{source} (HTML body)", data=_payload(part), mime_type="text/html")
            try:
                return self._html.extract(html).text
            except EmptyDocument:
                return ""
        return normalise_newlines(_text(part)).strip()


def _header(message: EmailMessage, key: str) -> str:
    try:
        return " ".join(str(message.get(key, "")).split())
    except (ValueError, TypeError, IndexError):  # a malformed header the policy could not parse
        return ""


def _payload(part: Message) -> bytes:
    data = part.get_payload(decode=True)
    return data if isinstance(data, bytes) else b""


def _text(part: MIMEPart) -> str:
    try:
        content = part.get_content()
    except (LookupError, UnicodeDecodeError, ValueError):  # unknown or wrong declared charset
        return decode_text(_payload(part)).text
    return content if isinstance(content, str) else decode_text(_payload(part)).text
