"""Settings as JSON for people to read, every secret shown as ``"***"``.

Shared by ``ragd proxy``'s ``/health`` and ``GET /api/v1/system`` (service key only): SecretStr
values, any value of a field named like a secret (``api_key``, ``secret_access_key``,
``password``, ``token``, ``access_key_id``…) and the password of a URL (``postgresql://u:***@h/db``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

MASK = "***"
#: a field holding a secret whatever its type (StoreSettings.api_key is a plain str)
SECRET_NAME = re.compile(r"(key|key_id|secret|password|passwd|token)$|secret|password", re.IGNORECASE)


def masked(value: object) -> Any:
    """``value`` (a settings model, a mapping, a list, a scalar) as JSON with every secret masked."""
    if isinstance(value, SecretStr):
        return MASK
    if isinstance(value, BaseModel):
        return {name: _field(name, getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, Mapping):
        return {str(k): _field(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [masked(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str) and "://" in value and "@" in value:
        return masked_url(value)
    return value


def _field(name: str, value: object) -> Any:
    return MASK if value is not None and SECRET_NAME.search(name) else masked(value)


def masked_url(url: str) -> str:
    """``scheme://user:secret@host/…`` -> ``scheme://user:***@host/…``."""
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    if "@" not in authority:
        return url
    userinfo, _, host = authority.rpartition("@")
    user = userinfo.partition(":")[0]
    return f"{scheme}{sep}{user}:{MASK}@{host}{slash}{tail}"
