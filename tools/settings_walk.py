"""Walk ragd.settings.Settings field by field, for the generated docs/configuration.md and .env.example.

Each field becomes a :class:`SettingField`: its environment variable, its default written the way the
environment takes it (enums by value, tuples as comma lists, booleans as true/false, ``None`` and
secrets empty) and a description (the field's own, else what its type accepts).
"""

from __future__ import annotations

import enum
import itertools
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, SecretBytes, SecretStr
from pydantic.fields import FieldInfo

from ragd.settings import Settings

GENERAL = "general"  # the group of the top-level fields


@dataclass(frozen=True)
class SettingField:
    group: str
    env: str
    default: str
    description: str


def _members(annotation: object) -> tuple[object, ...]:
    """``X | None`` as ``(X,)``; anything else as itself."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(annotation) if a is not type(None))
    return (annotation,)


def _nested_model(annotation: object) -> type[BaseModel] | None:
    [only, *rest] = _members(annotation)
    if not rest and isinstance(only, type) and issubclass(only, BaseModel):
        return only
    return None


def _is_secret(annotation: object) -> bool:
    return any(m in (SecretStr, SecretBytes) for m in _members(annotation))


def env_value(value: object) -> str:
    """A default as it is written in the environment."""
    if value is None or isinstance(value, SecretStr | SecretBytes):
        return ""
    if isinstance(value, enum.Enum):
        return env_value(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list | set | frozenset):
        return ",".join(env_value(item) for item in value)
    return str(value)


def _bounds(field: FieldInfo) -> str:
    """`` >= 1, <= 100`` from the field's ge/gt/le/lt constraints."""
    symbols = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    parts = [
        f"{symbol} {getattr(item, attr)}"
        for item in field.metadata
        for attr, symbol in symbols.items()
        if getattr(item, attr, None) is not None
    ]
    return f" {', '.join(parts)}" if parts else ""


def type_hint(field: FieldInfo) -> str:
    """What a field without a description accepts, e.g. ``one of: text, json`` or ``integer >= 1``."""
    [kind, *_] = _members(field.annotation)
    if typing.get_origin(kind) is typing.Literal:
        return "one of: " + ", ".join(str(v) for v in typing.get_args(kind))
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return "one of: " + ", ".join(env_value(v) for v in kind)
    if typing.get_origin(kind) is tuple:
        return "comma list"
    names: dict[object, str] = {bool: "true or false", int: "integer", float: "number", Path: "path"}
    return names.get(kind, "secret" if kind is SecretStr else "text") + _bounds(field)


def walk(
    model: type[BaseModel] = Settings, prefix: str = "RAGD_", group: str = GENERAL
) -> Iterator[SettingField]:
    """Every leaf field of ``model`` in declaration order, nested groups joined with ``__``."""
    for name, field in model.model_fields.items():
        nested = _nested_model(field.annotation)
        if nested is not None:
            yield from walk(
                nested, f"{prefix}{name.upper()}__", name if group == GENERAL else f"{group}.{name}"
            )
            continue
        default = field.get_default(call_default_factory=True) if not field.is_required() else None
        yield SettingField(
            group=group,
            env=f"{prefix}{name.upper()}",
            default="" if _is_secret(field.annotation) else env_value(default),
            description=field.description or type_hint(field),
        )


def groups(model: type[BaseModel] = Settings) -> list[tuple[str, list[SettingField]]]:
    """The fields of :func:`walk` grouped by settings group, top-level fields first as ``general``."""
    return [(name, list(fields)) for name, fields in itertools.groupby(walk(model), key=lambda f: f.group)]
