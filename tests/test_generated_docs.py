"""docs/configuration.md and .env.example, generated from ragd.settings: up to date, and their values work."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel, Field, SecretStr

from ragd.settings import Settings
from ragd.types import SearchMode

REPO = Path(__file__).resolve().parents[1]
GENERATED = [("docs/configuration.md", "settings_doc"), (".env.example", "env_example")]
# pydantic-settings JSON-decodes tuple fields read from the environment before any validator runs,
# so "a,b" (and "en") fail until ragd.settings marks them NoDecode.


def _tool(name: str) -> ModuleType:
    """A module from tools/ (scripts run as ``python tools/x.py``, so they import each other flat)."""
    if str(REPO / "tools") not in sys.path:
        sys.path.insert(0, str(REPO / "tools"))
    return importlib.import_module(name)


@pytest.mark.parametrize(("path", "tool"), GENERATED)
def test_generated_file_is_up_to_date(path: str, tool: str) -> None:
    checked_in = REPO / path
    current = checked_in.read_text(encoding="utf-8") if checked_in.is_file() else ""
    if current != _tool(tool).render():
        pytest.fail(
            f"{path} is out of date with ragd.settings; regenerate it: python tools/{tool}.py > {path}"
        )


class _Group(BaseModel):
    key: SecretStr | None = Field(SecretStr("hunter2"), description="a secret")
    names: tuple[str, ...] = ("a", "b")
    mode: SearchMode = SearchMode.DENSE
    path: Path | None = None
    flag: bool = True
    size: int = Field(3, ge=1, le=9)
    ratio: float = Field(0.5, gt=0)
    style: str = "x y"


class _Root(BaseModel):
    top: str = Field("t", description="top level")
    group: _Group = _Group()


def test_walk_renders_defaults_as_the_environment_takes_them() -> None:
    fields = list(_tool("settings_walk").walk(_Root, "APP_"))
    assert [(f.group, f.env, f.default, f.description) for f in fields] == [
        ("general", "APP_TOP", "t", "top level"),
        ("group", "APP_GROUP__KEY", "", "a secret"),
        ("group", "APP_GROUP__NAMES", "a,b", "comma list"),
        ("group", "APP_GROUP__MODE", "dense", "one of: dense, sparse, hybrid"),
        ("group", "APP_GROUP__PATH", "", "path"),
        ("group", "APP_GROUP__FLAG", "true", "true or false"),
        ("group", "APP_GROUP__SIZE", "3", "integer >= 1, <= 9"),
        ("group", "APP_GROUP__RATIO", "0.5", "number > 0"),
        ("group", "APP_GROUP__STYLE", "x y", "text"),
    ]


def test_env_example_shape() -> None:
    text = _tool("env_example").render()
    lines = text.splitlines()
    assert lines[0].startswith("# ragd settings: every line below is optional")
    assert "#     python tools/env_example.py > .env.example" in lines
    assert all(line == "" or line.startswith("#") for line in lines)  # nothing is set by the example
    for field in _tool("settings_walk").walk():
        assert sum(line.startswith(f"# {field.env}=") for line in lines) == 1, field.env
    for group in ("general", "log", "server", "rerank", "llm", "query_generation", "s3"):
        assert f"# ==== {group} ====" in lines
    assert "# RAGD_SERVER__API_KEY=" in lines  # secrets are empty
    assert "# RAGD_S3__SECRET_ACCESS_KEY=" in lines
    assert "# RAGD_RERANK__API_KEY=" in lines
    assert "# RAGD_EMBEDDING__LANGUAGES=en" in lines  # tuples as comma lists
    assert "# RAGD_RETRIEVAL__MODE=hybrid" in lines  # enums by value
    assert "# RAGD_STORE__URL=" in lines  # None is empty
    idx = lines.index("# RAGD_LOG__FORMAT=text")
    assert lines[idx - 1] == "# text lines or JSON lines"


def test_env_example_quotes_what_a_dotenv_parser_would_misread() -> None:
    quoted = _tool("env_example")._quoted
    assert quoted("packaged:all-MiniLM-L6-v2") == "packaged:all-MiniLM-L6-v2"
    assert quoted("a b # c") == '"a b # c"'
    assert quoted('say "hi"') == '"say \\"hi\\""'


def _set_fields() -> list[object]:
    return [pytest.param(f, id=f.env) for f in _tool("settings_walk").walk() if f.default]


def _read(settings: Settings, env: str) -> object:
    value: object = settings
    for part in env.removeprefix("RAGD_").lower().split("__"):
        value = getattr(value, part)
    return value


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in [n for n in os.environ if n.startswith("RAGD_")]:
        monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.parametrize("field", _set_fields())
def test_uncommenting_a_default_keeps_the_default(clean_env: pytest.MonkeyPatch, field: Any) -> None:
    clean_env.setenv(field.env, field.default)
    assert _tool("settings_walk").env_value(_read(Settings(_env_file=None), field.env)) == field.default


@pytest.mark.parametrize(
    "env", ["RAGD_EMBEDDING__LANGUAGES", "RAGD_SERVER__CORS_ORIGINS", "RAGD_S3__ALLOWED_BUCKETS"]
)
def test_list_settings_take_comma_lists(clean_env: pytest.MonkeyPatch, env: str) -> None:
    clean_env.setenv(env, "a, b")
    assert _read(Settings(_env_file=None), env) == ("a", "b")


def test_folder_roots_take_a_comma_list_of_paths(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGD_CATALOG__FOLDER_ROOTS", "/srv/docs, /srv/wiki")
    assert Settings(_env_file=None).catalog.folder_roots == (Path("/srv/docs"), Path("/srv/wiki"))


def test_list_settings_also_take_json_and_empty_values_mean_unset(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGD_S3__ALLOWED_BUCKETS", '["x", "y"]')
    clean_env.setenv("RAGD_SERVER__API_KEY", "")
    clean_env.setenv("RAGD_EMBEDDING__CACHE_DIR", "")
    settings = Settings(_env_file=None)
    assert settings.s3.allowed_buckets == ("x", "y")
    assert settings.server.api_key is None
    assert settings.embedding.cache_dir is None
