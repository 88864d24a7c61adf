"""voicehub.core: the foundation every other VoiceHub layer builds on.

Imports nothing heavy: no torch, no h5py (a fresh-process test holds this).
"""

from __future__ import annotations

from voicehub.core import strict_json
from voicehub.core.audio import (
    AudioLike,
    Waveform,
    check_sample_rate,
    decode_audio_file,
    is_raw_pcm,
    load_audio,
    load_audio_batch,
    load_raw_pcm,
    pcm_to_float,
    resample,
    save_audio,
)
from voicehub.core.checkpoint import check_tensor_values, read_safetensors
from voicehub.core.config import Config, Migration
from voicehub.core.device import Device, DType, normalize_device, normalize_dtype, resolve_device, resolve_dtype
from voicehub.core.errors import (
    ArgumentTypeError,
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
    CONFIG_FILE_NAME,
    WEIGHTS_FILE_NAME,
    atomic_write,
    check_output_directory,
    check_output_file,
    write_bytes_atomic,
    write_directory,
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
from voicehub.core.runtime import RuntimeBundle, RuntimeHost, RuntimeState
from voicehub.core.tasks import SpeechTask
from voicehub.core.version import distribution_version

__version__ = distribution_version("voicehub-core")

__all__ = [
    "CONFIG_FILE_NAME",
    "WEIGHTS_FILE_NAME",
    "ASROutput",
    "ASRSegment",
    "ASRWord",
    "ArgumentTypeError",
    "AudioDecodeError",
    "AudioError",
    "AudioLike",
    "CheckpointError",
    "Config",
    "ConfigError",
    "DType",
    "Device",
    "DeviceError",
    "InferenceOptionError",
    "LifecycleError",
    "Migration",
    "OptionalDependencyError",
    "OutputPathError",
    "OutputValidationError",
    "RegistryError",
    "RuntimeBundle",
    "RuntimeHost",
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
    "check_sample_rate",
    "check_tensor_values",
    "decode_audio_file",
    "import_optional",
    "is_raw_pcm",
    "load_audio",
    "load_audio_batch",
    "load_raw_pcm",
    "normalize_device",
    "normalize_dtype",
    "parse_reference",
    "pcm_to_float",
    "read_safetensors",
    "resample",
    "resolve_device",
    "resolve_dtype",
    "resolve_reference",
    "save_audio",
    "strict_json",
    "write_bytes_atomic",
    "write_directory",
    "write_text_atomic",
]
