"""The native Whisper graph on random weights: shapes, batching, the key/value cache, state-dict round trip."""

from __future__ import annotations

import copy
import io
import pickle

import pytest
import torch

from voicehub.architectures.whisper import Whisper, WhisperConfig
from voicehub.core.errors import AudioError, InferenceOptionError

SMALL = WhisperConfig(audio_width=64, audio_heads=4, audio_layers=2, vocab_size=97, text_context=24, text_width=64,
                      text_heads=4, text_layers=2)  # fmt: skip


@pytest.fixture(scope="module")
def model(one_intra_op_thread_for_the_session: None) -> Whisper:
    torch.manual_seed(0)
    graph = Whisper(SMALL).eval()
    with torch.no_grad():  # random biases and norms, so that no term is trivially zero
        for name, parameter in graph.named_parameters():
            if name.endswith("bias") or "ln" in name:
                parameter.add_(torch.randn_like(parameter) * 0.1)
    return graph


def _mel(windows: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(windows, 80, 3000, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def features(model: Whisper) -> torch.Tensor:
    """Encoder output of ``_mel(3)``, computed once."""
    with torch.inference_mode():
        return model.embed_audio(_mel(3))


def _tokens(rows: int, length: int, seed: int = 2) -> torch.Tensor:
    return torch.randint(0, SMALL.vocab_size, (rows, length), generator=torch.Generator().manual_seed(seed))


def _logits(model: Whisper, features: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    hidden, _ = model.decoder(tokens, model.decoder.init_state(features))
    return model.decoder.logits(hidden)


@torch.inference_mode()
def test_whisper_forward_shapes(model: Whisper, features: torch.Tensor) -> None:
    assert features.shape == (3, 1500, 64)
    logits = _logits(model, features, _tokens(3, 7))
    assert logits.shape == (3, 7, 97)
    assert logits.dtype == torch.float32


@torch.inference_mode()
def test_whisper_batched_equals_one_by_one(model: Whisper, features: torch.Tensor) -> None:
    mel, tokens = _mel(3), _tokens(3, 6)
    alone = torch.cat([model.embed_audio(mel[i : i + 1]) for i in range(3)])
    assert (features - alone).abs().max() < 1e-4
    together = _logits(model, features, tokens)
    one_by_one = torch.cat([_logits(model, alone[i : i + 1], tokens[i : i + 1]) for i in range(3)])
    assert (together - one_by_one).abs().max() < 1e-4


@torch.inference_mode()
def test_whisper_kv_cache_steps_equal_teacher_forcing(model: Whisper, features: torch.Tensor) -> None:
    features = features[:2]
    tokens = _tokens(2, 10)
    expected = _logits(model, features, tokens)
    state = model.decoder.init_state(features)
    pieces = [tokens[:, :3], tokens[:, 3:4], tokens[:, 4:7], tokens[:, 7:8], tokens[:, 8:10]]  # multi-token steps too
    logits = []
    for piece in pieces:
        hidden, _ = model.decoder(piece, state)
        logits.append(model.decoder.logits(hidden))
    assert state.length == 10
    assert (torch.cat(logits, dim=1) - expected).abs().max() < 1e-4


@torch.inference_mode()
def test_whisper_group_rows_share_one_windows_cross_attention(model: Whisper, features: torch.Tensor) -> None:
    features = features[:2]
    tokens = _tokens(4, 5)  # rows 0, 1 belong to window 0 and rows 2, 3 to window 1
    grouped = model.decoder.init_state(features, group_size=2)
    hidden, _ = model.decoder(tokens, grouped)
    repeated = model.decoder.init_state(features.repeat_interleave(2, dim=0))
    expected, _ = model.decoder(tokens, repeated)
    assert (hidden - expected).abs().max() < 1e-4


@torch.inference_mode()
def test_whisper_state_reorder_moves_cached_rows(model: Whisper, features: torch.Tensor) -> None:
    features = features[:1].expand(2, -1, -1)
    tokens = _tokens(2, 4)
    state = model.decoder.init_state(features)
    model.decoder(tokens, state)
    state.reorder(torch.tensor([1, 1]))
    step = _tokens(2, 1, seed=5)
    hidden, _ = model.decoder(step, state)
    fresh = model.decoder.init_state(features)
    model.decoder(tokens[[1, 1]], fresh)
    expected, _ = model.decoder(step, fresh)
    assert (hidden - expected).abs().max() < 1e-5


@torch.inference_mode()
def test_whisper_cross_attention_scores_path_equals_the_fused_kernel(model: Whisper, features: torch.Tensor) -> None:
    features = features[:1]
    tokens = _tokens(1, 6)
    plain, _ = model.decoder(tokens, model.decoder.init_state(features))
    scored, scores = model.decoder(tokens, model.decoder.init_state(features), return_scores=True)
    assert (plain - scored).abs().max() < 1e-4
    assert len(scores) == 2 and scores[0].shape == (1, 4, 6, 1500)


@torch.inference_mode()
def test_whisper_state_dict_round_trip(model: Whisper) -> None:
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    copy = Whisper(SMALL).eval()
    copy.load_state_dict(torch.load(buffer, weights_only=True), strict=True)
    mel, tokens = _mel(3)[:1], _tokens(1, 5)
    assert torch.equal(copy(mel, tokens), model(mel, tokens))
    assert "encoder.positional_embedding" in model.state_dict()
    assert not any("mask" in name for name in model.state_dict())


def test_whisper_refuses_a_window_that_is_not_30_s(model: Whisper) -> None:
    with pytest.raises(AudioError, match=r"\(windows, 80, 3000\)"):
        model.embed_audio(torch.zeros(1, 80, 2999))


@torch.inference_mode()
def test_whisper_decoder_refuses_to_run_past_its_context(model: Whisper, features: torch.Tensor) -> None:
    state = model.decoder.init_state(features[:1])
    with pytest.raises(InferenceOptionError, match="24 positions"):
        model.decoder(_tokens(1, 25), state)


@torch.inference_mode()
def test_whisper_output_projection_stays_tied_to_the_embedding(model: Whisper, features: torch.Tensor) -> None:
    assert "decoder.output.weight" not in model.state_dict()
    assert sum(p.numel() for p in model.parameters()) == sum(
        t.numel() for name, t in model.state_dict().items() if name != "encoder.positional_embedding"
    )
    copy = Whisper(SMALL).eval()
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    copy.load_state_dict(state, strict=True, assign=True)  # replaces the embedding parameter object
    assert copy.decoder.output.weight is copy.decoder.token_embedding.weight
    tokens = _tokens(1, 4)
    assert torch.equal(_logits(copy, features[:1], tokens), _logits(model, features[:1], tokens))


@torch.inference_mode()
def test_whisper_int8_dynamic_pass_reaches_every_linear_including_the_output(
    model: Whisper, features: torch.Tensor
) -> None:
    from voicehub.optimization.builtin.quantization import Int8DynamicPass
    from voicehub.optimization.capabilities import OptimizationContext

    int8, context = Int8DynamicPass(), OptimizationContext()
    tokens = _tokens(1, 5)
    reference = _logits(model, features[:1], tokens)
    result = int8.apply(model, context)
    try:
        assert not any(type(m) is torch.nn.Linear for m in model.modules())
        assert "decoder.output" in result.metadata["quantized_layers"]
        quantized = _logits(model, model.embed_audio(_mel(3)[:1]), tokens)
        assert (quantized - reference).abs().max() < 0.1 * reference.abs().max()
    finally:
        int8.restore(model, result.state, context)
    assert model.decoder.output.weight is model.decoder.token_embedding.weight
    assert torch.equal(_logits(model, features[:1], tokens), reference)


def test_whisper_logits_fast_routes_equal_the_plain_projection_and_follow_weight_changes() -> None:
    from voicehub.architectures.whisper.model import BLOCKED_MAX_ROWS, VOCAB_BLOCK_ROWS

    torch.manual_seed(3)
    vocab = 2 * VOCAB_BLOCK_ROWS + 905  # two whole blocks and a remainder
    decoder = Whisper(WhisperConfig(audio_width=64, audio_heads=4, audio_layers=1, vocab_size=vocab, text_context=8,
                                    text_width=64, text_heads=4, text_layers=1)).decoder  # fmt: skip
    weight = decoder.token_embedding.weight
    for shape in ((1, 1, 64), (1, 64), (3, 2, 64), (BLOCKED_MAX_ROWS, 64), (BLOCKED_MAX_ROWS + 1, 64)):
        hidden = torch.randn(shape)
        with torch.no_grad():
            fast = decoder.logits(hidden)
            plain = torch.nn.functional.linear(hidden, weight)
        assert fast.shape == (*shape[:-1], vocab)
        assert (fast - plain).abs().max() < 1e-6 * plain.abs().max(), shape  # float32 rounding only
    hidden = torch.randn(1, 64)
    with torch.no_grad():
        before = decoder.logits(hidden)
        weight.mul_(-2.0)  # an optimizer step changes the embedding in place: the column copy is remade
        after = decoder.logits(hidden)
    assert (after + 2.0 * before).abs().max() < 1e-6 * before.abs().max()
    assert decoder._columns.built
    copied = copy.deepcopy(decoder)  # pickling and copies leave the derived copy behind
    assert not copied._columns.built and not pickle.loads(pickle.dumps(decoder))._columns.built
    with torch.no_grad():
        assert torch.equal(copied.logits(hidden), after)
    # Training: the embedding gets its gradient through the plain product.
    decoder.logits(torch.randn(1, 64)).sum().backward()
    assert weight.grad is not None and weight.grad.abs().sum() > 0
