"""``score_embeddings`` accepts the arrays ``voicehub embed --output x.npy`` writes (or names the
accepted types), and ``set_backend`` checks the back-end's dimension against the encoder's at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from voicehub.cli import main
from voicehub.core import InferenceOptionError
from voicehub.models.sv_ge2e.wrapper import GE2ESpeakerVerifier

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))
SYNTHETIC = ROOT / "tests" / "data" / "synthetic"


@pytest.fixture(scope="module")
def verifier() -> GE2ESpeakerVerifier:
    return GE2ESpeakerVerifier.from_pretrained(device="cpu")


def test_score_embeddings_accepts_the_npy_matrix_voicehub_embed_writes(
    verifier: GE2ESpeakerVerifier, tmp_path: Path
) -> None:
    out = tmp_path / "emb.npy"
    files = [LIBRIVOX[1], LIBRIVOX[4], SYNTHETIC / "flite_rms_3.flac"]
    result = CliRunner().invoke(main, ["embed", "--output", str(out), *map(str, files)])
    assert result.exit_code == 0, result.output
    saved = np.load(out)
    outputs = [verifier.embed(file) for file in files]
    same = verifier.score_embeddings(outputs[0], outputs[1])
    different = verifier.score_embeddings(outputs[0], outputs[2])
    assert same.is_same_speaker and not different.is_same_speaker
    assert verifier.score_embeddings(saved[0], saved[1]).score == pytest.approx(same.score, abs=1e-6)
    assert verifier.score_embeddings(saved[:1], saved[2:3]).score == pytest.approx(different.score, abs=1e-6)
    enrolled = verifier.score_embeddings(saved[:2], saved[2])  # two enrolment rows, as a list would be
    assert enrolled.score == pytest.approx(verifier.score_embeddings(list(outputs[:2]), outputs[2]).score, abs=1e-6)


@pytest.mark.parametrize(
    ("enrollment", "test", "message"),
    [
        ({"embedding": [0.1]}, None, r"enrollment is a dict; expected a SpeakerOutput.*voicehub embed --output"),
        (np.zeros(256, dtype=np.int64), None, r"dtype int64 and shape \(256,\); expected"),
        (None, "rows", r"test must be one embedding"),
        (None, "short", r"embeddings of different sizes \[128, 256\]"),
    ],
)
def test_score_embeddings_names_what_it_accepts(
    verifier: GE2ESpeakerVerifier, enrollment: object, test: object, message: str
) -> None:
    embedding = verifier.embed(LIBRIVOX[1]).embedding
    tests = {None: embedding, "rows": np.stack([embedding, embedding]), "short": embedding[:128]}
    with pytest.raises(InferenceOptionError, match=message):
        verifier.score_embeddings(embedding if enrollment is None else enrollment, tests[test])  # type: ignore[arg-type]


def test_set_backend_refuses_a_backend_of_another_dimension_at_once(
    verifier: GE2ESpeakerVerifier, tmp_path: Path
) -> None:
    from voicehub.plda_backend import PLDABackend

    speakers = ("flite_slt", "flite_awb", "espeak_us_m1", "espeak_gb_f3")
    files = [SYNTHETIC / f"{s}_{n}.flac" for s in speakers for n in (1, 2, 3)]
    embeddings = np.stack([o.embedding for o in verifier.embed(files)])
    labels = [s for s in speakers for _ in range(3)]
    narrow = PLDABackend.fit(embeddings[:, :128], labels, lda_dim=3, calibrate=False)
    with pytest.raises(InferenceOptionError, match="fitted on 128-dimensional embeddings, the encoder makes 256"):
        verifier.set_backend(narrow.save(tmp_path / "narrow"))
    assert verifier.backend is None
    verifier.set_backend(PLDABackend.fit(embeddings, labels, lda_dim=3, calibrate=False))
    assert verifier.backend is not None
    verifier.set_backend(None)
