"""voicehub.core: the foundation every other VoiceHub layer builds on.

Imports nothing heavy: no torch, no h5py (a fresh-process test holds this).
"""

from __future__ import annotations

from voicehub.core import strict_json
from voicehub.core.audio import (
    AudioLike,
    Waveform,
    decode_audio_file,
    load_audio,
    load_audio_batch,
    pcm_to_float,
    resample,
    save_audio,
)
from voicehub.core.config import CONFIG_FILE_NAME, Config, Migration
from voicehub.core.device import normalize_device, normalize_dtype, resolve_device, resolve_dtype
from voicehub.core.errors import (
    AudioDecodeError,
    AudioError,
    CheckpointError,
    ConfigError,
    DeviceError,
    InferenceOptionError,
    LifecycleError,
    OptionalDependencyError,
    OutputPathError,
    OutputValidationError,
    RegistryError,
    SampleRateError,
    StrictJSONError,
    TaskMismatchError,
    UnknownConfigKeyError,
    UnknownModelError,
    VoiceHubError,
)
from voicehub.core.files import (
    atomic_write,
    check_output_directory,
    check_output_file,
    write_bytes_atomic,
    write_text_atomic,
)
from voicehub.core.lazy import import_optional, parse_reference, resolve_reference
from voicehub.core.outputs import (
    ASROutput,
    ASRSegment,
    ASRWord,
    SpeakerOutput,
    SpeechSegment,
    TTSOutput,
    VADOutput,
    VerificationOutput,
    check_output,
    check_outputs,
)
from voicehub.core.tasks import RuntimeState, SpeechTask
from voicehub.core.version import distribution_version

__version__ = distribution_version("voicehub-core")

__all__ = [
    "CONFIG_FILE_NAME",
    "ASROutput",
    "ASRSegment",
    "ASRWord",
    "AudioDecodeError",
    "AudioError",
    "AudioLike",
    "CheckpointError",
    "Config",
    "ConfigError",
    "DeviceError",
    "InferenceOptionError",
    "LifecycleError",
    "Migration",
    "OptionalDependencyError",
    "OutputPathError",
    "OutputValidationError",
    "RegistryError",
    "RuntimeState",
    "SampleRateError",
    "SpeakerOutput",
    "SpeechSegment",
    "SpeechTask",
    "StrictJSONError",
    "TTSOutput",
    "TaskMismatchError",
    "UnknownConfigKeyError",
    "UnknownModelError",
    "VADOutput",
    "VerificationOutput",
    "VoiceHubError",
    "Waveform",
    "atomic_write",
    "check_output",
    "check_output_directory",
    "check_output_file",
    "check_outputs",
    "decode_audio_file",
    "import_optional",
    "load_audio",
    "load_audio_batch",
    "normalize_device",
    "normalize_dtype",
    "parse_reference",
    "pcm_to_float",
    "resample",
    "resolve_device",
    "resolve_dtype",
    "resolve_reference",
    "save_audio",
    "strict_json",
    "write_bytes_atomic",
    "write_text_atomic",
]
