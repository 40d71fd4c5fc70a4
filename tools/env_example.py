"""Render .env.example from the Settings model (a test checks it is up to date).

python tools/env_example.py > .env.example
"""

from __future__ import annotations

import re

from settings_walk import SettingField, groups

HEADER = """\
# ragd settings: every line below is optional; the commented-out value is the built-in default.
# Copy the lines you need to .env (or export them) and uncomment them. Variables take the RAGD_
# prefix and __ between a group and its field; list settings take comma lists (a,b).
# A line that ends in "=" has no default (unset): leave it commented out unless you give a value.
# See docs/configuration.md. Generated from ragd.settings by tools/env_example.py, do not edit:
#     python tools/env_example.py > .env.example
"""

_PLAIN = re.compile(r"[\w.,:/@+*-]*")


def _quoted(value: str) -> str:
    """Values a .env parser could misread (spaces, #, quotes, $) are double-quoted."""
    if _PLAIN.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def entry(field: SettingField) -> str:
    return f"# {field.description}\n# {field.env}={_quoted(field.default)}\n"


def render() -> str:
    sections = [
        f"\n# ==== {name} ====\n\n" + "\n".join(entry(field) for field in fields) for name, fields in groups()
    ]
    return HEADER + "".join(sections)


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
