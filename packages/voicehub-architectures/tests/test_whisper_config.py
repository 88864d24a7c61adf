"""Whisper configs: every released size is expressible, the records are closed and validated."""

from __future__ import annotations

import pytest

from voicehub.architectures.whisper import OFFICIAL_SIZES, WhisperConfig, WhisperGenerationConfig
from voicehub.core.errors import ConfigError, UnknownConfigKeyError


def test_official_sizes_cover_every_release_with_their_vocabularies_and_mel_bins() -> None:
    assert set(OFFICIAL_SIZES) == {
        "tiny.en", "tiny", "base.en", "base", "small.en", "small", "medium.en", "medium",
        "large-v1", "large-v2", "large-v3", "large-v3-turbo",
    }  # fmt: skip
    english = {name for name, config in OFFICIAL_SIZES.items() if not config.is_multilingual}
    assert english == {"tiny.en", "base.en", "small.en", "medium.en"}
    assert {name for name, c in OFFICIAL_SIZES.items() if c.num_mel_bins == 128} == {"large-v3", "large-v3-turbo"}
    assert OFFICIAL_SIZES["large-v3"].vocab_size == 51866
    assert OFFICIAL_SIZES["large-v3-turbo"].text_layers == 4
    assert OFFICIAL_SIZES["large-v3-turbo"].audio_layers == 32
    assert all(c.time_precision_s == 0.02 for c in OFFICIAL_SIZES.values())


def test_whisper_config_round_trips_through_json() -> None:
    config = OFFICIAL_SIZES["large-v3"]
    assert WhisperConfig.from_json(config.to_json()) == config
    assert config.to_dict()["type"] == "whisper"


def test_whisper_config_from_dict_rejects_unknown_keys_listing_the_known_ones() -> None:
    with pytest.raises(UnknownConfigKeyError) as info:
        WhisperConfig.from_dict({"n_mels": 80})
    assert "num_mel_bins" in str(info.value)


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"audio_heads": 5}, "audio_heads"),  # 384 is not divisible by 5
        ({"text_width": 768}, "text_width"),  # cross-attention needs equal widths
        ({"audio_context": 1000}, "audio_context"),  # not 30 s of 10 ms frames halved
        ({"text_layers": 0}, "text_layers"),
        ({"vocab_size": -1}, "vocab_size"),
    ],
)
def test_whisper_config_raises_naming_the_field(changes: dict[str, int], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        WhisperConfig(**changes)
    assert info.value.key == key


def test_whisper_config_rejects_a_float_size() -> None:
    with pytest.raises(ConfigError):
        WhisperConfig.from_dict({"audio_width": 384.0})


def test_generation_config_checks_ids_and_heads_against_the_graph() -> None:
    config = OFFICIAL_SIZES["tiny.en"]
    WhisperGenerationConfig(suppress_tokens=(1, 2), alignment_heads=((3, 5),)).check_against(config)
    with pytest.raises(ConfigError) as info:
        WhisperGenerationConfig(alignment_heads=((4, 0),)).check_against(config)
    assert info.value.key == "alignment_heads"
    with pytest.raises(ConfigError):
        WhisperGenerationConfig(suppress_tokens=(51864,)).check_against(config)
    with pytest.raises(ConfigError):
        WhisperGenerationConfig(begin_suppress_tokens=(-1,))


def test_generation_config_defaults_to_the_last_half_of_the_decoder_for_alignment() -> None:
    heads = WhisperGenerationConfig().alignment_heads_for(OFFICIAL_SIZES["tiny.en"])
    assert heads == tuple((layer, head) for layer in (2, 3) for head in range(6))
    stored = WhisperGenerationConfig(alignment_heads=((1, 0),))
    assert stored.alignment_heads_for(OFFICIAL_SIZES["tiny.en"]) == ((1, 0),)
    assert WhisperGenerationConfig.from_json(stored.to_json()) == stored
