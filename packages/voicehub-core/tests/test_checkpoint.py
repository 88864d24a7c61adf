"""check_state_dict: the one strict checkpoint-adapter check (names and shapes, every problem at once)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voicehub.core import CheckpointError, CheckpointMismatchError, check_state_dict

EXPECTED = {"conv.weight": (4, 1, 3), "conv.bias": (4,), "head.weight": (2, 4)}


def _tensors(**changes: object) -> dict[str, object]:
    tensors: dict[str, object] = {name: np.zeros(shape, dtype=np.float32) for name, shape in EXPECTED.items()}
    tensors.update(changes)
    return {name: tensor for name, tensor in tensors.items() if tensor is not None}


def test_check_state_dict_accepts_tensors_of_the_expected_names_and_shapes() -> None:
    check_state_dict(_tensors(), EXPECTED, what="toy checkpoint", floating=EXPECTED)


def test_check_state_dict_reports_missing_unexpected_and_mis_shaped_tensors_in_one_error() -> None:
    tensors = _tensors(**{"conv.bias": None, "head.weight": np.zeros((4, 2), np.float32), "extra": np.zeros(1)})
    with pytest.raises(CheckpointMismatchError) as caught:
        check_state_dict(tensors, EXPECTED, what="toy checkpoint for width 4", source=Path("/models/toy.pt"))
    error = caught.value
    assert str(error) == (
        "/models/toy.pt: not a toy checkpoint for width 4: missing ['conv.bias']; unexpected ['extra']; "
        "mis-shaped head.weight (expected [2, 4], got [4, 2])"
    )
    assert error.missing == ("conv.bias",) and error.unexpected == ("extra",)
    assert error.mismatched == (("head.weight", (2, 4), (4, 2)),)
    assert error.path == "/models/toy.pt"
    assert isinstance(error, CheckpointError) and isinstance(error, ValueError)


def test_check_state_dict_refuses_integer_tensors_where_floats_are_required() -> None:
    tensors = _tensors(**{"conv.bias": np.zeros(4, dtype=np.int64)})
    check_state_dict(tensors, EXPECTED, what="toy checkpoint")  # shapes alone are fine
    with pytest.raises(
        CheckpointMismatchError, match=r"^not a toy checkpoint: not floating point conv.bias \(int64\)$"
    ) as caught:
        check_state_dict(tensors, EXPECTED, what="toy checkpoint", floating=["conv.bias"])
    assert caught.value.not_floating == (("conv.bias", "int64"),) and caught.value.mismatched == ()


def test_check_state_dict_skips_consumed_names_and_reports_the_adapters_own_findings() -> None:
    tensors = _tensors(version=np.array(3))
    check_state_dict(tensors, EXPECTED, what="toy checkpoint", consumed=["version"])
    with pytest.raises(CheckpointMismatchError) as caught:
        check_state_dict(
            tensors,
            EXPECTED,
            what="toy checkpoint",
            consumed=["version"],
            extra_missing=["rotary"],
            extra_unexpected=["onnx::Add_7 (no rule places it)"],
            extra_mismatched=[("rotary table", (16,), (16,))],
            mismatched_label="mis-shaped or mismatched",
        )
    assert str(caught.value) == (
        "not a toy checkpoint: missing ['rotary']; unexpected ['onnx::Add_7 (no rule places it)']; "
        "mis-shaped or mismatched rotary table (expected [16], got [16])"
    )
    assert caught.value.path is None


def test_check_state_dict_lists_every_problem_sorted_whatever_the_dict_order() -> None:
    tensors = {"b": np.zeros(2), "a": np.zeros(3), "z": np.zeros(1), "y": np.zeros(1)}
    with pytest.raises(CheckpointMismatchError) as caught:
        check_state_dict(tensors, {"b": (3,), "a": (2,), "c": (1,), "d": (1,)}, what="x")
    assert caught.value.missing == ("c", "d") and caught.value.unexpected == ("y", "z")
    assert [name for name, *_ in caught.value.mismatched] == ["a", "b"]
    assert "mis-shaped a (expected [2], got [3]), b (expected [3], got [2])" in str(caught.value)


def test_check_state_dict_refuses_an_entry_that_is_not_a_tensor() -> None:
    with pytest.raises(CheckpointError, match=r"checkpoint entry 'conv.bias' is a str, not a tensor"):
        check_state_dict(_tensors(**{"conv.bias": "oops"}), EXPECTED, what="toy checkpoint")
