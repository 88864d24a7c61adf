"""``voicehub embed`` and ``voicehub verify`` on real speech (click's runner, the real default model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from voicehub.cli import main
from voicehub.core import strict_json

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))
SYNTHETIC = ROOT / "tests" / "data" / "synthetic" / "flite_rms_3.flac"


def test_verify_prints_decision_score_and_threshold() -> None:
    runner = CliRunner()
    same = runner.invoke(main, ["verify", str(LIBRIVOX[1]), str(LIBRIVOX[4])])
    assert same.exit_code == 0, same.output
    assert same.output.startswith("same speaker: cosine score 0.") and "threshold 0.73" in same.output
    strict = runner.invoke(main, ["verify", "--threshold", "0.99", str(LIBRIVOX[1]), str(LIBRIVOX[4])])
    assert strict.output.startswith("different speakers: cosine score") and "< threshold 0.99" in strict.output
    different = runner.invoke(main, ["verify", "--json", str(LIBRIVOX[1]), str(SYNTHETIC)])
    assert different.exit_code == 0, different.output
    record = strict_json.loads(different.output)
    assert record["is_same_speaker"] is False and record["scoring"] == "cosine" and record["score"] < 0.73


def test_embed_writes_npy_matching_json_and_reports_bad_files(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "emb.npy"
    result = runner.invoke(main, ["embed", "--json", "--output", str(out), str(LIBRIVOX[1]), str(SYNTHETIC)])
    assert result.exit_code == 0, result.output
    records = strict_json.loads(result.output)
    saved = np.load(out)
    assert saved.shape == (2, 256) and saved.dtype == np.float32
    np.testing.assert_allclose(saved[1], records[1]["embedding"], rtol=0, atol=0)
    assert abs(float(saved[0] @ saved[1])) < 0.75
    missing = runner.invoke(main, ["embed", str(tmp_path / "nope.wav")])
    assert missing.exit_code == 1 and "nope.wav: no such audio file" in missing.output


def test_verify_refuses_a_bad_threshold_before_decoding() -> None:
    result = CliRunner().invoke(main, ["verify", "--threshold", "3", str(LIBRIVOX[0]), "missing.wav"])
    assert result.exit_code == 2 and "--threshold 3.0" in result.output and "missing.wav" not in result.output
    assert "embed()" not in result.output  # a usage error names the flag, not a Python method


def test_verify_with_a_plda_backend_directory_scores_llrs(tmp_path: Path) -> None:
    from voicehub.models.sv_ge2e.wrapper import GE2ESpeakerVerifier
    from voicehub.plda_backend import PLDABackend

    verifier = GE2ESpeakerVerifier.from_pretrained(device="cpu")
    speakers = ("flite_slt", "flite_awb", "espeak_us_m1", "espeak_gb_f3")
    files = [SYNTHETIC.parent / f"{s}_{n}.flac" for s in speakers for n in (1, 2, 3)]
    embeddings = np.stack([o.embedding for o in verifier.embed([*files, *LIBRIVOX[:3]])])
    labels = [s for s in speakers for _ in range(3)] + ["librivox"] * 3
    backend = PLDABackend.fit(embeddings, labels, lda_dim=3)
    directory = backend.save(tmp_path / "plda")
    result = CliRunner().invoke(
        main, ["verify", "--json", "--backend", str(directory), str(LIBRIVOX[3]), str(SYNTHETIC)]
    )
    assert result.exit_code == 0, result.output
    record = strict_json.loads(result.output)
    a, b = verifier.embed(LIBRIVOX[3]), verifier.embed(SYNTHETIC)  # the CLI embeds file by file
    expected = float(backend.score(a.embedding, b.embedding)[0, 0])
    assert record["scoring"] == "plda+calibration" and record["threshold"] == 0.0
    assert abs(record["score"] - expected) < 1e-9 and record["is_same_speaker"] is (expected >= 0.0)


def test_embed_refuses_an_unwritable_output_before_computing_anything(tmp_path: Path) -> None:
    runner = CliRunner()
    for destination, message in (
        ("/proc/emb.npy", "--output file /proc/emb.npy: cannot create files in /proc"),
        (f"{LIBRIVOX[1]}/emb.npy", "is not a directory, so nothing can be created under it"),
    ):
        result = runner.invoke(main, ["embed", "--output", destination, str(LIBRIVOX[1])])
        assert result.exit_code == 1 and message in result.output, result.output
        assert "embedding" not in result.output and "Traceback" not in result.output
    out = tmp_path / "new" / "emb.npy"
    result = runner.invoke(main, ["embed", "--output", str(out), str(LIBRIVOX[1])])
    assert result.exit_code == 0, result.output
    assert np.load(out).shape == (1, 256) and [p.name for p in out.parent.iterdir()] == ["emb.npy"]


def test_models_lists_sv_xvector_without_weights_and_embed_explains_how_to_get_them() -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["models", "--task", "sv"])
    assert listing.exit_code == 0, listing.output
    rows = [line.split() for line in listing.output.splitlines()]
    assert ["sv_xvector", "sv", "none", "xvector,", "ecapa"] in rows
    result = runner.invoke(main, ["embed", "--model", "sv_xvector", str(LIBRIVOX[1])])
    assert result.exit_code == 1
    assert result.output.startswith("Error: sv_xvector has no pretrained weights")
    assert "--source PATH" in result.output and "load_for_training()" in result.output
    assert result.output.count("Error:") == 1  # once, before any file


def test_embed_reads_headerless_pcm_only_with_a_sample_rate() -> None:
    raw = ROOT / "tests" / "data" / "goforward.raw"  # s16le 16 kHz mono
    runner = CliRunner()
    refused = runner.invoke(main, ["verify", str(raw), str(LIBRIVOX[1])])
    assert refused.exit_code == 2 and "headerless raw PCM" in refused.output and "--sample-rate HZ" in refused.output
    result = runner.invoke(main, ["embed", "--json", "--sample-rate", "16000", str(raw)])
    assert result.exit_code == 0, result.output
    (record,) = strict_json.loads(result.output)
    assert record["source"] == str(raw) and record["embedding_dim"] == 256
    assert abs(record["duration_s"] - 2.79) < 0.01


def _short_clip(tmp_path: Path, duration_s: float) -> Path:
    import soundfile as sf

    from voicehub.core import load_audio

    path = tmp_path / f"short_{duration_s}.wav"
    sf.write(path, load_audio(LIBRIVOX[1]).samples[8000 : 8000 + round(duration_s * 16000)], 16000)
    return path


def test_embed_reports_each_too_short_file_and_embeds_the_rest(tmp_path: Path) -> None:
    short, tenth = _short_clip(tmp_path, 0.02), _short_clip(tmp_path, 0.1)
    result = CliRunner().invoke(main, ["embed", str(short), str(LIBRIVOX[1]), str(tenth)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)  # a reported failure, no traceback
    assert f"{LIBRIVOX[1]}: 256-dim embedding" in result.output
    for path, seconds in ((short, "0.020"), (tenth, "0.100")):
        assert f"Error: {path}: GE2E: the WebRTC VAD found no speech in {seconds} s" in result.output
    assert "--no-trim-silence" in result.output and "Traceback" not in result.output
    untrimmed = CliRunner().invoke(main, ["embed", "--no-trim-silence", str(short)])
    assert untrimmed.exit_code == 0, untrimmed.output
    assert "Warning:" in untrimmed.output and "0.02 s of speech" in untrimmed.output


def test_verify_enrols_several_clips_positionally_or_with_enroll(tmp_path: Path) -> None:
    runner = CliRunner()
    files = [str(LIBRIVOX[1]), str(LIBRIVOX[2]), str(LIBRIVOX[3]), str(LIBRIVOX[4])]
    positional = runner.invoke(main, ["verify", "--json", *files])
    assert positional.exit_code == 0, positional.output
    record = strict_json.loads(positional.output)
    assert record["enrollment"] == files[:3] and record["is_same_speaker"] is True and record["score"] > 0.8
    flagged = runner.invoke(
        main, ["verify", "--json", "--enroll", files[0], "--enroll", files[1], "--enroll", files[2], files[3]]
    )
    assert flagged.exit_code == 0 and strict_json.loads(flagged.output)["score"] == record["score"]
    bad = runner.invoke(
        main, ["verify", files[0], str(_short_clip(tmp_path, 0.02)), str(tmp_path / "nope.wav"), files[3]]
    )
    assert bad.exit_code == 1 and "short_0.02.wav: GE2E" in bad.output and "nope.wav: no such audio file" in bad.output
    assert "2 of 4 file(s) failed; no decision made" in bad.output and "Traceback" not in bad.output


def test_verify_refuses_thresholds_that_would_be_ignored(tmp_path: Path) -> None:
    runner = CliRunner()
    pair = [str(LIBRIVOX[1]), str(LIBRIVOX[4])]
    with_backend = runner.invoke(main, ["verify", "--threshold", "0.5", "--backend", str(tmp_path), *pair])
    assert with_backend.exit_code == 2 and "use --backend-threshold LLR, or add --scoring cosine" in with_backend.output
    without = runner.invoke(main, ["verify", "--backend-threshold", "1", *pair])
    assert without.exit_code == 2 and "--backend-threshold applies to PLDA back-end scores" in without.output
    scoring = runner.invoke(main, ["verify", "--scoring", "backend", *pair])
    assert (
        scoring.exit_code == 2 and "add --backend DIRECTORY" in scoring.output and "set_backend" not in scoring.output
    )


def test_help_names_the_registered_default_model_and_no_hard_coded_threshold() -> None:
    from voicehub.auto import get_default_model_spec
    from voicehub.models.sv_ge2e.config import DEFAULT_COSINE_THRESHOLD

    default = get_default_model_spec("sv").model_type
    runner = CliRunner()
    for command in ("embed", "verify"):
        result = runner.invoke(main, [command, "--help"], terminal_width=400)
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())
        assert f"(default: {default}); see `voicehub models --task sv`" in text
        assert f"read as --model (default: {default})." in text
    verify_help = " ".join(runner.invoke(main, ["verify", "--help"], terminal_width=400).output.split())
    # the cosine threshold belongs to the model's options (sv_ge2e: DEFAULT_COSINE_THRESHOLD), not to the command
    assert "default: the model's own threshold option" in verify_help
    assert str(DEFAULT_COSINE_THRESHOLD) not in verify_help
