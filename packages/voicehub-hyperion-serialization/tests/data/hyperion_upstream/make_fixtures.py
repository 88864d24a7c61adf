"""Write the upstream-format fixtures with the real upstream toolkit (PyPI hyperion-ml 0.3.2).

Run in the separate upstream environment, never in the workspace:

    /work/bench-envs/hyperion/bin/python make_fixtures.py

Every model is saved by upstream's own ``save`` and then re-loaded by upstream's own loader to
compute the expected outputs, so the expectations include upstream's float32 parameter storage.
"""

import json

import numpy as np
from hyperion.calibration.gauss_calibration import GaussCalibration
from hyperion.classifiers import BinaryLogisticRegression, LinearGBE
from hyperion.pdfs import FRPLDA, SPLDA
from hyperion.transforms import LDA, PCA, CentWhiten, LNorm, TransformList
from hyperion.utils import TrialKey, TrialNdx, TrialScores

rng = np.random.RandomState(7)
dim, num_classes, per_class = 8, 12, 6
labels = np.repeat(np.arange(num_classes), per_class)
centers = rng.randn(num_classes, dim) * 2.0
x = centers[labels] + rng.randn(labels.size, dim) + 0.5
probe = rng.randn(10, dim) + 0.5
expected = {"x": x, "labels": labels, "probe": probe}

cw = CentWhiten(name="cw")
cw.fit(x)
cw.save("./cent_whiten.h5")
expected["cent_whiten"] = CentWhiten.load("cent_whiten.h5").predict(probe)

ln = LNorm(name="lnorm")
ln.fit(x)
ln.save("./lnorm.h5")
expected["lnorm"] = LNorm.load("lnorm.h5").predict(probe)

pca = PCA(pca_dim=5, name="pca")
pca.fit(x)
pca.save("./pca.h5")
expected["pca"] = PCA.load("pca.h5").predict(probe)

lda = LDA(lda_dim=4, name="lda")
lda.fit(x, labels)
lda.save("./lda.h5")
expected["lda"] = LDA.load("lda.h5").predict(probe)

p2 = PCA(pca_dim=6, name="pca")
p2.fit(x)
l2 = LNorm(name="lnorm")
l2.fit(p2.predict(x))
tl = TransformList([p2, l2], name="tl")
tl.save("./transform_list.h5")
expected["transform_list"] = TransformList.load("transform_list.h5").predict(probe)

splda = SPLDA(y_dim=4, name="plda")
splda.fit(x, labels, epochs=5)
splda.save("./splda.h5")
expected["splda"] = SPLDA.load("splda.h5").llr_1vs1(probe[:4], probe[4:])

legacy = SPLDA(y_dim=3)  # name=None: parameters at the file root (old files)
legacy.fit(x, labels, epochs=3)
legacy.save("./splda_root.h5")
expected["splda_root"] = SPLDA.load("splda_root.h5").llr_1vs1(probe[:4], probe[4:])

fr = FRPLDA(name="frplda")
fr.fit(x, labels, epochs=3)
fr.save("./frplda.h5")
expected["frplda"] = FRPLDA.load("frplda.h5").llr_1vs1(probe[:4], probe[4:])

scores = np.concatenate([rng.randn(50) + 3.0, rng.randn(200)])
trial_labels = np.concatenate([np.ones(50, dtype=int), np.zeros(200, dtype=int)])
gc = GaussCalibration(name="cal")
gc.fit(scores, trial_labels)
gc.save("./gauss_calibration.h5")  # upstream cannot load it back (reads sigma2 from the config)
expected["gauss_calibration"] = gc.predict(scores[:10].astype(np.float32).astype(np.float64))
expected["gauss_scores"] = scores[:10]

gbe = LinearGBE(name="gbe")
gbe.fit(x, labels)
gbe.save("./linear_gbe.h5")
expected["linear_gbe"] = LinearGBE.load("linear_gbe.h5").predict(probe)

lr = BinaryLogisticRegression(name="lr", prior=0.2)
lr.fit(scores[:, None], trial_labels)
lr.save("./logistic_regression.h5")
expected["logistic_regression"] = BinaryLogisticRegression.load("logistic_regression.h5").predict(scores[:10, None])

models = np.array(["spkA", "spkB", "spkC"])
segs = np.array(["seg1", "seg2", "seg3", "seg4"])
tar = np.zeros((3, 4), dtype=bool)
tar[0, 0] = tar[1, 1] = tar[2, 3] = True
non = ~tar
non[2, 2] = False
TrialKey(models, segs, tar, non).save("./trial_key.h5")
TrialNdx(models, segs, tar | non).save("./trial_ndx.h5")
TrialScores(models, segs, rng.randn(3, 4), (tar | non)).save("./trial_scores.h5")
expected["trial_tar"] = tar
expected["trial_non"] = non
expected["trial_scores"] = TrialScores.load("trial_scores.h5").scores

np.savez("expected.npz", **expected)
