"""Moonshine's token table, read from ``tokenizer.bin`` (decoding only: recognition needs no encoder).

Format (written by the Moonshine tools; read by its C++ ``BinTokenizer``): one entry per token
id, in id order, each a length prefix and that many bytes. The prefix is one byte ``n`` for
lengths 0-127; for longer entries two bytes ``b0, b1`` with length ``b1 * 128 + b0 - 128``
(``b0 >= 128``). A zero length marks an unused id.

The base-en table has 32000 entries: ``<unk>``, ``<s>``, ``</s>``; 256 single-byte tokens
(ids 3-258, the byte fallback of the SentencePiece model); then 31741 sub-words where ``▁``
(U+2581) stands for a space. The model's embedding has 32768 rows; ids past the table are
never valid text.

Decoding, as upstream ``BinTokenizer::tokens_to_text``: concatenate the entries' bytes, skipping
special tokens (entries of more than 2 bytes that start with ``<`` and end with ``>``), decode
as UTF-8 (invalid sequences become U+FFFD), replace ``▁`` by a space and strip the ends.

This is a table lookup; a ``tokenizers`` BPE model would add a dependency and a format
conversion for no gain, since the recogniser never encodes text.
"""

from __future__ import annotations

import os
from pathlib import Path

from voicehub.core.errors import CheckpointError, InferenceOptionError

SPACE = "\u2581"
"""The SentencePiece word-boundary mark that stands for a space."""


class MoonshineTokenizer:
    """Token id -> bytes table with upstream-compatible decoding.

    Args:
        pieces: the byte string of each token id (``b""`` for an unused id).
        bos_token_id: start token (``<s>``, 1).
        eos_token_id: end-of-text token (``</s>``, 2).
    """

    def __init__(self, pieces: list[bytes], *, bos_token_id: int = 1, eos_token_id: int = 2) -> None:
        self.pieces = tuple(pieces)
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.special_ids = frozenset(
            index
            for index, piece in enumerate(self.pieces)
            if len(piece) > 2 and piece.startswith(b"<") and piece.endswith(b">")
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> MoonshineTokenizer:
        """Read ``tokenizer.bin``.

        Raises:
            CheckpointError: for a missing file or an entry that runs past the end of the file
                (naming the token id and byte offset).
        """
        file = Path(path)
        if not file.is_file():
            raise CheckpointError(f"{file}: no such tokenizer file", path=file)
        data = file.read_bytes()
        pieces: list[bytes] = []
        offset = 0
        while offset < len(data):
            start = offset
            length = data[offset]
            offset += 1
            if length >= 128:
                if offset >= len(data):
                    raise CheckpointError(
                        f"{file}: token {len(pieces)}: its two-byte length prefix at byte {start} is cut off by the "
                        f"end of the file; expected an intact Moonshine tokenizer.bin",
                        path=file,
                    )
                length = data[offset] * 128 + length - 128
                offset += 1
            if offset + length > len(data):
                raise CheckpointError(
                    f"{file}: token {len(pieces)} at byte {start} claims {length} bytes but only "
                    f"{len(data) - offset} remain; expected an intact Moonshine tokenizer.bin",
                    path=file,
                )
            pieces.append(data[offset : offset + length])
            offset += length
        if len(pieces) < 3:
            raise CheckpointError(
                f"{file}: holds {len(pieces)} tokens; a Moonshine tokenizer.bin starts with <unk>, <s>, </s>",
                path=file,
            )
        return cls(pieces)

    def to_bytes(self) -> bytes:
        """The table in ``tokenizer.bin`` layout, which :meth:`from_file` reads back.

        Each entry is its length (one byte below 128; otherwise two bytes, ``128 + length % 128``
        then ``length // 128``) followed by its bytes.

        Raises:
            CheckpointError: for an entry of 16384 bytes or more (the format cannot hold it).
        """
        out = bytearray()
        for index, piece in enumerate(self.pieces):
            length = len(piece)
            if length >= 128 * 128:
                raise CheckpointError(
                    f"token {index}: {length} bytes; a tokenizer.bin entry holds at most {128 * 128 - 1}"
                )
            out += bytes([length]) if length < 128 else bytes([128 + length % 128, length // 128])
            out += piece
        return bytes(out)

    @property
    def vocab_size(self) -> int:
        """Entries in the table (32000 for base-en)."""
        return len(self.pieces)

    def decode(self, token_ids: list[int] | tuple[int, ...], *, skip_special_tokens: bool = True) -> str:
        """Text of a token sequence (see the module docstring for the rules).

        Args:
            token_ids: ids from the decoder.
            skip_special_tokens: drop ``<s>``, ``</s>``, ``<unk>``... as upstream does.

        Raises:
            InferenceOptionError: for an id outside the table or an unused (empty) entry.
        """
        out = bytearray()
        for token in token_ids:
            if not 0 <= token < len(self.pieces) or not self.pieces[token]:
                raise InferenceOptionError(
                    f"token id {token} is not in the Moonshine table of {len(self.pieces)} entries (or is unused)"
                )
            if skip_special_tokens and token in self.special_ids:
                continue
            out += self.pieces[token]
        return out.decode("utf-8", errors="replace").replace(SPACE, " ").strip()


__all__ = ["SPACE", "MoonshineTokenizer"]
