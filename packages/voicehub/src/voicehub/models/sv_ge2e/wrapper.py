"""The ``sv_ge2e`` wrapper: the GE2E speaker encoder behind :class:`~voicehub.speaker_verification.PreTrainedSVModel`.

Weights: by default resemblyzer 0.1.4's ``pretrained.pt`` from the installed ``voicehub-ge2e-weights``
wheel; otherwise a resemblyzer-format ``.pt`` file, a Hyperion ``HyperTorchModel`` checkpoint
of :class:`~voicehub.architectures.ge2e.GE2ESpeakerEncoder` (``.pth`` file or ``config.json`` +
``model.safetensors`` directory), or a directory written by :meth:`GE2ESpeakerVerifier.save_pretrained`
(``encoder/`` in the Hyperion directory format and, when a back-end is attached, ``backend/``).
``SVGE2EConfig.preprocessing`` (silence trimming, volume target, partial rate and coverage)
replaces the preprocessing stored with the encoder; its architecture comes from the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from voicehub.architectures.errors import CheckpointMismatchError, NoSpeechFoundError
from voicehub.architectures.ge2e import GE2EConfig, GE2ESpeakerEncoder, load_resemblyzer_checkpoint, preprocess
from voicehub.architectures.ge2e.checkpoint import WEIGHTS_DISTRIBUTION, WEIGHTS_INSTALL_HINT
from voicehub.architectures.ge2e.long_form import FloatArray, embed_long
from voicehub.core.audio import AudioLike, Waveform
from voicehub.core.audio_stream import iter_audio_blocks
from voicehub.core.device import Device
from voicehub.core.errors import AudioDecodeError, AudioError, CheckpointError
from voicehub.core.files import CONFIG_FILE_NAME, WEIGHTS_FILE_NAME
from voicehub.core.outputs import SpeakerOutput
from voicehub.hyperion.torch import HyperTorchModel
from voicehub.hyperion.torch.checkpoint import sniff_file_type
from voicehub.models.sv_ge2e.config import MIN_SPEECH_S, SVGE2EConfig, SVGE2EOptions
from voicehub.speaker_verification import BACKEND_DIR, ENCODER_DIR, PreTrainedSVModel, SpeakerRuntime


class GE2ESpeakerVerifier(PreTrainedSVModel[SVGE2EConfig, SVGE2EOptions, GE2ESpeakerEncoder]):
    """GE2E speaker embeddings (256-dim, unit norm) with cosine or PLDA scoring.

    ``embed(audio)`` returns a :class:`~voicehub.core.SpeakerOutput` per input;
    ``verify(enrollment, test)`` a :class:`~voicehub.core.VerificationOutput` whose ``scoring``
    is ``"cosine"``, ``"plda"`` or ``"plda+calibration"``; ``verify([clip1, clip2, ...], test)``
    enrols a speaker with several clips. Inputs are paths (wav, flac, ogg, mp3), arrays or
    tensors with ``sample_rate=``, ``(array, sample_rate)`` tuples, or lists.
    """

    config_class = SVGE2EConfig
    options_class = SVGE2EOptions

    # ------------------------------------------------------------------ loading
    def _load_encoder(
        self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool
    ) -> GE2ESpeakerEncoder:
        if checkpoint is None:
            raise CheckpointError(
                f"sv_ge2e needs weights: install {WEIGHTS_DISTRIBUTION} for the default ({WEIGHTS_INSTALL_HINT}), "
                f"or pass a source (resemblyzer .pt, Hyperion .pth or directory, or a saved sv_ge2e directory)"
            )
        model = self._read_encoder(checkpoint)
        model.config = model.config.with_preprocessing(self.config.preprocessing)
        return model

    @staticmethod
    def _read_encoder(checkpoint: Path) -> GE2ESpeakerEncoder:
        if checkpoint.is_dir():
            encoder_dir = checkpoint / ENCODER_DIR
            target = encoder_dir if encoder_dir.is_dir() else checkpoint
            if not (target / CONFIG_FILE_NAME).is_file():
                raise CheckpointError(
                    f"{checkpoint}: no GE2E checkpoint found: expected {ENCODER_DIR}/ (a saved sv_ge2e model) or "
                    f"{CONFIG_FILE_NAME} + {WEIGHTS_FILE_NAME} (a Hyperion directory)",
                    path=checkpoint,
                )
            return GE2ESpeakerEncoder.load(target)
        if sniff_file_type(checkpoint) == "hdf5":
            raise CheckpointError(
                f"{checkpoint}: an HDF5 file (a Hyperion NumPy model, e.g. a PLDA back-end's plda.h5), not GE2E "
                f"encoder weights; attach a back-end directory with set_backend(directory) (command line: "
                f"--backend DIRECTORY); encoder weights are a resemblyzer .pt, a Hyperion .pth, or a directory",
                path=checkpoint,
            )
        try:
            return load_resemblyzer_checkpoint(checkpoint)
        except CheckpointMismatchError:
            raise  # a resemblyzer file whose tensors do not fit: its own error, not the Hyperion reader's
        except CheckpointError:
            pass  # not a resemblyzer file (no 'model_state'): read it as a Hyperion checkpoint
        loaded = HyperTorchModel.auto_load(checkpoint)
        if not isinstance(loaded, GE2ESpeakerEncoder):
            raise CheckpointError(
                f"{checkpoint}: holds a {type(loaded).__name__}, not a GE2ESpeakerEncoder", path=checkpoint
            )
        return loaded

    def _save_encoder(self, encoder: GE2ESpeakerEncoder, directory: Path) -> None:
        """Write the encoder in the Hyperion directory format under ``encoder/``."""
        if not isinstance(encoder, GE2ESpeakerEncoder):
            raise CheckpointError(f"sv_ge2e: cannot save a {type(encoder).__name__} encoder")
        encoder.save(directory / ENCODER_DIR)

    # ------------------------------------------------------------------ inputs
    def prepare_audio(
        self, audio: AudioLike | list[AudioLike], *, sample_rate: int | None = None
    ) -> tuple[list[Waveform], bool]:
        """Decode and resample like the base class, with messages that state the accepted forms.

        Raises:
            AudioError: for ``None``, bytes, a tuple that is not ``(array, sample_rate)`` (a tuple of
                paths is not a batch: use a list), an empty list, or unusable audio.
        """
        items = audio if isinstance(audio, list) else [audio]
        if isinstance(audio, list) and not audio:
            raise AudioError(f"{type(self).__name__}: got an empty list; {_ACCEPTED_INPUTS}")
        for item in items:
            _check_input_form(item)
        return super().prepare_audio(audio, sample_rate=sample_rate)

    # ------------------------------------------------------------------ inference
    def _embed(
        self, runtime: SpeakerRuntime[GE2ESpeakerEncoder], waveforms: Sequence[Waveform], options: SVGE2EOptions
    ) -> Sequence[SpeakerOutput]:
        encoder = runtime.module
        device = encoder.device
        config = self._effective_config(encoder, options)
        kept = []
        for index, waveform in enumerate(waveforms):
            try:
                kept.append(preprocess(waveform.samples, config))
            except NoSpeechFoundError as err:  # only silence trimming can be switched off; digital silence stays
                name = waveform.source or f"input {index}"
                raise NoSpeechFoundError(
                    f"{name}: {err} (Python: embed(..., trim_silence=False); command line: --no-trim-silence)",
                    source=waveform.source,
                ) from err
            except AudioError as err:
                name = waveform.source or f"input {index}"
                raise AudioError(f"{name}: {err}", source=waveform.source) from err
        tensors = [torch.from_numpy(k).to(device) for k in kept]
        embeddings = encoder.embed_utterances(tensors).float().cpu().numpy()
        return [
            self._output(
                embedding,
                sample_rate=w.sample_rate,
                duration_s=w.duration_s,
                source=w.source,
                kept_num_samples=len(k),
                num_partials=len(encoder.partial_starts(len(k))[0]),
                config=config,
            )
            for embedding, w, k in zip(embeddings, waveforms, kept, strict=True)
        ]

    embeds_files_in_blocks = True

    def _embed_file(
        self,
        runtime: SpeakerRuntime[GE2ESpeakerEncoder],
        path: str,
        sample_rate: int,
        block_samples: int,
        options: SVGE2EOptions,
    ) -> SpeakerOutput:
        encoder = runtime.module
        config = self._effective_config(encoder, options)

        def blocks() -> Iterator[FloatArray]:
            return iter_audio_blocks(path, block_samples=block_samples, target_sample_rate=sample_rate)

        try:
            result = embed_long(encoder, blocks, config, block_samples=block_samples)
        except AudioError as err:
            if isinstance(err, AudioDecodeError):
                raise
            raise AudioError(
                f"{path}: {err} (Python: embed(..., trim_silence=False); command line: --no-trim-silence)",
                source=path,
            ) from err
        return self._output(
            result.embedding.float().cpu().numpy(),
            sample_rate=sample_rate,
            duration_s=result.num_samples / sample_rate,
            source=path,
            kept_num_samples=result.kept_num_samples,
            num_partials=result.num_partials,
            config=config,
        )

    @staticmethod
    def _effective_config(encoder: GE2ESpeakerEncoder, options: SVGE2EOptions) -> GE2EConfig:
        config = encoder.config
        if options.trim_silence is not None and options.trim_silence != config.trim_silence:
            config = config.replace(trim_silence=options.trim_silence)
        return config

    def _output(
        self,
        embedding: Any,
        *,
        sample_rate: int,
        duration_s: float,
        source: str,
        kept_num_samples: int,
        num_partials: int,
        config: GE2EConfig,
    ) -> SpeakerOutput:
        speech_s = kept_num_samples / sample_rate
        metadata: dict[str, Any] = {
            "model_type": self.model_type,
            "sample_rate": sample_rate,
            "speech_duration_s": speech_s,
            "num_partials": num_partials,
        }
        if speech_s < MIN_SPEECH_S:
            metadata["warning"] = (
                f"only {speech_s:.2f} s of speech{' after silence trimming' if config.trim_silence else ''} "
                f"(minimum for a reliable embedding: {MIN_SPEECH_S} s, one GE2E partial); scores of this clip "
                "are less reliable: use a longer clip"
            )
        return SpeakerOutput(
            embedding=np.ascontiguousarray(embedding, dtype=np.float32),
            duration_s=duration_s,
            source=source,
            metadata=metadata,
        )


_ACCEPTED_INPUTS = (
    "expected a file path (str or pathlib.Path: wav, flac, ogg, mp3), a NumPy array or torch tensor with "
    "sample_rate=, an (array, sample_rate) tuple, a voicehub.core.Waveform, or a list of these for a batch"
)


def _check_input_form(item: object) -> None:
    """Refuse input types the audio loader would only call "array", with the accepted forms.

    Raises:
        AudioError: for ``None``, bytes, a tuple that is not ``(array, sample_rate)``, or a nested list.
    """
    if item is None:
        raise AudioError(f"got None as audio input; {_ACCEPTED_INPUTS}")
    if isinstance(item, (bytes, bytearray, memoryview)):
        raise AudioError(
            f"got {type(item).__name__} ({len(item)} bytes) as audio input; encoded or raw bytes are not decoded "
            f"in memory: write them to a file and pass its path, or pass np.frombuffer(data, '<i2') with "
            f"sample_rate=; {_ACCEPTED_INPUTS}"
        )
    if isinstance(item, tuple) and not (
        len(item) == 2 and isinstance(item[1], int) and not isinstance(item[1], bool) and not isinstance(item[0], str)
    ):
        raise AudioError(
            f"got a tuple of {len(item)} item(s) ({', '.join(type(v).__name__ for v in item[:3])}); a tuple is "
            "read only as (array, sample_rate), it is not a batch: pass several inputs as a list, e.g. "
            "embed([path1, path2])"
        )
    if isinstance(item, list):
        raise AudioError(f"got a list inside a list; a batch is one flat list of inputs; {_ACCEPTED_INPUTS}")


__all__ = ["BACKEND_DIR", "ENCODER_DIR", "GE2ESpeakerVerifier"]
