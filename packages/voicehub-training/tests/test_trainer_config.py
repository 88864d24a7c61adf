"""TrainerConfig validation and the learning-rate schedules."""

from __future__ import annotations

import pytest

from voicehub.core.errors import ConfigError, UnknownConfigKeyError
from voicehub.training import TrainerConfig
from voicehub.training.trainer import learning_rate_factor


def test_schedules_warm_up_then_decay_to_zero() -> None:
    linear = learning_rate_factor(TrainerConfig(max_steps=10, scheduler="linear", warmup_steps=2))
    assert [round(linear(step), 4) for step in (0, 1, 2, 6, 10)] == [0.3333, 0.6667, 1.0, 0.5, 0.0]
    cosine = learning_rate_factor(TrainerConfig(max_steps=10, scheduler="cosine", warmup_steps=2))
    assert [round(cosine(step), 4) for step in (2, 6, 10)] == [1.0, 0.5, 0.0]
    assert learning_rate_factor(TrainerConfig(max_steps=10))(7) == 1.0


def test_trainer_config_is_closed_and_checks_ranges() -> None:
    with pytest.raises(UnknownConfigKeyError, match=r"unknown key\(s\) \['lr'\]"):
        TrainerConfig.from_dict({"max_steps": 1, "lr": 0.1})
    with pytest.raises(ConfigError, match=r"trainer\.batch_size: expected >= 1, got 0"):
        TrainerConfig(max_steps=1, batch_size=0)
    with pytest.raises(ConfigError, match=r"trainer\.max_grad_norm: expected > 0 or null"):
        TrainerConfig(max_steps=1, max_grad_norm=0.0)
    assert TrainerConfig.from_dict(TrainerConfig(max_steps=3, scheduler="cosine").to_dict()).scheduler == "cosine"
