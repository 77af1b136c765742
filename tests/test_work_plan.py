"""Issue 30, part 2: the cost of a gradient method counted before it starts, in the budget's units.

What autograd keeps for a backward pass is measured here with torch's own saved_tensors_hooks (every tensor the
graph saves, counted once by its storage) and compared with budget.backward_bytes; integrated gradients' halving
loop is counted by the pieces Captum is really asked for."""

from __future__ import annotations

import pytest
import torch

from model import TransformerConfig, build_model
from model.analysis import attribution as attr
from model.analysis.attribution_methods import grad_x_input
from model.analysis.attribution_methods import integrated_gradients as ig
from model.analysis.budget import (
    OVER_MEMORY,
    OVER_OPS,
    BudgetExceeded,
    Plan,
    WorkBudget,
    attention_page_bytes,
    backward_bytes,
    capture_bytes,
    page_bytes,
)
from model.analysis.scored import Prepared
from tests.conftest import letters_model
from tests.i18n_helpers import msgid

LETTERS = "abcdefgh"


@pytest.fixture(scope="module")
def small():
    return letters_model(LETTERS, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2,
                         dropout=0.0, max_len=64)  # fmt: skip


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
    plan = Plan(rows=4, pieces=T, ops=0)
    bound = attr.attribute(model, tok, text, "hgfedcba", method="integrated_gradients", steps=2, plan=plan)
    assert sum(asked) == T and bound.scores.shape == free.scores.shape
    assert max(asked) <= max(1, plan.rows // 2)  # rows a pass: the plan's path points, over two points a piece


def test_a_large_ig_request_is_refused_with_steps_the_menu_offers(small):
    """attr_steps=128 under a small operations budget: refused before it starts, saying the most points per piece
    among the page's own choices that fit (never a value the menu does not offer)."""
    cfg = small[0].config
    S, T = 32, 33
    ops = 40 * T * ig.piece_ops(cfg, S, T, 1)  # forty one-point pieces a row
    budget = WorkBudget(256 * 2**20, ops)
    with pytest.raises(BudgetExceeded) as err:
        ig.plan(cfg, S, T, {"steps": 128}, budget)
    message = err.value.args[0]
    assert message.template == OVER_OPS and message.values["fits"].template == msgid(
        "{k} points per piece of the path fit this input."
    )
    k = message.values["fits"].values["k"]
    assert k in ig.STEPS
    assert T * ig.piece_ops(cfg, S, T, k) <= ops  # it fits ...
    assert all(T * ig.piece_ops(cfg, S, T, j) > ops for j in ig.STEPS if j > k)  # ... and is the largest that does
    plan = ig.plan(cfg, S, T, {"steps": k}, budget)
    assert T <= plan.pieces <= T * ig.MAX_PIECES_PER_ROW and plan.ops <= ops
    assert plan.rows * backward_bytes(cfg, S, T) <= 256 * 2**20 and plan.bytes <= 256 * 2**20


def test_ig_with_no_menu_value_that_fits_asks_for_a_shorter_input(small):
    cfg = small[0].config
    S, T = 32, 33
    least = min(ig.STEPS)
    ops = T * ig.piece_ops(cfg, S, T, least) - 1  # the smallest choice misses by one operation
    with pytest.raises(BudgetExceeded) as err:
        ig.plan(cfg, S, T, {"steps": 32}, WorkBudget(256 * 2**20, ops))
    fits = err.value.args[0].values["fits"]
    assert fits.template == msgid("an input of at most {n} tokens fits.")
    n = fits.values["n"]
    assert 1 <= n < S
    t = -(-T * n // S)
    assert t * ig.piece_ops(cfg, n, t, least) <= ops


def test_a_gradient_that_does_not_fit_even_one_row_is_refused(small):
    cfg = small[0].config
    with pytest.raises(BudgetExceeded) as err:
        grad_x_input.plan(cfg, 60, 60, {}, WorkBudget(backward_bytes(cfg, 60, 60) - 1))
    assert err.value.args[0].template == OVER_MEMORY


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


def test_a_gpt2_small_shape_reads_its_whole_context_on_the_attention_page(tmp_path):
    """A GPT-2-small-shaped folder (12 layers of 768, 12 heads, 50257 tokens, 1024 positions; the config read by the
    gpt2 format, no weights needed) reads its whole context on the Attention page within the default 256 MB: the
    page's capture is lazy (O(L·T·D) kept, one block of weights at a time) and its charts pooled to 256 x 256 cells;
    bertviz's model view of every map whole is counted up to 256 tokens, where it is offered."""
    import json

    from model.analysis.budget import WHOLE_VIEW_TOKENS, attention_view_bytes, lazy_capture_bytes, steps_for
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
    assert room + steps_for(cfg, room) >= 1024  # the prompt and its continuation fill the context
    S = 128
    n = S + steps_for(cfg, S) + 1  # the sequence the page draws: the prompt and its continuation
    assert n <= WHOLE_VIEW_TOKENS and attention_view_bytes(cfg, S, steps_for(cfg, S) + 1) >= 12 * 12 * 12 * n * n
    # the eager capture of every map at the whole context would not fit; the lazy one's kept numbers are O(L T D)
    assert capture_bytes(cfg, 1000, 25) > 8 * budget.max_bytes > 8 * lazy_capture_bytes(cfg, 1000, 25) // 2
    assert lazy_capture_bytes(cfg, 1000, 25) >= 4 * 12 * 1024 * 2 * 768  # every layer's queries and keys


def test_every_page_cost_is_a_page_and_a_cost_function():
    from types import SimpleNamespace

    from model.analysis import budget as budget_module
    from ui.shell.navigation import COSTS, PAGES, page_cost, page_list

    assert set(COSTS) <= set(PAGES)
    for name in COSTS:
        for path in (name, f"{name}-home"):  # the default page is served as NAME-home
            cost = page_cost(SimpleNamespace(url_path=path))
            assert callable(cost) and cost.__module__ == "model.analysis.budget"
    assert page_cost(SimpleNamespace(url_path="attention-home")) is attention_page_bytes
    assert page_cost(SimpleNamespace(url_path="inside")) is None  # page_bytes, the conservative default
    # the pages as st.navigation holds them: the one at the root URL reads its url_path as "" and is the default's
    for default in ("attention", "compare", "inside"):
        root = page_list(default)[list(PAGES).index(default)]  # the pages before it are one each
        expected = getattr(budget_module, COSTS[default]) if default in COSTS else None
        assert root.url_path == "" and page_cost(root, default) is expected
        assert page_cost(root, "inside" if default != "inside" else "attention") is not expected


SHORTER = ("an input of at most {n} tokens fits.", "a shorter input is needed.")


def test_every_attribution_method_counts_its_own_cost_before_it_starts(small):
    """A contract over the registry: each method module has a plan(cfg, S, T, settings, budget) that fits the
    budget it was given, and that refuses (a message id saying what fits) when the budget is smaller than it."""
    from model.analysis.attribution_methods.registry import METHODS

    cfg = small[0].config
    S, T = 24, 25
    settings = {c.name: c.default for module in METHODS.values() for c in module.SETTINGS}
    budget = WorkBudget(256 * 2**20, 10**13)
    for name, module in METHODS.items():
        plan = module.plan(cfg, S, T, settings, budget)
        assert isinstance(plan, Plan), name
        assert 0 < plan.bytes <= budget.max_bytes and 0 < plan.ops <= budget.ops, name
        smaller = WorkBudget(budget.max_bytes, plan.ops - 1 if not getattr(module, "ADAPTIVE", False) else 1)
        with pytest.raises(BudgetExceeded) as err:
            module.plan(cfg, S, T, settings, smaller)
        message = err.value.args[0]
        assert message.template in (OVER_OPS, OVER_MEMORY), name
        assert message.values["fits"].template in (
            *SHORTER,
            msgid("{k} points per piece of the path fit this input."),
        ), name


@pytest.mark.parametrize("name", ["flow", "occlusion", "rollout"])
def test_a_method_over_the_budget_names_the_input_that_fits(small, name):
    """Flow (a max-flow per output and source token) and occlusion (a pass per source token) on 24 tokens under
    an operations budget that pays for about half of that: refused, naming the longest input whose cost fits."""
    from model.analysis.attribution_methods.registry import METHODS

    module, cfg = METHODS[name], small[0].config
    S, T = 24, 25
    ops = module.plan(cfg, S, T, {}, WorkBudget(256 * 2**20, 10**13)).ops // 2
    budget = WorkBudget(256 * 2**20, ops)
    with pytest.raises(BudgetExceeded) as err:
        module.plan(cfg, S, T, {}, budget)
    fits = err.value.args[0].values["fits"]
    assert fits.template == SHORTER[0]
    n = fits.values["n"]
    assert module.plan(cfg, n, -(-T * n // S), {}, budget).ops <= ops  # n fits ...
    with pytest.raises(BudgetExceeded):  # ... n + 1 does not
        module.plan(cfg, n + 1, -(-T * (n + 1) // S), {}, budget)


def test_flow_counts_the_graph_it_solves(small):
    """The flow graph of a real capture has no more edges than flow.edges counts, and flow asks networkx for one
    max-flow per (output token, source token) pair, as its cost says."""
    import networkx as nx

    from model import capture
    from model.analysis import attribution_graph as graph
    from model.analysis.attribution_methods import flow

    model, tok = small
    cap = capture(model, tok, "abcdefgh" * 2, "hgfedcba")
    S, T = cap.encoder_self.shape[-1], cap.decoder_self.shape[-1]
    g = graph.flow_graph(cap.encoder_self, cap.decoder_self, cap.cross)
    assert g.number_of_edges() <= flow.edges(model.config, S, T) <= g.number_of_edges() + 2 * T  # a few below EPS
    calls = []
    original = nx.maximum_flow_value
    try:
        nx.maximum_flow_value = lambda *a, **k: calls.append(1) or original(*a, **k)
        graph.flow(cap.encoder_self, cap.decoder_self, cap.cross)
    finally:
        nx.maximum_flow_value = original
    assert len(calls) == S * T


def test_the_methods_of_one_request_fit_one_budget_together(small):
    """attribution.plans: the fixed costs first, integrated gradients' halving within what they leave."""
    cfg = small[0].config
    S, T = 24, 25
    settings = {"steps": 32}
    budget = WorkBudget(256 * 2**20, 10**12)
    plans = attr.plans(cfg, S, T, list(attr.METHODS), settings, budget)
    assert list(plans) == list(attr.METHODS)
    assert sum(p.ops for p in plans.values()) <= budget.ops
    alone = ig.plan(cfg, S, T, settings, budget)
    assert plans["integrated_gradients"].pieces < alone.pieces  # what the others took is not the halving's


def test_compare_cuts_both_models_so_that_together_they_fit():
    """Compare holds two models' runs at once: A (the sidebar) and B (the page) are both cut by
    compare_page_bytes, so that A's run and B's run together fit even when B is the larger model."""
    from types import SimpleNamespace

    from model.analysis.budget import compare_page_bytes, compare_view_bytes, greedy_bytes, steps_for
    from ui.shell.navigation import page_cost

    assert page_cost(SimpleNamespace(url_path="compare")) is compare_page_bytes
    a = TransformerConfig(src_vocab_size=32128, tgt_vocab_size=32128, d_model=512, n_heads=8, d_ff=2048,
                          n_encoder_layers=6, n_decoder_layers=6, max_len=512)  # fmt: skip
    b = TransformerConfig(src_vocab_size=32128, tgt_vocab_size=32128, d_model=768, n_heads=12, d_ff=3072,
                          n_encoder_layers=12, n_decoder_layers=12, max_len=512)  # fmt: skip
    budget = WorkBudget(256 * 2**20)

    def side(cfg, S):  # one model's decode, recorded pass and three maps
        steps = steps_for(cfg, S)
        return max(capture_bytes(cfg, S, steps + 1), greedy_bytes(cfg, S, steps)) + compare_view_bytes(
            cfg, S, steps + 1
        )

    room_a, room_b = budget.source_room(a, compare_page_bytes), budget.source_room(b, compare_page_bytes)
    assert 1 <= room_b < room_a < a.max_len
    S = min(room_a, room_b)  # B reads what A read, cut further
    assert side(a, S) + side(b, S) <= budget.max_bytes
    assert side(b, room_b + 1) * 2 > budget.max_bytes  # and no more than that


def test_a_lecture_pack_over_the_budget_is_refused_before_any_input_runs(small):
    from pack.records import pack_need, pack_records

    model, tok = small
    texts = ["abcdefgh" * 4] * 5
    ran = []
    run = lambda text: ran.append(text)  # noqa: E731 - never reached
    S = len("abcdefgh" * 4) + 1
    need_two = pack_need(model.config, [S] * 2)
    budget = WorkBudget(need_two[0], need_two[1])  # two inputs fit, not five
    with pytest.raises(BudgetExceeded) as err:
        pack_records(model, tok, texts, run=run, budget=budget, live=False)
    message = err.value.args[0]
    assert message.template == OVER_MEMORY and message.values["what"].values["n"] == 5
    assert message.values["fits"].template == "its first {n} inputs fit." and message.values["fits"].values["n"] == 2
    assert ran == []  # refused before any input ran


def test_an_experiment_over_the_budget_says_how_many_examples_fit(small):
    from model.analysis.budget import admit_examples, decoding_need

    cfg = small[0].config
    ops = decoding_need(cfg, 100, 30, 30)[1]
    budget = WorkBudget(256 * 2**20, ops)
    assert admit_examples(cfg, "x", 100, 30, 30, budget).ops == ops
    with pytest.raises(BudgetExceeded) as err:
        admit_examples(cfg, "x", 250, 30, 30, budget)
    fits = err.value.args[0].values["fits"]
    assert err.value.args[0].template == OVER_OPS and fits.template == "{n} examples fit."
    assert fits.values["n"] == 100  # the cost is linear in the examples: exactly the hundred counted above


def test_the_average_over_fresh_examples_is_counted_and_names_the_menu_value_that_fits(monkeypatch):
    """The Attribution page's average over n fresh examples: every example's methods counted at the demo's longest
    trained input, n of them within one request; too many: refused, naming a count of the page's own menu."""
    from types import SimpleNamespace

    from model import load_checkpoint
    from tests.apptest_helpers import ROOT
    from ui.serving.caches import trained_longest
    from ui.views import attribution_ui as ui

    folder = ROOT / "checkpoints" / "reverse"
    model, _ = load_checkpoint(str(folder))
    card = __import__("json").loads((folder / "card.json").read_text())
    session = SimpleNamespace(model=model, card=card)
    methods, settings = ["rollout", "occlusion"], {}
    S = trained_longest(card) + 2
    one = sum(
        p.ops for p in attr.plans(model.config, S, S, methods, settings, WorkBudget(256 * 2**20, 10**15)).values()
    )
    monkeypatch.setenv("VIZ_WORK_GOPS", str(-(-20 * one // 10**9)))  # twenty examples fit, fifty do not
    assert 50 * one > -(-20 * one // 10**9) * 10**9
    assert set(ui.fresh_plans(session, 20, settings, methods)) == set(methods)
    with pytest.raises(BudgetExceeded) as err:
        ui.fresh_plans(session, 50, settings, methods)
    message = err.value.args[0]
    assert message.template == ui.FRESH_OVER and message.values["n"] == 50
    assert (
        message.values["fits"].template == msgid("{k} fresh examples fit.") and message.values["fits"].values["k"] == 20
    )
