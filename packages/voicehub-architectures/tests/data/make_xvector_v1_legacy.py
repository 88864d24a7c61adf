"""Writes ``xvector_v1_legacy.pth``: an x-vector checkpoint in the schema-version-1 layout.

Version 1 (before the rename) differs from the current format in three ways, all of which the
loader must migrate: the config has no ``type``/``schema_version`` tags and calls the
AAM-softmax scale ``s`` (now ``cos_scale``); the state dict stores the front end's Hann
``frontend.window`` and mel ``frontend.filters`` (now computed, non-persistent buffers); and the
keys carry the ``module.`` prefix of a DistributedDataParallel-wrapped model. The file also
stores ``reference_embedding``: the x-vector of ``tests/data/librivox/...-0880.wav`` computed by
the model that wrote it. Run from the repository root:
``uv run python packages/voicehub-architectures/tests/data/make_xvector_v1_legacy.py``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from voicehub.architectures.xvector import XVector, XVectorConfig
from voicehub.components import MelSpectrogramConfig
from voicehub.core import load_audio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]


def main() -> None:
    torch.manual_seed(20240601)
    frontend = MelSpectrogramConfig(
        n_fft=512, win_length=400, num_mel_bins=24, f_min=20.0, f_max=7600.0, mel_scale="htk", mel_norm=None, log=True
    )
    config = XVectorConfig(
        frontend=frontend, channels=16, dilations=(2, 3), res2net_scale=4, se_bottleneck=8,
        aggregation_channels=32, attention_channels=8, embedding_dim=8, num_classes=3, cos_scale=20.0,
    )  # fmt: skip
    model = XVector(config)
    with torch.no_grad():  # move BatchNorm statistics away from their defaults so they are checked too
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm1d):
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
                module.num_batches_tracked.fill_(11)
    model.eval()
    wav = load_audio(ROOT / "tests/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav").samples
    with torch.no_grad():
        reference = model(torch.from_numpy(wav)[None])[0]
    cfg = model.get_config()
    for tag in ("class_name", "type", "schema_version"):
        cfg.pop(tag)
    cfg["frontend"].pop("type")
    cfg["frontend"].pop("schema_version")
    cfg["s"] = cfg.pop("cos_scale")
    state = {f"module.{k}": v for k, v in model.state_dict().items()}
    state["module.frontend.window"] = model.frontend.window.clone()
    state["module.frontend.filters"] = model.frontend.filters.clone()
    torch.save(
        {"model_cfg": {"class_name": "XVector", **cfg}, "model_state_dict": state, "reference_embedding": reference},
        HERE / "xvector_v1_legacy.pth",
    )


if __name__ == "__main__":
    main()
