"""VoiceHub: TTS, ASR, VAD and speaker verification on real checkpoints behind one API.

Other distributions ship PEP 420 portions of this namespace (``voicehub.core``,
``voicehub.registry``...). Importing this package loads no torch and no model module: model
integrations are declared in a lazy catalog and imported on first use.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

from voicehub.audio_input import PreTrainedAudioModel
from voicehub.auto import (
    AutoConfig,
    AutoModel,
    AutoModelForSpeakerVerification,
    AutoModelForSpeechRecognition,
    AutoModelForTextToSpeech,
    AutoModelForVoiceActivityDetection,
    get_default_model_spec,
    get_model_spec,
    list_model_specs,
)
from voicehub.core import (
    ASROutput,
    ASRSegment,
    ASRWord,
    SpeakerOutput,
    SpeechSegment,
    SpeechTask,
    TTSOutput,
    VADOutput,
    VerificationOutput,
    VoiceHubError,
    Waveform,
    load_audio,
)
from voicehub.core.runtime import RuntimeBundle, RuntimeHost, RuntimeState
from voicehub.core.version import distribution_version
from voicehub.errors import UnknownInferenceOptionError
from voicehub.modeling import PreTrainedSpeechModel
from voicehub.models import install_builtin_catalogs, load_builtin_models
from voicehub.pipelines import Pipeline, pipeline
from voicehub.registry import MODEL_CATALOG, ModelConfig, ModelRegistry, ModelSpec
from voicehub.speaker_verification import PreTrainedSVModel
from voicehub.speech_recognition import PreTrainedASRModel
from voicehub.text_to_speech import PreTrainedTTSModel
from voicehub.voice_activity import PreTrainedVADModel

install_builtin_catalogs()

__version__ = distribution_version("voicehub")

__all__ = [
    "MODEL_CATALOG",
    "ASROutput",
    "ASRSegment",
    "ASRWord",
    "AutoConfig",
    "AutoModel",
    "AutoModelForSpeakerVerification",
    "AutoModelForSpeechRecognition",
    "AutoModelForTextToSpeech",
    "AutoModelForVoiceActivityDetection",
    "ModelConfig",
    "ModelRegistry",
    "ModelSpec",
    "Pipeline",
    "PreTrainedASRModel",
    "PreTrainedAudioModel",
    "PreTrainedSVModel",
    "PreTrainedSpeechModel",
    "PreTrainedTTSModel",
    "PreTrainedVADModel",
    "RuntimeBundle",
    "RuntimeHost",
    "RuntimeState",
    "SpeakerOutput",
    "SpeechSegment",
    "SpeechTask",
    "TTSOutput",
    "UnknownInferenceOptionError",
    "VADOutput",
    "VerificationOutput",
    "VoiceHubError",
    "Waveform",
    "get_default_model_spec",
    "get_model_spec",
    "list_model_specs",
    "load_audio",
    "load_builtin_models",
    "pipeline",
]
