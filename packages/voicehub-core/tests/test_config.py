"""Closed, typed, versioned configs: unknown keys, exact JSON round trips, migrations."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from voicehub.core import Config, ConfigError, UnknownConfigKeyError
from voicehub.core.config import Migration


class Window(enum.StrEnum):
    HANN = "hann"
    HAMMING = "hamming"


@dataclasses.dataclass(frozen=True, kw_only=True)
class FrontEndConfig(Config):
    config_type: ClassVar[str] = "test-front-end"

    sample_rate: int = 16000
    num_mel_bins: int = 40
    window: Window = Window.HANN
    fmax_hz: float | None = None

    def validate(self) -> None:
        super().validate()
        if self.num_mel_bins <= 0:
            raise ConfigError(f"num_mel_bins must be > 0, got {self.num_mel_bins}", key="num_mel_bins")


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    data["num_layers"] = data.pop("layers")
    return data


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    data.setdefault("norm", "layer")
    return data


@dataclasses.dataclass(frozen=True, kw_only=True)
class EncoderConfig(Config):
    config_type: ClassVar[str] = "test-encoder"
    schema_version: ClassVar[int] = 3
    migrations: ClassVar[Mapping[int, Migration]] = {1: _v1_to_v2, 2: _v2_to_v3}

    num_layers: int = 3
    hidden_sizes: tuple[int, ...] = (256, 256, 256)
    norm: Literal["layer", "batch"] = "layer"
    front_end: FrontEndConfig = dataclasses.field(default_factory=FrontEndConfig)
    labels: dict[str, float] = dataclasses.field(default_factory=dict)


def test_unknown_keys_are_rejected_with_the_known_ones() -> None:
    with pytest.raises(UnknownConfigKeyError) as info:
        EncoderConfig.from_dict({"num_layers": 2, "num_layer": 2, "dropout": 0.1})
    message = str(info.value)
    assert "unknown key(s) ['dropout', 'num_layer']" in message
    assert "known keys are ['front_end', 'hidden_sizes', 'labels', 'norm', 'num_layers']" in message
    assert info.value.unknown == ("dropout", "num_layer")
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


def test_nested_unknown_keys_are_rejected_too() -> None:
    with pytest.raises(UnknownConfigKeyError, match="test-front-end: unknown key"):
        EncoderConfig.from_dict({"front_end": {"n_mels": 80}})


def test_json_round_trip_is_exact_including_nested_defaults() -> None:
    config = EncoderConfig(
        num_layers=2,
        hidden_sizes=(128, 64),
        norm="batch",
        front_end=FrontEndConfig(num_mel_bins=80, window=Window.HAMMING, fmax_hz=7600.0),
        labels={"speech": 0.5},
    )
    text = config.to_json()
    again = EncoderConfig.from_json(text)
    assert again == config
    assert again.to_json() == text
    assert isinstance(again.hidden_sizes, tuple) and again.front_end.window is Window.HAMMING
    assert EncoderConfig.from_json(EncoderConfig().to_json()) == EncoderConfig()


def test_serialized_form_carries_type_and_schema_version() -> None:
    data = FrontEndConfig(fmax_hz=8000).to_dict()
    assert data == {
        "type": "test-front-end",
        "schema_version": 1,
        "sample_rate": 16000,
        "num_mel_bins": 40,
        "window": "hann",
        "fmax_hz": 8000,
    }


def test_older_schema_version_is_migrated_step_by_step() -> None:
    old = {"type": "test-encoder", "schema_version": 1, "layers": 5, "hidden_sizes": [8, 8, 8, 8, 8]}
    config = EncoderConfig.from_dict(old)
    assert config.num_layers == 5 and config.norm == "layer"
    assert config.to_dict()["schema_version"] == 3


def test_newer_or_unmigratable_schema_versions_are_refused() -> None:
    with pytest.raises(ConfigError, match="newer than this VoiceHub understands"):
        EncoderConfig.from_dict({"schema_version": 4})
    with pytest.raises(ConfigError, match="positive integer"):
        FrontEndConfig.from_dict({"schema_version": 0})

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Bumped(Config):
        config_type: ClassVar[str] = "test-bumped"
        schema_version: ClassVar[int] = 2

    with pytest.raises(ConfigError, match="no migration from schema_version 1 to 2"):
        Bumped.from_dict({"schema_version": 1})
    with pytest.raises(ConfigError, match="positive integer"):
        EncoderConfig.from_dict({"schema_version": "2"})


def test_wrong_type_tag_is_refused() -> None:
    with pytest.raises(ConfigError, match="'test-front-end' cannot be loaded as EncoderConfig"):
        EncoderConfig.from_dict(FrontEndConfig().to_dict())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_layers": "3"}, "num_layers: expected int"),
        ({"num_layers": True}, "num_layers: expected int"),
        ({"hidden_sizes": (1, 2.5)}, "hidden_sizes: expected tuple of int"),
        ({"norm": "group"}, "norm: expected one of"),
        ({"labels": {"a": "b"}}, "labels: expected"),
    ],
)
def test_field_types_are_checked(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        EncoderConfig(**changes)


def test_validate_hook_checks_ranges_and_replace_revalidates() -> None:
    with pytest.raises(ConfigError, match="num_mel_bins must be > 0"):
        FrontEndConfig(num_mel_bins=0)
    config = FrontEndConfig()
    assert config.replace(num_mel_bins=80).num_mel_bins == 80
    with pytest.raises(ConfigError):
        config.replace(num_mel_bins=-1)
    with pytest.raises(UnknownConfigKeyError, match="n_mels"):
        config.replace(n_mels=80)


def test_numpy_scalars_become_python_values() -> None:
    import numpy as np

    config = FrontEndConfig(num_mel_bins=np.int64(80), fmax_hz=np.float32(7600.0))  # type: ignore[arg-type]
    assert type(config.num_mel_bins) is int and type(config.fmax_hz) is float
    assert config.to_json() == FrontEndConfig(num_mel_bins=80, fmax_hz=7600.0).to_json()


def test_save_pretrained_refuses_an_unwritable_place_cleanly(tmp_path: Path) -> None:
    from voicehub.core import OutputPathError

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(OutputPathError, match=r"is not a directory|cannot create directory"):
        FrontEndConfig().save_pretrained(blocker / "model")
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_enum_values_are_validated_on_load() -> None:
    with pytest.raises(ConfigError, match=r"expected one of \['hann', 'hamming'\]"):
        FrontEndConfig.from_dict({"window": "blackman"})


def test_save_and_from_pretrained_use_config_json(tmp_path: Path) -> None:
    config = EncoderConfig(num_layers=4, hidden_sizes=(1, 2, 3, 4))
    path = config.save_pretrained(tmp_path / "model")
    assert path == tmp_path / "model" / "config.json"
    assert EncoderConfig.from_pretrained(tmp_path / "model") == config
    assert EncoderConfig.from_pretrained(path) == config
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]


def test_from_pretrained_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read config file .*missing"):
        EncoderConfig.from_pretrained(tmp_path / "missing")
    bad = tmp_path / "config.json"
    bad.write_text('{"num_layers": NaN}')
    with pytest.raises(ConfigError, match=r"config\.json: .*NaN"):
        EncoderConfig.from_pretrained(bad)
    bad.write_text('{"num_layers": 1, "num_layers": 2}')
    with pytest.raises(ConfigError, match="duplicate JSON object key 'num_layers'"):
        EncoderConfig.from_pretrained(tmp_path)
