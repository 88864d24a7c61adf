"""voicehub.hyperion.np: serializable NumPy models in the Hyperion format and the speaker back-ends.

``HyperNPModel.auto_load(path)`` loads any maintained class in a fresh process: the class-name
registry resolves maintained names lazily (see ``voicehub.hyperion.np._registry``), and
third-party classes arrive through the ``voicehub.hyperion_np_models`` entry-point group or an
explicit ``extra_objs`` mapping.

The back-end classes are imported on first attribute access (PEP 562), so importing the base
class does not import SciPy or every back-end; ``from voicehub.hyperion.np import SPLDA`` works
as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.core.lazy import lazy_attributes, parse_reference
from voicehub.hyperion.np._registry import CATALOG, ENTRY_POINT_GROUP
from voicehub.hyperion.np.files import CONFIG_DATASET, PICKLE_SUFFIXES
from voicehub.hyperion.np.model import HyperNPModel

if TYPE_CHECKING:
    from voicehub.hyperion.np.calibration import BinaryLogisticRegression, GaussCalibration
    from voicehub.hyperion.np.classifiers import LinearGBE
    from voicehub.hyperion.np.plda import FRPLDA, SPLDA
    from voicehub.hyperion.np.score_norm import AdaptSNorm
    from voicehub.hyperion.np.transforms import LDA, PCA, CentWhiten, LNorm, NPTransform, TransformList

_LAZY = {
    name: parse_reference(reference)[0].removeprefix(f"{__name__}.")
    for name, reference in {**CATALOG, "NPTransform": f"{__name__}.transforms:NPTransform"}.items()
}
"""Class name -> submodule of this package (the catalog's references, which name each class by itself)."""

__getattr__ = lazy_attributes(__name__, _LAZY)


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
