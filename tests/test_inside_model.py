"""capture(..., qkv=True) and the step-by-step computation of model/analysis/inside.py."""

import re
import threading

import numpy as np
import pytest
import torch

from model import capture, record
from model.analysis import inside
from model.analysis.export import qkv_npz
from tests.conftest import make_tiny

KINDS = ("encoder_self", "decoder_self", "cross")


@pytest.fixture
def cap(tiny, char_tokenizer):
    return capture(tiny, char_tokenizer, "abcdefg", target="xyz", qkv=True)


def test_qkv_shapes(cap):
    S, T, dk = 8, 4, 8  # d_model 24 / 3 heads
    expected = {"encoder_self": (3, S, S), "decoder_self": (2, T, T), "cross": (2, T, S)}
    for kind, (L, Tq, Tk) in expected.items():
        q, k, v = cap.qkv[kind]
        assert q.shape == (L, 3, Tq, dk) and k.shape == v.shape == (L, 3, Tk, dk)
        assert cap.head_outputs[kind].shape == (L, 3, Tq, dk)
        assert q.dtype == k.dtype == v.dtype == np.float32


def test_softmax_of_the_recorded_q_and_k_is_the_recorded_weights(cap):
    for kind in KINDS:
        q, k, v = cap.qkv[kind]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (L, H, Tq, Tk)
        if kind == "decoder_self":
            scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        weights = e / e.sum(-1, keepdims=True)
        np.testing.assert_allclose(weights, getattr(cap, kind), atol=1e-5)
        np.testing.assert_allclose(weights @ v, cap.head_outputs[kind], atol=1e-5)


def test_head_outputs_and_w_o_give_the_block_output(tiny, char_tokenizer):
    actual = {}
    hooks = [
        module.register_forward_hook(lambda m, a, out, key=(kind, i): actual.__setitem__(key, out[0].detach().numpy()))
        for kind, i, module in tiny.attention_modules()
    ]
    try:
        cap = capture(tiny, char_tokenizer, "abcdefg", target="xyz", qkv=True)
    finally:
        for h in hooks:
            h.remove()
    for (kind, layer), block_out in actual.items():  # block_out (Tq, D)
        w, b = inside.output_projection(tiny, kind, layer)
        heads = cap.head_outputs[kind][layer]  # (H, Tq, dk)
        for query in range(heads.shape[1]):
            step = inside.output_step(heads, w, b, query)
            np.testing.assert_allclose(step.output, block_out[query], atol=1e-5)
    assert len(actual) == 3 + 2 + 2


def test_head_step_equals_the_captured_row_and_its_parts_add_up(cap):
    for kind, layer, head, query in (("encoder_self", 2, 1, 3), ("decoder_self", 1, 2, 2), ("cross", 0, 0, 3)):
        step = inside.step_from_capture(cap, kind, layer, head, query)
        np.testing.assert_allclose(step.weights, getattr(cap, kind)[layer, head, query], atol=1e-5)
        np.testing.assert_allclose(step.output, cap.head_outputs[kind][layer, head, query], atol=1e-5)
        np.testing.assert_allclose(step.scaled * step.scale, step.raw)
        assert step.scale == pytest.approx(np.sqrt(8))
        np.testing.assert_allclose(step.products(1).sum(), step.raw[1])
    masked = inside.step_from_capture(cap, "decoder_self", 0, 0, 1)
    assert masked.allowed.tolist() == [True, True, False, False]
    assert (
        np.isneginf(masked.masked[2:]).all()
        and (masked.weights[2:] == 0).all()
        and (masked.weights_unscaled[2:] == 0).all()
    )


def test_without_the_scale_the_row_is_sharper():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=64) * 3, rng.normal(size=(10, 64)) * 3
    step = inside.head_step(q, k, k, np.ones(10, dtype=bool))
    assert step.entropy_unscaled < step.entropy <= np.log2(10)
    assert inside.entropy_bits(np.full(8, 1 / 8)) == pytest.approx(3.0)
    assert inside.entropy_bits(np.eye(4)[0]) == 0.0


