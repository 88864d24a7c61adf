"""The core of recipes/xvector_plda.py in a tiny configuration: train, fit the PLDA, score held-out speakers."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from voicehub.training import TrainerConfig

RECIPE = Path(__file__).resolve().parents[3] / "recipes" / "xvector_plda.py"


def _recipe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("xvector_plda_recipe", RECIPE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_recipe_core_trains_fits_plda_and_scores_held_out_speakers(tmp_path: Path) -> None:
    recipe = _recipe()
    torch.manual_seed(0)
    utterances = recipe.synthetic_utterances(voices=7)  # 7 espeak-ng / flite voices x 4 sentences
    records = recipe.crop_records(utterances, tmp_path, crop_s=1.0, max_crops=4)
    train_records, test_records = recipe.split_speakers(records, test_share=0.3, held_out=())
    train_speakers = {r.speaker for r in train_records}
    test_speakers = {r.speaker for r in test_records}
    assert len(train_speakers) >= 4 and len(test_speakers) >= 2 and not train_speakers & test_speakers

    adapter = recipe.build_adapter(train_records)
    before_train, before_test = recipe.embed(adapter, train_records), recipe.embed(adapter, test_records)
    before, _ = recipe.evaluate(before_train, train_records, before_test, test_records)

    first_crop = {}
    for record in train_records:
        first_crop.setdefault(record.speaker, record)
    batch = list(first_crop.values())[:4]  # one crop of 4 speakers, repeated: the loss must fall
    # AdamW moves every one of the 6.2 M weights by about the learning rate on its first step; at
    # initialisation (gradient norm about 200) 1e-4 already overshoots, 1e-5 does not.
    config = TrainerConfig(max_steps=3, batch_size=4, learning_rate=1e-5, checkpoint_at_end=False)
    losses = recipe.train(adapter, batch, config, tmp_path / "run")
    assert len(losses) == 3 and all(math.isfinite(loss) for loss in losses)
    assert losses[2] < losses[1] < losses[0] and losses[2] < 0.5 * losses[0], losses  # measured 6.24, 1.17, 0.07

    after_train, after_test = recipe.embed(adapter, train_records), recipe.embed(adapter, test_records)
    after, backend = recipe.evaluate(after_train, train_records, after_test, test_records)
    backend.check_dim(192)  # fitted on the x-vector size
    assert backend.transform.transforms[0].in_dim == 192
    scores = backend.score(after_test, after_test)
    assert scores.shape == (len(test_records), len(test_records)) and np.isfinite(scores).all()
    assert not np.allclose(after_test, before_test)
    target, nontarget = recipe.trial_scores(scores, test_records)
    assert len(target) > 0 and len(nontarget) > 0
    for results in (before, after):
        for scoring in ("cosine", "plda"):
            assert 0.0 <= results[scoring]["eer"] <= 0.5 and math.isfinite(results[scoring]["min_dcf"])
    units = [x / np.linalg.norm(x, axis=1, keepdims=True) for x in (before_test, after_test)]
    cosine_before, cosine_after = (recipe.trial_scores(u @ u.T, test_records)[1] for u in units)
    assert not np.allclose(cosine_before, cosine_after)
    eers = [(results["cosine"]["eer"], results["plda"]["eer"]) for results in (before, after)]
    assert eers[0] != eers[1], eers  # measured (0.25, 0.107) -> (0.30, 0.083) on 12 target / 16 non-target trials
