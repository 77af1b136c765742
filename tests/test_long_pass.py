"""A long input's pass on the Attention page: in the worker with progress and Cancel, under limits an operator sets.

The worker's deadline is an operator setting (VIZ_DEADLINE_S, any positive number; 60 s by default); a decoder-only
model's shared decode runs in the same worker as the lazy capture (never in the server when the pass is long); and
the work budget's operations refuse a pass of minutes before it starts, saying what fits. Tiny models, limits
monkeypatched: nothing here takes more than a second or two."""

from __future__ import annotations

import os

import numpy as np
import pytest

from model import capture
from model.analysis.budget import OVER_OPS, BudgetExceeded, attention_page_ops
from tests.conftest import make_tiny

TEXT = "the quick brown fox jumps over the lazy dog"


@pytest.fixture
def decoder_only(char_tokenizer):
    return make_tiny(
        char_tokenizer, seed=21, positional="rope", shape="decoder-only", n_kv_heads=1, max_len=96, n_encoder_layers=0
    )


def test_the_deadline_is_the_operators_setting_beyond_a_minute(monkeypatch):
    from ui.serving.workers import Limits

    monkeypatch.setenv("VIZ_DEADLINE_S", "1800")
    assert Limits.from_environment().deadline == 1800.0  # an operator's half hour is kept, not cut to 60 s
    for bad in ("0", "-5", "soon", "inf"):
        monkeypatch.setenv("VIZ_DEADLINE_S", bad)
        assert Limits.from_environment().deadline == 60.0
    monkeypatch.delenv("VIZ_DEADLINE_S")
    assert Limits.from_environment().deadline == 60.0


def test_a_long_pass_decodes_and_captures_in_the_worker_with_progress(char_tokenizer, decoder_only, monkeypatch):
    """Past IN_PROCESS_OPS the decode and the lazy capture run in one worker process: each attention module reports
    progress from there, the decode's ids come back into the shared cache (the server decoded nothing), and the maps
    are those of the same pass run here."""
    from ui.serving import caches, workers

    seen, pids = [], []

    def watched(fn, *args, key, label, **kwargs):  # run_with_progress without a page: the same worker
        def report(done, total):
            seen.append((done, total))

        return workers.run_limited(fn, *args, on_progress=report, **kwargs)

    def no_decode_here(*args, **kwargs):
        pids.append(os.getpid())
        return decode(*args, **kwargs)

    decode = caches.decode_ids
    monkeypatch.setattr(caches, "IN_PROCESS_OPS", 0)
    monkeypatch.setattr(workers, "run_with_progress", watched)
    monkeypatch.setattr(caches, "decode_ids", no_decode_here)
    caches.LAZY.clear()
    caches.DECODES.clear()
    lazy = caches.cached_lazy_capture("tiny-dec", TEXT, None, decoder_only, char_tokenizer, spinner=None)
    ids = caches.DECODES.get(("tiny-dec", TEXT), lambda: None)
    assert pids == [] and ids == decode(decoder_only, char_tokenizer, TEXT)  # decoded in the child only
    total = sum(1 for _ in decoder_only.attention_modules())
    assert (0, 1) in seen and (total, total) in seen  # the decode, then every layer of the pass
    here = capture(decoder_only, char_tokenizer, TEXT, lazy=True,
                   output_ids=[i for i in ids if i != char_tokenizer.target.eos_id])  # fmt: skip
    assert lazy.generated and lazy.target_tokens == here.target_tokens
    np.testing.assert_allclose(lazy.map("decoder_self", 1, 2), here.map("decoder_self", 1, 2), atol=1e-6)


def test_a_decode_that_may_run_to_the_step_limit_runs_in_a_worker(char_tokenizer, decoder_only, monkeypatch):
    """A decode the server would spend more than about a second on (IN_PROCESS_OPS, counted to the step limit: a
    model that never writes its end token decodes that far) runs in a limited worker: the shared greedy decode and
    a strategy's own (a beam of 3), each as the same decode gives it here; a cheap one stays here."""
    from types import SimpleNamespace

    from model.decoding import beam
    from ui.serving import caches

    here, pids = os.getpid(), []
    decode, real_beam = caches.decode_ids, beam.decode

    def decode_where(*args, **kwargs):  # a worker's append stays in the worker
        pids.append(os.getpid())
        return decode(*args, **kwargs)

    def beam_where(*args, **kwargs):
        pids.append(os.getpid())
        return real_beam(*args, **kwargs)

    monkeypatch.setattr(caches, "decode_ids", decode_where)
    monkeypatch.setattr(beam, "decode", beam_where)
    caches.DECODES.clear()
    caches.DECODINGS.clear()
    cheap = caches.own_output("tiny-cheap", TEXT, decoder_only, char_tokenizer)
    assert pids == [here]
    monkeypatch.setattr(caches, "IN_PROCESS_OPS", 0)
    assert caches.own_output("tiny-long", TEXT, decoder_only, char_tokenizer) == cheap and pids == [here]
    session = SimpleNamespace(key="tiny-long", check=SimpleNamespace(text=TEXT), model=decoder_only,
                              tokenizer=char_tokenizer)  # fmt: skip
    settings = {"beam_size": 3, "length_penalty": 0.6}
    trace = caches.cached_decoding(session, SimpleNamespace(module=beam, values=(3, 0.6), settings=settings))
    expected = real_beam(decoder_only, char_tokenizer, TEXT, **settings)
    assert pids == [here] and trace.text == expected.text and trace.score == pytest.approx(expected.score)
    assert caches.decoding_ops(decoder_only, char_tokenizer, TEXT, 3) > caches.decoding_ops(
        decoder_only, char_tokenizer, TEXT
    )  # a beam's rows are counted


def test_the_default_operations_refuse_a_long_pass_and_say_what_fits(char_tokenizer, decoder_only, monkeypatch):
    """A limit of operations below what the pass costs (here half this tiny model's count, as the default 400
    billion is to a 1B model at 2,048 tokens) refuses before any work, with the longest input that fits."""
    from model.analysis import budget
    from model.analysis.budget_input import source_length
    from ui.serving import caches

    cfg = decoder_only.config
    long_text = (TEXT + " ") * 2
    S = source_length(char_tokenizer.source, cfg, long_text)
    T = caches.steps_for(cfg, S) + 1
    limit = attention_page_ops(cfg, S, T) // 2
    monkeypatch.setattr(budget, "ops_from_environment", lambda: limit)
    caches.LAZY.clear()
    caches.DECODES.clear()
    with pytest.raises(BudgetExceeded) as refused:
        caches.cached_lazy_capture("tiny-dec", long_text, None, decoder_only, char_tokenizer, spinner=None)
    message = refused.value.args[0]
    assert message.template == OVER_OPS and message.values["ops"] == limit // 10**9
    n = message.values["fits"].values["n"]
    assert 1 <= n < S and len(caches.DECODES) == 0  # refused before the decode
    t = lambda k: max(1, -(-T * k // S))  # noqa: E731 - the output taken to shrink with the input (shorter_input)
    assert attention_page_ops(cfg, n, t(n)) <= limit < attention_page_ops(cfg, n + 1, t(n + 1))
