"""The lazy capture (model/analysis/lazy_capture.py) against transformers' eager attention on tiny random-weight
folders of each family the app opens (GPT-2, Llama with grouped-query attention, Qwen2 with q/k/v biases, BERT with
its masked-LM head, T5's relative bias, BART's and Marian's cross-attention): every map of every layer and head
within 1e-5, computed in row blocks of a few rows (lengths that are not a multiple of the block), with a head
switched off (transformers with that head's slice of the output projection's input zeroed by a hook), the summaries
against numpy on transformers' full maps, the pooled map against numpy's pooling of the full map, and the output side
(top tokens, next-token log-probabilities, a position's distribution) against transformers' logits. The project's own
positional kinds (which transformers does not have in these shapes) against the weights of the model's explicit
softmax path, recorded in the same pass."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model import LazyCapture, capture, load_checkpoint
from model.network.config import POSITIONAL_KINDS
from model.network.recording import record
from model.text.inputs import as_batch
from tests.conftest import make_tiny
from tests.hf_families import build_bart, build_t5
from tests.hf_one_stack import BUILDERS
from tests.test_import_marian import marian_dir  # noqa: F401  (the module's tiny Marian folder, as a fixture)

pytest.importorskip("transformers")
pytestmark = pytest.mark.filterwarnings("ignore")

TOL = 1e-5
BLOCK = 3
TEXT = "birds sang while the dog ran to the red house and the cat sat on a mat"
TARGET = "the red house and a dog ran on the mat"
ONE_STACK = ("gpt2", "llama-gqa", "qwen2", "bert-mlm")


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("lazy-hf")
    built = {name: BUILDERS[name](root) for name in ONE_STACK}
    built["t5"], built["bart"] = build_t5(root, False), build_bart(root)
    return {name: (fam, *load_checkpoint(fam.folder)) for name, fam in built.items()}


@torch.no_grad()
def reference(fam, cap: LazyCapture) -> tuple[dict[str, list[np.ndarray]], np.ndarray | None]:
    """transformers' eager maps {kind: [(H, Tq, Tk) per layer]} and log-probs (N, V) on the capture's own ids."""
    src = torch.tensor([cap.source_ids.tolist()])
    tgt = torch.tensor([cap.target_ids.tolist()])
    if len(cap.source_ids) and len(cap.target_ids):
        out = fam.hf(input_ids=src, decoder_input_ids=tgt, output_attentions=True)
        maps = {"encoder_self": out.encoder_attentions, "decoder_self": out.decoder_attentions}
        maps["cross"] = out.cross_attentions
    else:
        out = fam.hf(input_ids=tgt if len(cap.target_ids) else src, output_attentions=True)
        maps = {"decoder_self" if len(cap.target_ids) else "encoder_self": out.attentions}
    logits = getattr(out, "logits", None)
    logp = None if logits is None else logits[0].double().log_softmax(-1).numpy()
    return {kind: [layer[0].numpy() for layer in layers] for kind, layers in maps.items()}, logp


def lazy_of(name, fam, model, tok, **kwargs) -> LazyCapture:
    """The lazy capture of TEXT (and TARGET) in blocks of a few rows, a number that does not divide the lengths."""
    target = TARGET if name in ("t5", "bart") else None
    cap = capture(model, tok, TEXT, target, lazy=True, block=BLOCK, **kwargs)
    cap.block = next(b for b in range(BLOCK, 9) if all(cap.shape(kind)[0] % b for kind in cap.kinds))
    return cap


def assert_maps_equal(cap: LazyCapture, maps: dict[str, list[np.ndarray]]) -> None:
    for kind, layers in maps.items():
        assert cap.n_layers(kind) == len(layers) >= 2
        for layer, theirs in enumerate(layers):
            assert cap.shape(kind) == theirs.shape[1:]
            for head in range(cap.n_heads):
                np.testing.assert_allclose(
                    cap.map(kind, layer, head), theirs[head], atol=TOL, err_msg=f"{kind} {layer}"
                )


def numpy_summary(layers: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The summaries' definitions on full maps (H, Tq, Tk) per layer, written out in numpy."""
    out = {}
    Tq, Tk = layers[0].shape[1:]
    rows = np.arange(Tq)
    prev = rows[(rows >= 1) & (rows - 1 < Tk)]
    diag = rows[rows < Tk]
    distance = np.abs(rows[:, None] - np.arange(Tk)[None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = [np.where(m > 0, np.log(np.where(m > 0, m, 1)), 0.0) for m in layers]
    out["first_token"] = np.stack([m[:, :, 0].mean(-1) for m in layers])
    out["previous_token"] = np.stack([m[:, prev, prev - 1].mean(-1) for m in layers])
    out["diagonal"] = np.stack([m[:, diag, diag].mean(-1) for m in layers])
    out["mean_distance"] = np.stack([(m * distance).sum(-1).mean(-1) for m in layers])
    out["entropy"] = np.stack([-(m * lg).sum(-1).mean(-1) for m, lg in zip(layers, logs)])
    return out


@pytest.mark.parametrize("name", [*ONE_STACK, "t5", "bart"])
def test_every_map_equals_transformers_in_row_blocks(families, name):
    fam, model, tok = families[name]
    cap = lazy_of(name, fam, model, tok)
    maps, _ = reference(fam, cap)
    assert all(cap.shape(kind)[0] % cap.block for kind in maps), "lengths that are not a multiple of the block"
    assert_maps_equal(cap, maps)
    eager = capture(model, tok, TEXT, TARGET if name in ("t5", "bart") else None)  # the same pass, materialized
    for kind, layers in maps.items():
        np.testing.assert_allclose(getattr(eager, kind), np.stack(layers), atol=TOL, err_msg=kind)


@pytest.mark.parametrize("name", ["gpt2", "qwen2", "t5", "bart"])
def test_summaries_rows_and_pooling_equal_numpy_on_the_full_maps(families, name):
    fam, model, tok = families[name]
    cap = lazy_of(name, fam, model, tok)
    maps, _ = reference(fam, cap)
    for kind, layers in maps.items():
        summary = cap.summary(kind)
        for stat, want in numpy_summary(layers).items():
            assert summary[stat].shape == (len(layers), cap.n_heads)
            np.testing.assert_allclose(summary[stat], want, atol=1e-5, err_msg=f"{kind} {stat}")
        Tq, Tk = cap.shape(kind)
        full = layers[1][cap.n_heads - 1]
        np.testing.assert_allclose(cap.map_rows(kind, 1, cap.n_heads - 1, slice(2, Tq - 1)), full[2 : Tq - 1], atol=TOL)
        size = 4
        fq, fk = math.ceil(Tq / size), math.ceil(Tk / size)
        padded = np.full((math.ceil(Tq / fq) * fq, math.ceil(Tk / fk) * fk), np.nan)
        padded[:Tq, :Tk] = full
        cells = padded.reshape(padded.shape[0] // fq, fq, padded.shape[1] // fk, fk)
        for how, reduce in (("max", np.nanmax), ("mean", np.nanmean)):
            pooled = cap.pooled(kind, 1, cap.n_heads - 1, size=size, how=how)
            np.testing.assert_allclose(pooled, reduce(cells, axis=(1, 3)), atol=TOL, err_msg=how)


@pytest.mark.parametrize("name", ["gpt2", "qwen2", "bert-mlm", "t5"])
def test_top_tokens_next_token_and_a_distribution_equal_transformers(families, name):
    fam, model, tok = families[name]
    cap = lazy_of(name, fam, model, tok, top_k=3)
    _, logp = reference(fam, cap)
    assert cap.top_ids.shape == (len(logp), 3)
    np.testing.assert_allclose(cap.top_log_probs, np.sort(logp, -1)[:, ::-1][:, :3], atol=TOL)
    np.testing.assert_array_equal(cap.top_ids[:, 0], logp.argmax(-1))
    ids = cap.target_ids if len(cap.target_ids) else cap.source_ids
    actual = ids[1:] if len(cap.target_ids) else ids  # a decoder row predicts the next input; a masked LM its own
    want = logp[np.arange(len(actual)), actual]
    np.testing.assert_allclose(cap.next_log_probs[: len(actual)], want, atol=TOL)
    assert np.isnan(cap.next_log_probs[len(actual) :]).all()
    np.testing.assert_allclose(cap.distribution(len(logp) // 2), logp[len(logp) // 2], atol=TOL)


def zero_head_hook(layer_module, head: int, n_heads: int):
    """A forward pre-hook on a transformers output projection: the head's slice of its input zeroed."""

    def hook(module, args):
        x = args[0].clone()
        width = x.size(-1) // n_heads
        x[..., head * width : (head + 1) * width] = 0
        return (x, *args[1:])

    return layer_module.register_forward_pre_hook(hook)


@pytest.mark.parametrize(
    "name, kind, where",
    [
        ("gpt2", "decoder_self", lambda hf: hf.transformer.h[0].attn.c_proj),
        ("llama-gqa", "decoder_self", lambda hf: hf.model.layers[0].self_attn.o_proj),
        ("bart", "cross", lambda hf: hf.model.decoder.layers[0].encoder_attn.out_proj),
    ],
)
def test_a_switched_off_head_equals_transformers_with_that_head_zeroed(families, name, kind, where):
    fam, model, tok = families[name]
    head = 1
    plain = lazy_of(name, fam, model, tok)
    cap = lazy_of(name, fam, model, tok, ablate=[(kind, 0, head)])
    handle = zero_head_hook(where(fam.hf), head, cap.n_heads)
    try:
        maps, _ = reference(fam, cap)
    finally:
        handle.remove()
    assert_maps_equal(cap, maps)
    np.testing.assert_allclose(cap.map(kind, 0, head), plain.map(kind, 0, head), atol=TOL)  # its own map: unchanged
    assert np.abs(cap.map("decoder_self", 1, 0) - plain.map("decoder_self", 1, 0)).max() > 1e-3  # later ones: changed
    assert cap.interventions == {"ablate": [[kind, 0, head]]}


@torch.no_grad()
def explicit_maps(model, cap: LazyCapture) -> dict[str, list[np.ndarray]]:
    """The weights of the model's explicit softmax path (a weights-recording pass) on the capture's ids."""
    with record(model) as rec:
        if model.config.has_encoder:
            memory, mask = model.encode(as_batch(model, cap.source_ids.tolist()))
        if model.config.has_decoder:
            model.decode(
                as_batch(model, cap.target_ids.tolist()), *((memory, mask) if model.config.has_encoder else ())
            )
    out: dict[str, list[np.ndarray]] = {}
    for (kind, _), maps in sorted(rec.attention.items()):
        out.setdefault(kind, []).append(maps[-1][0].numpy())
    return out


@pytest.mark.parametrize("shape", ["encoder-decoder", "decoder-only", "encoder-only"])
@pytest.mark.parametrize("kind", POSITIONAL_KINDS)
def test_each_positional_kind_in_each_shape(char_tokenizer, kind, shape):
    layers = {"decoder-only": dict(n_encoder_layers=0), "encoder-only": dict(n_decoder_layers=0)}.get(shape, {})
    model = make_tiny(char_tokenizer, seed=11, positional=kind, shape=shape, n_kv_heads=1, **layers)
    text, target = "the quick brown fox jumps over", "a lazy dog sat"
    cap = capture(model, char_tokenizer, text, target if shape != "encoder-only" else None, lazy=True, block=4)
    maps = explicit_maps(model, cap)
    assert_maps_equal(cap, maps)
    for name, layers_ in maps.items():
        for stat, want in numpy_summary(layers_).items():
            np.testing.assert_allclose(cap.summary(name)[stat], want, atol=1e-5, err_msg=f"{name} {stat}")


def test_marian_cross_attention_at_its_longest_source(marian_dir):  # noqa: F811
    transformers = pytest.importorskip("transformers")
    model, tok = load_checkpoint(marian_dir)
    hf = transformers.MarianMTModel.from_pretrained(str(marian_dir), attn_implementation="eager").eval()
    words = " ".join(["a b c d e f g"] * 20)
    cap = capture(model, tok, words, "a b c", lazy=True, block=BLOCK)
    assert len(cap.source_ids) == model.config.max_len or len(cap.source_ids) > 2 * BLOCK
    fam = type("F", (), {"hf": hf})
    maps, _ = reference(fam, cap)
    assert_maps_equal(cap, maps)


def test_what_it_keeps_is_queries_and_keys_per_key_value_head(families):
    """Qwen2's 6 query heads read 2 key/value heads: the capture keeps 2 keys a token, never an expanded copy, and
    no weights at all (the budget's lazy_capture_bytes counts exactly these numbers)."""
    fam, model, tok = families["qwen2"]
    cap = lazy_of("qwen2", fam, model, tok)
    cfg, (T, _) = model.config, cap.shape("decoder_self")
    kept = [(rec.q, rec.k) for rec in cap._records.values()]
    assert len(kept) == cfg.n_decoder_layers
    for q, k in kept:
        assert (
            q.shape == (cfg.n_heads, T, cfg.d_head) and k.shape == (cfg.kv_heads, T, cfg.d_head) and cfg.kv_heads == 2
        )
    held = sum(v.numel() for v in vars(cap).values() if isinstance(v, torch.Tensor | np.ndarray) and v.ndim >= 3)
    assert held == 0  # no (L, H, T, T) or (T, T) array beside the queries and keys


@pytest.mark.parametrize("kind", ["alibi", "relative", "rope"])
def test_a_capture_crosses_a_process_boundary(char_tokenizer, kind):
    """A worker process sends its capture back pickled: the maps are the same after, the output layer is left out
    (distribution() asks for attach(model)), and the capture holds no (T, T) array to send."""
    import pickle

    model = make_tiny(char_tokenizer, seed=12, positional=kind)
    cap = capture(model, char_tokenizer, "the quick brown fox", "a lazy dog", lazy=True, block=4)
    back = pickle.loads(pickle.dumps(cap))
    for name in cap.kinds:
        np.testing.assert_array_equal(back.map(name, 1, 2), cap.map(name, 1, 2))
    np.testing.assert_array_equal(back.top_ids, cap.top_ids)
    with pytest.raises(ValueError, match="no output distribution"):
        back.distribution(0)
    np.testing.assert_array_equal(back.attach(model).distribution(3), cap.distribution(3))


def test_the_pass_runs_in_a_limited_worker_with_progress_and_is_cached(char_tokenizer):
    """The forward of a long input runs in a worker process (ui/serving/workers.run_limited): it reports each attention
    module done, its capture comes back with the same maps and gets the output layer back; the server's cache
    hands the same capture to the next call (a head switch computes that head's map only)."""
    from ui.serving.caches import LAZY, cached_lazy_capture
    from ui.serving.workers import run_limited

    model = make_tiny(char_tokenizer, seed=13, positional="alibi")
    text, target = "the quick brown fox", "a lazy dog"
    seen = []
    cap = run_limited(capture, model, char_tokenizer, text, target, lazy=True, progress=None,
                      on_progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    here = capture(model, char_tokenizer, text, target, lazy=True)
    total = sum(1 for _ in model.attention_modules())
    assert (total, total) in seen and all(t == total for d, t in seen if d >= 0)
    for kind in here.kinds:
        np.testing.assert_allclose(cap.map(kind, 0, 1), here.map(kind, 0, 1), atol=1e-6)
    np.testing.assert_allclose(cap.attach(model).distribution(2), here.distribution(2), atol=1e-6)
    LAZY.clear()
    first = cached_lazy_capture("tiny", text, target, model, char_tokenizer, spinner=None)
    assert cached_lazy_capture("tiny", text, target, model, char_tokenizer, spinner=None) is first
    assert LAZY.bytes >= sum(r.q.numel() * 4 for r in first._records.values())


def test_views_of_every_head_run_in_a_worker_when_long_with_the_same_numbers(char_tokenizer, monkeypatch):
    """The summaries and the pooled maps of every head (the overview, the head grid) cost a pass over every map:
    counted (map_ops) and, past the in-process limit, computed in a limited worker; what comes back equals the
    same capture's own computation here, and the summaries are kept with the capture."""
    from ui.serving import caches, workers
    from ui.views import attention_long

    model = make_tiny(char_tokenizer, seed=14, positional="rope")
    text, target = "the quick brown fox", "a lazy dog"
    cap, here = (capture(model, char_tokenizer, text, target, lazy=True, block=4) for _ in range(2))
    forks, real = [], workers.run_limited
    monkeypatch.setattr(workers, "run_limited", lambda *a, **k: forks.append(1) or real(*a, **k))
    monkeypatch.setattr(caches, "IN_PROCESS_OPS", 0)
    for kind in cap.kinds:
        L = cap.n_layers(kind)
        got = attention_long.summary(cap, kind)
        assert cap.summarized(kind) and len(forks) == 1
        for name, value in here.summary(kind).items():
            np.testing.assert_allclose(got[name], value, atol=1e-6)
        assert attention_long.summary(cap, kind) is cap.summary(kind) and len(forks) == 1  # kept: no second fork
        pairs = [(layer, head) for layer in range(L) for head in range(cap.n_heads)] + [(0, "average")]
        pooled = attention_long.pooled_heads(cap, kind, pairs, 3)
        assert len(forks) == 2
        for (layer, head), p in zip(pairs, pooled, strict=True):
            expected = attention_long._pool_one(here, kind, layer, head, 3)  # here, in this process
            np.testing.assert_allclose(p.max, expected.max, atol=1e-6)
            np.testing.assert_allclose(p.mean, expected.mean, atol=1e-6)
        forks.clear()
