"""Issue 30, part 2: the cost of a gradient method counted before it starts, in the budget's units.

What autograd keeps for a backward pass is measured here with torch's own saved_tensors_hooks (every tensor the
graph saves, counted once by its storage) and compared with budget.backward_bytes; integrated gradients' halving
loop is counted by the pieces Captum is really asked for."""

from __future__ import annotations

import pytest
import torch

from model import TransformerConfig, Vocab, build_model
from model.analysis import attribution as attr
from model.analysis.budget import (
    MAX_PIECES_PER_ROW,
    BudgetExceeded,
    GradientPlan,
    WorkBudget,
    attention_page_bytes,
    backward_bytes,
    capture_bytes,
    gradient_plan,
    ig_piece_ops,
    page_bytes,
)
from model.analysis.scored import Prepared
from model.text.tokenizer import Tokenizer

LETTERS = "abcdefgh"


@pytest.fixture(scope="module")
def small():
    vocab = Vocab.build(LETTERS, level="char")
    cfg = TransformerConfig(
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=32, n_heads=4, d_ff=64,
        n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=64,
    )  # fmt: skip
    return build_model(cfg, seed=0).eval(), Tokenizer(vocab, vocab)


def saved_bytes(model, fn) -> int:
    """Bytes of every distinct storage autograd saves for the backward pass while fn() runs, the model's own
    weights and buffers left out (they are in memory anyway)."""
    resident = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor):
        storage = t.untyped_storage()
        if storage.data_ptr() not in resident:
            seen[storage.data_ptr()] = max(seen.get(storage.data_ptr(), 0), storage.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(seen.values())


@pytest.mark.parametrize("S, T, rows", [(5, 4, 1), (20, 12, 3), (40, 30, 8)])
def test_backward_bytes_bound_what_autograd_keeps(small, S, T, rows):
    model, _ = small
    cfg = model.config
    inputs = [cfg.bos_id] + [3 + (i % 5) for i in range(T - 1)]  # T decoder inputs
    scored = inputs[1:] + [cfg.eos_id]
    src = [3 + (i % 5) for i in range(S)]
    forward = attr.output_log_prob(model, Prepared(src, [], inputs, scored))
    x = model.src_embed(torch.tensor([src])).detach().expand(rows, -1, -1)
    x = x.clone().requires_grad_()
    kept = saved_bytes(model, lambda: forward(x, torch.arange(rows) % T).sum())
    need = backward_bytes(cfg, S, T, rows)
    assert kept <= need  # an upper bound ...
    assert kept >= need / 8  # ... of the right size, not a multiple of it


@pytest.mark.parametrize("shape", ["decoder-only", "encoder-only"])
def test_backward_bytes_bound_what_autograd_keeps_in_one_stack(shape):
    """Issue 32: a decoder-only model's gradient runs the prompt and the continuation as one sequence, an
    encoder-only model's its head over every position: backward_bytes(cfg, prompt, outputs) bounds what autograd keeps."""
    decoder = shape == "decoder-only"
    cfg = TransformerConfig(
        src_vocab_size=40, tgt_vocab_size=40, d_model=32, n_heads=4, d_ff=64, dropout=0.0, max_len=96, shape=shape,
        n_encoder_layers=0 if decoder else 2, n_decoder_layers=2 if decoder else 0,
    )  # fmt: skip
    model = build_model(cfg, seed=0).eval()
    P, T = 20, 30
    prompt = [3 + (i % 7) for i in range(P)]
    if decoder:  # the continuation's T - 1 tokens follow the prompt, then </s>
        scored = [3 + (i % 5) for i in range(T - 1)] + [cfg.eos_id]
        prep = Prepared(prompt, [], prompt + scored[:-1], scored, first=P - 1)
    else:  # every position scored
        prep, T = Prepared(prompt, [], [], prompt), P
    forward = attr.output_log_prob(model, prep)
    x = model.src_embed(torch.tensor([prompt])).detach().expand(3, -1, -1).clone().requires_grad_()
    kept = saved_bytes(model, lambda: forward(x, torch.arange(3)).sum())
    need = backward_bytes(cfg, P, T, 3)
    assert need / 8 <= kept <= need


def test_integrated_gradients_never_runs_more_pieces_than_its_plan(small, monkeypatch):
    """A plan of one piece per row: the halving loop, which would split rows whose quadrature misses, asks
    Captum for exactly T pieces in all; without the plan it asks for more on this input (the bound binds)."""
    from captum.attr import IntegratedGradients

    model, tok = small
    asked = []
    original = IntegratedGradients.attribute

    def counting(self, inputs, *args, **kwargs):
        asked.append(len(inputs))
        return original(self, inputs, *args, **kwargs)

    monkeypatch.setattr(IntegratedGradients, "attribute", counting)
    text = "abcdefgh" * 3
    free = attr.attribute(model, tok, text, "hgfedcba", method="integrated_gradients", steps=2)
    T = len(free.output_tokens)
    assert sum(asked) > T  # two points a piece miss on this random model: the loop halves
    asked.clear()
    plan = GradientPlan(rows=4, pieces=T, ops=0)
    bound = attr.attribute(model, tok, text, "hgfedcba", method="integrated_gradients", steps=2, plan=plan)
    assert sum(asked) == T and bound.scores.shape == free.scores.shape
    assert max(asked) <= max(1, plan.rows // 2)  # rows a pass: the plan's path points, over two points a piece


def test_a_large_ig_request_is_refused_with_the_steps_that_fit(small):
    """attr_steps=1024 under a small operations budget: refused before it starts, saying how many points fit."""
    cfg = small[0].config
    S, T = 32, 33
    ops = 40 * T * ig_piece_ops(cfg, S, T, 1)  # forty one-point pieces a row
    with pytest.raises(BudgetExceeded) as err:
        gradient_plan(cfg, S, T, "integrated_gradients", 1024, WorkBudget(256 * 2**20), ops=ops)
    fits = err.value.args[0].values["fits"]
    k = fits.values["k"]
    assert T * ig_piece_ops(cfg, S, T, k) <= ops < T * ig_piece_ops(cfg, S, T, k + 1)
    plan = gradient_plan(cfg, S, T, "integrated_gradients", k, WorkBudget(256 * 2**20), ops=ops)
    assert T <= plan.pieces <= T * MAX_PIECES_PER_ROW and plan.ops <= ops
    assert plan.rows * backward_bytes(cfg, S, T) <= 256 * 2**20


def test_a_gradient_that_does_not_fit_even_one_row_is_refused(small):
    cfg = small[0].config
    with pytest.raises(BudgetExceeded):
        gradient_plan(cfg, 60, 60, "grad_x_input", 32, WorkBudget(backward_bytes(cfg, 60, 60) - 1))


def test_the_attention_page_counts_what_it_computes():
    """A t5-base-shaped model (12 + 12 layers, 12 heads, d_model 768, 32k vocabulary): the Attention page needs no
    Q, K, V and draws one kind of attention at a time: 128 tokens fit the default 256 MB (the estimate of every
    page, with Q, K, V and every map's figure, cut it to 51)."""
    cfg = TransformerConfig(
        src_vocab_size=32128, tgt_vocab_size=32128, d_model=768, n_heads=12, d_ff=3072,
        n_encoder_layers=12, n_decoder_layers=12, max_len=512, positional="relative",
    )  # fmt: skip
    budget = WorkBudget(256 * 2**20)
    assert budget.source_room(cfg, attention_page_bytes) >= 128
    assert budget.source_room(cfg) < 64  # the conservative estimate the other pages still use
    assert attention_page_bytes(cfg, 128) >= capture_bytes(cfg, 128, 129) and page_bytes(cfg, 128) > 2 * 2**28


def test_a_gpt2_small_shape_reads_128_tokens_on_the_attention_page(tmp_path):
    """Issue 32: a GPT-2-small-shaped folder (12 layers of 768, 12 heads, 50257 tokens, 1024 positions; the config
    read by the gpt2 format, no weights needed) reads 128 prompt tokens on the Attention page within the default
    256 MB, counted over its one sequence (prompt and the 50 tokens it continues by); a much longer one is cut."""
    import json

    from model.analysis.budget import attention_view_bytes, steps_for
    from model.checkpoints.formats import gpt2
    from model.checkpoints.formats.source import Source

    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12,
                    "n_head": 12})
    )  # fmt: skip
    cfg = gpt2.gpt2_config(gpt2.read_gpt2_config(Source(tmp_path)), "config.json")
    assert cfg.shape == "decoder-only" and cfg.max_len == 1024
    budget = WorkBudget(256 * 2**20)
    room = budget.source_room(cfg, attention_page_bytes)
    assert room - 1 >= 128  # apply_budget keeps room - 1 tokens of the typed text
    S = 128
    n = S + steps_for(cfg, S) + 1  # the sequence the page draws: the prompt and its continuation
    # bertviz's model view of every layer over the whole sequence is one of the views counted
    assert attention_view_bytes(cfg, S, steps_for(cfg, S) + 1) >= 12 * 12 * 12 * n * n
    assert attention_page_bytes(cfg, S) >= capture_bytes(cfg, S, steps_for(cfg, S) + 1) + 12 * 12 * 12 * n * n
    assert room < 256 and attention_page_bytes(cfg, 512) > budget.max_bytes  # a much longer prompt is still cut


def test_every_page_cost_is_a_page_and_a_cost_function():
    from types import SimpleNamespace

    from ui.navigation import COSTS, PAGES, page_cost

    assert set(COSTS) <= set(PAGES)
    for name in COSTS:
        for path in (name, f"{name}-home"):  # the default page is served as NAME-home
            cost = page_cost(SimpleNamespace(url_path=path))
            assert callable(cost) and cost.__module__ == "model.analysis.budget"
    assert page_cost(SimpleNamespace(url_path="attention-home")) is attention_page_bytes
    assert page_cost(SimpleNamespace(url_path="inside")) is None  # page_bytes, the conservative default
