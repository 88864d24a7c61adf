"""A bounds-checked reader for ONNX Runtime's ``.ort`` flatbuffer model files (tensors and nodes only).

The ``.ort`` format is a FlatBuffers document with file identifier ``ORTM`` whose schema,
``onnxruntime/core/flatbuffers/schema/ort.fbs`` (MIT), is the ONNX graph again: an
``InferenceSession`` holds a ``Model`` holding a ``Graph`` of initializer ``Tensor`` s and
``Node`` s, and a node's ``Attribute`` may hold a subgraph (the ``If`` of a merged decoder).
Only the fields below are read; their slots are the schema's field order:

=============== ===================================================================
table           fields read (slot)
=============== ===================================================================
InferenceSession ort_version (0), model (1)
Model           ir_version (0), graph (7)
Graph           initializers (0), nodes (2), inputs (5), outputs (6), sparse_initializers (7)
Node            name (0), domain (2), op_type (5), inputs (8), outputs (9), attributes (10)
Attribute       name (0), g (7), graphs (12)
Tensor          name (0), dims (2), data_type (3), raw_data (4), string_data (5),
                external_data_offset (6)
=============== ===================================================================

FlatBuffers layout (``flatbuffers.dev``, "internals"): the file starts with a ``uint32`` offset to
the root table; a table starts with an ``int32`` back-offset to its vtable; the vtable holds two
``uint16`` sizes and one ``uint16`` offset per field (0 = absent); strings and vectors are a
``uint32`` length followed by the data; references are ``uint32`` offsets from where they are
stored. All numbers are little-endian. Every read below checks that it stays inside the file, so a
truncated or corrupt file raises :class:`CheckpointError` naming what was being read, never an
``IndexError`` or ``struct.error``.

This module needs neither onnxruntime nor the ``flatbuffers`` package.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicehub.core.errors import CheckpointError

FILE_IDENTIFIER = b"ORTM"
"""Bytes 4-8 of every ``.ort`` model file."""

ONNX_DTYPES: dict[int, np.dtype[np.generic]] = {
    1: np.dtype("<f4"),
    2: np.dtype("u1"),
    3: np.dtype("i1"),
    5: np.dtype("<i2"),
    6: np.dtype("<i4"),
    7: np.dtype("<i8"),
    9: np.dtype("?"),
    10: np.dtype("<f2"),
    11: np.dtype("<f8"),
}
"""ONNX ``TensorProto.DataType`` codes this reader decodes -> NumPy dtypes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OrtTensor:
    """One initializer.

    Attributes:
        name: the initializer's name in the graph.
        graph: where it lives: ``"main"`` or ``"<node name>/<attribute name>"`` for a subgraph.
        data_type: the ONNX ``TensorProto.DataType`` code (1 float32, 3 int8, 7 int64, ...).
        values: the data, shaped by the tensor's dims; a read-only view into the file's bytes.
    """

    name: str
    graph: str
    data_type: int
    values: np.ndarray


