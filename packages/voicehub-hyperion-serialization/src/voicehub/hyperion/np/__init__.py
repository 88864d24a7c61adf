"""voicehub.hyperion.np: serializable NumPy models in the Hyperion format and the speaker back-ends.

``HyperNPModel.auto_load(path)`` loads any maintained class in a fresh process: the class-name
registry resolves maintained names lazily (see ``voicehub.hyperion.np._registry``), and
third-party classes arrive through the ``voicehub.hyperion_np_models`` entry-point group or an
explicit ``extra_objs`` mapping.
"""

from __future__ import annotations

from voicehub.hyperion.np._registry import CATALOG, ENTRY_POINT_GROUP
from voicehub.hyperion.np.calibration import BinaryLogisticRegression, GaussCalibration
from voicehub.hyperion.np.classifiers import LinearGBE
from voicehub.hyperion.np.model import CONFIG_DATASET, PICKLE_SUFFIXES, HyperNPModel
from voicehub.hyperion.np.plda import FRPLDA, SPLDA
from voicehub.hyperion.np.score_norm import AdaptSNorm
from voicehub.hyperion.np.transforms import LDA, PCA, CentWhiten, LNorm, NPTransform, TransformList

__all__ = [
    "CATALOG",
    "CONFIG_DATASET",
    "ENTRY_POINT_GROUP",
    "FRPLDA",
    "LDA",
    "PCA",
    "PICKLE_SUFFIXES",
    "SPLDA",
    "AdaptSNorm",
    "BinaryLogisticRegression",
    "CentWhiten",
    "GaussCalibration",
    "HyperNPModel",
    "LNorm",
    "LinearGBE",
    "NPTransform",
    "TransformList",
]
