"""The vision model's answers on disk, keyed by what decides them, so nothing is asked twice.

The key is the SHA-256 of the image's bytes, the model, the profile and its prompt version, the
language hint and any text sent beside the image (:func:`answer_key`): a re-index, a migration to
another embedding model or another chunking, or a second copy of the same picture in another file
reads the answer from here.  A changed prompt, model or language asks again.

One JSON file per key under ``<dir>/<first two hex digits>/``, written to a temporary name and
renamed into place (``os.replace``): extraction processes share the folder safely, a reader never
sees half a file, and two processes answering the same image at once both write whole, identical
answers.  A file that cannot be read is a miss; a cache that cannot be written is logged and
skipped (the answer was still used).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


def answer_key(
    image_sha256: str, *, model: str, profile: str, prompt_version: str, language: str, context: str = ""
) -> str:
    """The cache key of one call (hex); ``context``: text sent beside the image, if any."""
    context_hash = hashlib.sha256(context.encode()).hexdigest() if context else ""
    parts = (image_sha256, model, profile, prompt_version, language, context_hash)
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class AnswerCache:
    """Answers by :func:`answer_key`; ``folder=None`` keeps nothing."""

    def __init__(self, folder: Path | None) -> None:
        self._folder = folder

    def get(self, key: str) -> str | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        text = record.get("text") if isinstance(record, dict) else None
        return text if isinstance(text, str) else None

    def put(self, key: str, text: str) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"text": text}, out, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            logger.warning("vision answer cache not written (%s): %s", path.parent, exc)

    def _path(self, key: str) -> Path | None:
        if self._folder is None:
            return None
        return self._folder / key[:2] / f"{key}.json"
