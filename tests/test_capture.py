import math
import threading

import numpy as np
import pytest
import torch

from model import capture, greedy_decode
from tests.conftest import make_tiny


def test_shapes_with_asymmetric_lengths(tiny, char_tokenizer):
    c = capture(tiny, char_tokenizer, "abcdefg", target="xyz")
    S, T = 8, 4  # 7 letters + </s>;  <s> + 3 letters
    assert c.source_tokens == list("abcdefg") + ["</s>"]
    assert c.target_tokens == ["<s>", "x", "y", "z"]
    assert c.encoder_self.shape == (3, 3, S, S)
    assert c.decoder_self.shape == (2, 3, T, T)
    assert c.cross.shape == (2, 3, T, S)
    assert c.source_pe.shape == c.source_embeddings.shape == (S, 24)
    assert c.target_pe.shape == c.target_embeddings.shape == (T, 24)
    assert len(c.predicted_tokens) == T
    for a in c.arrays().values():
        assert a.dtype in (np.float32, np.int64)
    np.testing.assert_allclose(c.cross.sum(-1), 1, atol=1e-5)
    np.testing.assert_array_equal(np.triu(c.decoder_self, k=1), 0)


def test_pe_rows_and_scaled_embeddings_are_what_the_model_adds(tiny, char_tokenizer):
    c = capture(tiny, char_tokenizer, "hello", target="ab")
    np.testing.assert_allclose(c.source_pe, tiny.src_pe.table[:6].numpy())
    np.testing.assert_allclose(c.target_pe, tiny.tgt_pe.table[:3].numpy())
    rows = tiny.src_embed.weight[torch.tensor(c.source_ids)].detach().numpy() * math.sqrt(24)
    np.testing.assert_allclose(c.source_embeddings, rows, rtol=1e-6)


def test_without_target_the_decoder_input_is_the_greedy_output(tiny, char_tokenizer):
    trace = greedy_decode(tiny, char_tokenizer, "hello")
    c = capture(tiny, char_tokenizer, "hello")
    produced = [t for t in trace.output_tokens if t != "</s>"]
    assert c.generated
    assert c.target_tokens == ["<s>"] + produced  # the same step limit: the whole greedy output
    # row t of the captured cross-attention is step t of the trace (a last row without </s> wrote nothing)
    n = len(trace.steps)
    np.testing.assert_allclose(c.cross[:, :, :n], trace.cross_alignment(), atol=1e-5)


def test_long_input_is_cut_and_reported(char_tokenizer):
    model = make_tiny(char_tokenizer, max_len=10)
    c = capture(model, char_tokenizer, "abcdefghijklmnop", target="abcdefghijklmnop")
    assert c.source_tokens == list("abcdefghi") + ["</s>"]
    assert c.source_truncated == 7 and c.target_truncated == 7
    assert len(c.target_tokens) == 10


def test_unknown_and_empty_inputs_do_not_raise(tiny, char_tokenizer):
    c = capture(tiny, char_tokenizer, "ABC€", target="")
    assert c.source_tokens == ["<unk>"] * 4 + ["</s>"]
    assert c.target_tokens == ["<s>"]
    empty = capture(tiny, char_tokenizer, "")
    assert empty.source_tokens == ["</s>"] and empty.encoder_self.shape[-1] == 1


def test_training_mode_is_refused(tiny, char_tokenizer):
    tiny.train()
    with pytest.raises(ValueError, match="eval"):
        capture(tiny, char_tokenizer, "abc")


def test_sixteen_threads_each_get_exactly_their_own_weights(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=3)
    words = [
        "alpha",
        "bravo charlie",
        "delta",
        "echo foxtrot golf",
        "hotel",
        "india juliett",
        "kilo",
        "lima mike",
        "november",
        "oscar papa",
        "quebec",
        "romeo sierra tango",
        "uniform",
        "victor",
        "whiskey xray",
        "yankee zulu",
    ]
    inputs = [(w, w[::-1]) for w in words]
    expected = [capture(model, char_tokenizer, s, target=t) for s, t in inputs]
    results: list = [None] * len(inputs)
    barrier = threading.Barrier(len(inputs))

    def work(i):
        barrier.wait()
        for _ in range(5):  # several rounds so that the threads' passes interleave
            results[i] = capture(model, char_tokenizer, *inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for got, want in zip(results, expected):
        assert got.source_tokens == want.source_tokens
        for name in ("encoder_self", "decoder_self", "cross", "source_pe", "target_embeddings"):
            assert getattr(got, name).shape == getattr(want, name).shape
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=1e-6)
    assert all(not m._forward_hooks for m in model.modules())
