"""Render docs/configuration.md from the Settings model (a test checks it is up to date).

python tools/settings_doc.py > docs/configuration.md
"""

from __future__ import annotations

from pydantic import BaseModel

from ragd.settings import Settings

HEADER = """# Configuration

Every setting is an environment variable with the `RAGD_` prefix (or a line in `.env`); grouped
settings use `__` between the group and the field, e.g. `RAGD_EMBEDDING__BATCH_SIZE=32`. Settings are
read once at start-up. This page is generated from `ragd.settings` by `tools/settings_doc.py`.

| variable | default | description |
|---|---|---|
"""


def _default(value: object) -> str:
    if hasattr(value, "value"):
        value = value.value
    return f"`{value}`" if value not in (None, "") else "—"


def rows(model: type[BaseModel], prefix: str) -> list[str]:
    out = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out.extend(rows(annotation, f"{prefix}{name.upper()}__"))
            continue
        out.append(f"| `{prefix}{name.upper()}` | {_default(field.default)} | {field.description or ''} |")
    return out


def render() -> str:
    return HEADER + "\n".join(rows(Settings, "RAGD_")) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