@dataclass(frozen=True, slots=True, kw_only=True)
class OrtNode:
    """One graph node.

    Attributes:
        name: the node's name (exporters name them after the module path, e.g.
            ``/layers.0/self_attn/q_proj/MatMul``).
        op_type: the operator (``MatMul``, ``Cast``...).
        domain: the operator set domain (``""`` for the default ONNX domain).
        inputs: input value names (``""`` for an omitted optional input).
        outputs: output value names.
        graph: where it lives, as :attr:`OrtTensor.graph`.
    """

    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    graph: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OrtModel:
    """What :func:`read_ort_model` returns: every initializer and node of the model and its subgraphs.

    Attributes:
        path: the file read.
        ort_version: the format version string stored in the file (``"6"`` for ONNX Runtime 1.22).
        ir_version: the ONNX IR version.
        tensors: initializer name -> tensor, over the main graph and all subgraphs.
        nodes: all nodes, main graph first, each subgraph's after the node that holds it.
        inputs: the main graph's input names.
        outputs: the main graph's output names.
    """

    path: Path
    ort_version: str
    ir_version: int
    tensors: dict[str, OrtTensor]
    nodes: tuple[OrtNode, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


class _Reader:
    """Bounds-checked little-endian reads from one file's bytes."""

    def __init__(self, data: bytes, path: Path) -> None:
        self.data = data
        self.path = path

    def fail(self, what: str) -> CheckpointError:
        return CheckpointError(
            f"{self.path}: corrupt ONNX Runtime model file: {what}; expected an intact .ort flatbuffer "
            f"(reinstall the package that ships it)",
            path=self.path,
        )

    def unpack(self, fmt: str, pos: int, what: str) -> int:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > len(self.data):
            raise self.fail(f"{what} at byte {pos} lies outside the file ({len(self.data)} bytes)")
        value: int = struct.unpack_from(fmt, self.data, pos)[0]
        return value

    def span(self, pos: int, length: int, what: str) -> memoryview:
        if pos < 0 or length < 0 or pos + length > len(self.data):
            raise self.fail(
                f"{what} ({length} bytes at byte {pos}) runs past the end of the file ({len(self.data)} bytes)"
            )
        return memoryview(self.data)[pos : pos + length]


class _Table:
    """A FlatBuffers table: field lookups through its vtable."""

    def __init__(self, reader: _Reader, pos: int, what: str) -> None:
        self.reader = reader
        self.pos = pos
        self.what = what
        vtable = pos - reader.unpack("<i", pos, f"{what} vtable offset")
        self.vtable = vtable
        self.vtable_size = reader.unpack("<H", vtable, f"{what} vtable size")
        if self.vtable_size < 4 or self.vtable_size % 2:
            raise reader.fail(f"{what} has a vtable of {self.vtable_size} bytes")

    def _field(self, slot: int) -> int | None:
        entry = 4 + 2 * slot
        if entry >= self.vtable_size:
            return None
        offset = self.reader.unpack("<H", self.vtable + entry, f"{self.what} field {slot}")
        return self.pos + offset if offset else None

    def scalar(self, slot: int, fmt: str, default: int) -> int:
        field = self._field(slot)
        return default if field is None else self.reader.unpack(fmt, field, f"{self.what} field {slot}")

    def _target(self, slot: int) -> int | None:
        field = self._field(slot)
        if field is None:
            return None
        return field + self.reader.unpack("<I", field, f"{self.what} field {slot}")

    def string(self, slot: int) -> str:
        target = self._target(slot)
        if target is None:
            return ""
        length = self.reader.unpack("<I", target, f"{self.what} string length")
        raw = self.reader.span(target + 4, length, f"{self.what} string")
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as err:
            raise self.reader.fail(f"{self.what} holds a string that is not UTF-8 ({err})") from err

    def table(self, slot: int, what: str) -> _Table | None:
        target = self._target(slot)
        return None if target is None else _Table(self.reader, target, what)

    def _vector(self, slot: int) -> tuple[int, int]:
        target = self._target(slot)
        if target is None:
            return 0, 0
        return target + 4, self.reader.unpack("<I", target, f"{self.what} vector length")

    def tables(self, slot: int, what: str) -> list[_Table]:
        start, count = self._vector(slot)
        self.reader.span(start, 4 * count, f"{self.what} {what} list")
        out = []
        for index in range(count):
            element = start + 4 * index
            out.append(_Table(self.reader, element + self.reader.unpack("<I", element, what), f"{what} {index}"))
        return out

    def strings(self, slot: int) -> tuple[str, ...]:
        start, count = self._vector(slot)
        self.reader.span(start, 4 * count, f"{self.what} name list")
        out = []
        for index in range(count):
            element = start + 4 * index
            target = element + self.reader.unpack("<I", element, f"{self.what} name {index}")
            length = self.reader.unpack("<I", target, f"{self.what} name {index} length")
            raw = self.reader.span(target + 4, length, f"{self.what} name {index}")
            out.append(bytes(raw).decode("utf-8", errors="replace"))
        return tuple(out)

    def array(self, slot: int, dtype: np.dtype[np.generic], what: str) -> np.ndarray:
        start, count = self._vector(slot)
        raw = self.reader.span(start, count * dtype.itemsize, f"{self.what} {what}")
        return np.frombuffer(raw, dtype=dtype)


def _read_tensor(table: _Table, reader: _Reader, graph: str) -> OrtTensor:
    name = table.string(0)
    if not name:
        raise reader.fail(f"{table.what} in graph {graph!r} has no name")
    dims = tuple(int(d) for d in table.array(2, np.dtype("<i8"), "dims"))
    data_type = table.scalar(3, "<i", 0)
    external = table.scalar(6, "<q", -1)
    if external >= 0:
        raise CheckpointError(
            f"{reader.path}: tensor {name!r} keeps its data outside the .ort file (external_data_offset={external}); "
            f"only self-contained .ort files are supported",
            path=reader.path,
        )
    if any(d < 0 for d in dims):
        raise reader.fail(f"tensor {name!r} has negative dims {list(dims)}")
    dtype = ONNX_DTYPES.get(data_type)
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if dtype is None:
        if count == 0:  # an empty placeholder of any type carries no data
            return OrtTensor(name=name, graph=graph, data_type=data_type, values=np.zeros(dims, dtype=np.float32))
        raise CheckpointError(
            f"{reader.path}: tensor {name!r} has ONNX data type {data_type}, which this reader does not decode "
            f"(known: {sorted(ONNX_DTYPES)})",
            path=reader.path,
        )
    raw = table.array(4, np.dtype("u1"), f"tensor {name!r} data")
    if raw.size != count * dtype.itemsize:
        raise reader.fail(
            f"tensor {name!r} holds {raw.size} data bytes, but dims {list(dims)} of {dtype.name} need "
            f"{count * dtype.itemsize}"
        )
    values = raw.view(dtype).reshape(dims)
    return OrtTensor(name=name, graph=graph, data_type=data_type, values=values)


MAX_GRAPH_DEPTH = 8
"""Subgraph nesting this reader follows (a merged decoder needs 1); deeper means a corrupt, cyclic file."""


def _read_graph(
    graph: _Table, reader: _Reader, where: str, tensors: dict[str, OrtTensor], nodes: list[OrtNode], depth: int = 0
) -> None:
    if depth > MAX_GRAPH_DEPTH:
        raise reader.fail(f"subgraphs nest deeper than {MAX_GRAPH_DEPTH} levels at {where!r}")
    if graph.tables(7, "sparse initializer"):
        raise CheckpointError(f"{reader.path}: graph {where!r} holds sparse initializers, which are not supported")
    for table in graph.tables(0, "initializer"):
        tensor = _read_tensor(table, reader, where)
        if tensor.name in tensors:
            raise reader.fail(
                f"initializer {tensor.name!r} appears in both graph {tensors[tensor.name].graph!r} and {where!r}"
            )
        tensors[tensor.name] = tensor
    for node_table in graph.tables(2, "node"):
        node = OrtNode(
            name=node_table.string(0),
            op_type=node_table.string(5),
            domain=node_table.string(2),
            inputs=node_table.strings(8),
            outputs=node_table.strings(9),
            graph=where,
        )
        nodes.append(node)
        for attribute in node_table.tables(10, "attribute"):
            label = f"{node.name}/{attribute.string(0)}"
            subgraph = attribute.table(7, f"subgraph {label}")
            if subgraph is not None:
                _read_graph(subgraph, reader, label, tensors, nodes, depth + 1)
            for index, extra in enumerate(attribute.tables(12, f"subgraph {label}")):
                _read_graph(extra, reader, f"{label}.{index}", tensors, nodes, depth + 1)


def read_ort_model(path: str | os.PathLike[str]) -> OrtModel:
    """Read every initializer and node of an ``.ort`` file (main graph and subgraphs).

    Args:
        path: an ONNX Runtime flatbuffer model (``*.ort``).

    Returns:
        The tensors (read-only views into the file's bytes, held in memory) and nodes.

    Raises:
        CheckpointError: for a missing file, a file without the ``ORTM`` identifier, a truncated
            or corrupt flatbuffer (naming the part that could not be read), external or sparse
            tensor data, or a tensor whose byte count does not match its dims.
    """
    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"{file}: no such .ort model file", path=file)
    data = file.read_bytes()
    reader = _Reader(data, file)
    if len(data) < 8 or data[4:8] != FILE_IDENTIFIER:
        raise CheckpointError(
            f"{file}: not an ONNX Runtime .ort model (expected the file identifier {FILE_IDENTIFIER.decode()!r} "
            f"at bytes 4-8, got {bytes(data[4:8])!r}); an .onnx protobuf file needs converting first",
            path=file,
        )
    session = _Table(reader, reader.unpack("<I", 0, "root offset"), "InferenceSession")
    model = session.table(1, "Model")
    if model is None:
        raise reader.fail("the InferenceSession holds no model")
    graph = model.table(7, "Graph")
    if graph is None:
        raise reader.fail("the model holds no graph")
    tensors: dict[str, OrtTensor] = {}
    nodes: list[OrtNode] = []
    _read_graph(graph, reader, "main", tensors, nodes)
    return OrtModel(
        path=file,
        ort_version=session.string(0),
        ir_version=model.scalar(0, "<q", 0),
        tensors=tensors,
        nodes=tuple(nodes),
        inputs=graph.strings(5),
        outputs=graph.strings(6),
    )


__all__ = ["FILE_IDENTIFIER", "ONNX_DTYPES", "OrtModel", "OrtNode", "OrtTensor", "read_ort_model"]