def test_bad_selections_are_named(cap, tiny, char_tokenizer):
    with pytest.raises(ValueError, match="layer 5 is out of range"):
        inside.step_from_capture(cap, "cross", 5, 0, 0)
    with pytest.raises(ValueError, match="query 4 is out of range"):
        inside.step_from_capture(cap, "cross", 0, 0, 4)
    with pytest.raises(ValueError, match=re.escape(f"{', '.join(inside.KINDS)}, got 'sideways'")):
        inside.step_from_capture(cap, "sideways", 0, 0, 0)
    with pytest.raises(ValueError, match="qkv=True"):
        inside.step_from_capture(capture(tiny, char_tokenizer, "ab", target="c"), "cross", 0, 0, 0)
    with pytest.raises(ValueError, match="no cross attention in layer 7"):
        inside.output_projection(tiny, "cross", 7)


def test_nothing_more_is_recorded_without_qkv(tiny, char_tokenizer):
    plain = capture(tiny, char_tokenizer, "abc", target="xy")
    assert plain.qkv == {} and plain.head_outputs == {}
    with record(tiny) as rec:
        tiny.encode(torch.tensor([[3, 4, 5]]))
    assert not rec.vectors and rec.attention
    assert all(not m._forward_hooks for m in tiny.modules())


def test_the_fused_path_is_unchanged_when_nobody_records(tiny):
    called = []
    for _, _, module in tiny.attention_modules():
        for probe in (module.probe, *module.vector_probes().values()):
            probe.register_forward_hook(lambda *a: called.append(1))
    src = torch.tensor([[3, 4, 5, 6]])
    with torch.no_grad():
        tiny(src, torch.tensor([[1, 7, 8]]))
    assert called == []  # no probe runs outside a record block


def test_threads_recording_qkv_each_get_their_own(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=5)
    inputs = [("alpha", "ahpla"), ("bravo charlie", "eilrahc"), ("delta", "atled"), ("echo foxtrot", "tortxof")] * 2
    expected = [capture(model, char_tokenizer, s, target=t, qkv=True) for s, t in inputs]
    results: list = [None] * len(inputs)
    barrier = threading.Barrier(len(inputs))

    def work(i):
        barrier.wait()
        for _ in range(3):
            results[i] = capture(model, char_tokenizer, *inputs[i], qkv=i % 2 == 0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i, (got, want) in enumerate(zip(results, expected)):
        if i % 2:
            assert got.qkv == {}
            continue
        for kind in KINDS:
            for a, b in zip(got.qkv[kind], want.qkv[kind]):
                np.testing.assert_allclose(a, b, atol=1e-6)
            np.testing.assert_allclose(got.head_outputs[kind], want.head_outputs[kind], atol=1e-6)
    assert all(not m._forward_hooks for m in model.modules())


def test_qkv_npz_holds_every_kind(cap):
    import io

    arrays = np.load(io.BytesIO(qkv_npz(cap)))
    for kind in KINDS:
        np.testing.assert_array_equal(arrays[f"{kind}_k"], cap.qkv[kind][1])
        np.testing.assert_array_equal(arrays[f"{kind}_head_outputs"], cap.head_outputs[kind])
    assert list(arrays["source_tokens"]) == cap.source_tokens


def test_attention_cost_of_the_worked_example():
    c = inside.attention_cost(32, 512, 768, 12)
    assert c.d_k == 64 and c.weight_elements == 32 * 12 * 512 * 512
    assert c.weight_bytes == 4 * 32 * 12 * 512 * 512  # 384 MiB
    doubled = inside.attention_cost(32, 1024, 768, 12)
    assert doubled.weight_bytes == 4 * c.weight_bytes and doubled.score_flops == 4 * c.score_flops
    assert doubled.projection_flops == 2 * c.projection_flops
    cross = inside.attention_cost(2, 3, 8, 2, n_keys=5)
    assert cross.weight_elements == 60 and cross.projection_flops == 4096  # 2 B D² (2 T + 2 S) = 2·2·64·16
    lengths = [x.length for x in inside.length_scaling(32, 512, 768, 12)]
    assert lengths == [128, 256, 512, 1024, 2048]
    assert [x.length for x in inside.length_scaling(1, 1, 8, 2)] == [1, 2, 4]


@pytest.mark.parametrize(
    "args, message",
    [
        ((0, 512, 768, 12), "batch must be between 1 and 4,096, got 0"),
        ((32, 10**12, 768, 12), "length must be between 1 and 1,048,576"),
        ((32, 512, 768, 10), r"d_model \(768\) must be divisible by the number of heads \(10\)"),
        ((32, 512.5, 768, 12), "length must be a whole number"),
        ((32, 512, 768, True), "heads must be a whole number"),
    ],
)
def test_attention_cost_refuses_what_is_out_of_bounds(args, message):
    with pytest.raises(ValueError, match=message):
        inside.attention_cost(*args)
