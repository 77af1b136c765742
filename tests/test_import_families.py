"""The Llama-like Hugging Face families (every format module with a FAMILY table: Mistral, Gemma 2, Gemma 3, Phi-3,
OLMo 2, ...) against transformers itself: the same token ids from the same tokenizer.json, log-probabilities and
every attention map of every layer and query head within 1e-4 (eager attention), greedy continuations of 20 tokens
equal to generate(do_sample=False), on a text longer than the sliding window. The list of families is the format
registry's; each needs a builder in harness/hf_decoders.py (a tiny random folder written with transformers)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from harness.hf_decoders import BUILDERS, WINDOW, build, build_loaded
from model.analysis.capture import capture
from model.checkpoints.checkpoint import CheckpointError
from model.checkpoints.formats import REGISTRY
from model.checkpoints.formats.source import Source
from model.checkpoints.loading import load_checkpoint
from model.decoding.greedy import greedy_decode
from tests.i18n_helpers import msgid
from tests.import_helpers import assert_loaded_without_copies

FAMILIES = [fmt.NAME for fmt in REGISTRY if hasattr(fmt, "FAMILY")]
TEXT = "birds sang while the dog ran to the red house and the cat sat on a mat"  # 23 tokens: past the window


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    return build_loaded(FAMILIES, tmp_path_factory.mktemp("families"))


def test_every_registered_family_has_a_builder_and_its_own_model_type():
    assert {"llama", "mistral", "gemma2", "gemma3", "phi3", "olmo2", "qwen3"} <= set(FAMILIES)
    assert set(FAMILIES) <= set(BUILDERS), "a family of the registry without a tiny folder in harness/hf_decoders.py"
    types = [t for fmt in REGISTRY for t in getattr(fmt, "MODEL_TYPES", {})]
    assert len(types) == len(set(types))


@pytest.mark.parametrize("name", FAMILIES)
def test_log_probs_and_every_attention_map_match_transformers(families, name):
    folder, hf, fast, model, tok = families[name]
    ids = fast(TEXT)["input_ids"]
    assert len(ids) > WINDOW + 2
    cap = capture(model, tok, TEXT)
    assert cap.target_ids.tolist() == ids
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_attentions=True)
    np.testing.assert_allclose(cap.log_probs, out.logits[0].log_softmax(-1).numpy(), atol=1e-4)
    maps = torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, T, T) per query head
    assert cap.decoder_self.shape == maps.shape
    np.testing.assert_allclose(cap.decoder_self, maps, atol=1e-4)
    kinds = model.config.kinds
    assert kinds == [
        {"sliding_attention": "local", "full_attention": "global"}[t]
        for t in getattr(hf.config, "layer_types", None) or ["full_attention"] * len(kinds)
    ] or (hf.config.sliding_window is not None and set(kinds) == {"local"})
    T = len(ids)
    far = np.tril(np.ones((T, T), dtype=bool), -model.config.sliding_window) if "local" in kinds else None
    for layer, kind in enumerate(kinds):  # the window matters: a local layer's far keys get nothing, a global's do
        if kind == "local":
            assert np.all(cap.decoder_self[layer][:, far] == 0)
        elif far is not None:
            assert np.all(cap.decoder_self[layer][:, far].sum(-1) > 0)


@pytest.mark.parametrize("name", FAMILIES)
def test_greedy_continuation_of_20_tokens_equals_generate(families, name):
    folder, hf, fast, model, tok = families[name]
    ids = fast(TEXT)["input_ids"]
    with torch.no_grad():
        out = hf.generate(torch.tensor([ids]), max_new_tokens=20, do_sample=False, pad_token_id=model.config.eos_id)
    want = out[0, len(ids) :].tolist()
    assert greedy_decode(model, tok, TEXT, max_new_tokens=20).output_ids == want
    assert greedy_decode(model, tok, TEXT, max_new_tokens=20, use_cache=False).output_ids == want


@pytest.mark.parametrize("name", FAMILIES)
def test_the_weights_are_loaded_without_copies(families, name, monkeypatch):
    """Phi-3's fused qkv_proj and gate_up_proj too: their rows are views, never copies."""
    assert_loaded_without_copies(families[name][0], monkeypatch)


def test_llamas_attention_bias_with_mlp_bias_puts_a_bias_on_every_projection(tmp_path):
    """Llama's attention_bias and mlp_bias (both true): a bias on q, k, v, o and the three feed-forward projections,
    read from the folder and matching transformers' log-probabilities."""
    folder, hf, fast = build("llama", tmp_path, attention_bias=True, mlp_bias=True)
    model, tok = load_checkpoint(folder)
    ids = fast(TEXT)["input_ids"]
    with torch.no_grad():
        want = hf(torch.tensor([ids])).logits[0].log_softmax(-1).numpy()
    np.testing.assert_allclose(capture(model, tok, TEXT).log_probs, want, atol=1e-4)
    layer = model.decoder.layers[0]
    assert layer.self_attn.out_proj.bias is not None and layer.ff.linear3.bias is not None


def test_what_each_family_changes_is_read_from_its_config(families):
    gemma2, gemma3 = families["gemma2"][3].config, families["gemma3"][3].config
    assert (gemma2.attn_softcap, gemma2.final_softcap, gemma2.query_scale) == (3.0, 2.0, 12.0)
    assert gemma2.norm == "rms_plus_one" and gemma2.block_norms == "sandwich" and gemma2.scale_embeddings
    assert (gemma3.pe_base, gemma3.local_pe_base, gemma3.qk_norm, gemma3.attn_softcap) == (1e6, 100.0, "head", None)
    assert families["olmo2"][3].config.qk_norm == "all" and families["olmo2"][3].config.block_norms == "output"
    assert families["phi3"][3].config.rope_dim == 4 and families["mistral"][3].config.sliding_window == WINDOW


def _messages(message) -> list:
    """Every i18n Message inside a CheckpointError's message: itself, its values and the parts it joins."""
    found = [message]
    for inner in (*message.values.values(), *message.parts):
        if hasattr(inner, "template"):
            found += _messages(inner)
    return found


def _refusals(err) -> list[tuple[str, dict]]:
    return [(m.template, dict(m.values)) for m in _messages(err.value.args[0])]


def _edited(families, tmp_path, name: str, **changes):
    folder = tmp_path / name
    shutil.copytree(families[name][0], folder)
    data = json.loads((folder / "config.json").read_text())
    data.update(changes)
    (folder / "config.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize(
    "name, changes, template, field",
    [
        ("gemma3", {"attn_logit_softcapping": 50.0}, "{field} is not supported", "attn_logit_softcapping"),
        ("gemma3", {"use_bidirectional_attention": True}, "{field} is not supported", "use_bidirectional_attention"),
        ("gemma2", {"layer_types": ["sliding_attention", "chunked_attention", "full_attention"]}, "{field} is not supported", "layer_types"),
        ("phi3", {"sliding_window": "hunter2"}, "{field} must be an integer", "sliding_window"),
        ("olmo2", {"attention_bias": True}, "{field} is not supported", "attention_bias"),
        ("llama", {"attention_bias": True}, "{field} is not supported", "attention_bias without mlp_bias"),
        ("llama", {"mlp_bias": "yes"}, "{field} must be true or false", "mlp_bias"),
        ("gemma2", {"final_logit_softcapping": -1}, "{field} must be a number above 0", "final_logit_softcapping"),
        ("mistral", {"layer_types": ["sliding_attention", "full_attention"],  # a local base only Gemma 3 reads
                     "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4},
                                         "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}}},
         "{field} is not supported", "rope_parameters.sliding_attention"),
    ],
)  # fmt: skip
def test_what_cannot_be_mapped_exactly_is_refused_by_name(families, tmp_path, name, changes, template, field):
    folder = _edited(families, tmp_path, name, **changes)
    (folder / "model.safetensors").unlink()  # refused from the config alone, before any weights are read
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    assert (template, {"field": field}) in _refusals(err)


def test_a_rope_scaling_is_refused_by_name(families, tmp_path):
    from model.checkpoints.formats.hf_common import ROPE_SCALING_REFUSED

    folder = _edited(families, tmp_path, "mistral", rope_parameters={"rope_type": "yarn", "factor": 4.0})
    (folder / "model.safetensors").unlink()
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    assert (ROPE_SCALING_REFUSED, {"field": "rope_parameters", "scaling": "yarn"}) in _refusals(err)


def test_a_multimodal_gemma3_is_refused_by_name(families, tmp_path):
    folder = _edited(families, tmp_path, "gemma3", model_type="gemma3", vision_config={"hidden_size": 8})
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    assert _refusals(err)[0][0] == msgid("{where}: a model with a vision tower is not supported (only a text model)")


REAL_SHAPES = {  # published configs (random weights are benchmarks' business: only the config is read here)
    "mistral-7b": ("mistral", dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                   num_attention_heads=32, num_key_value_heads=8, sliding_window=4096)),
    "gemma-2-2b": ("gemma2", dict(vocab_size=256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                                  num_attention_heads=8, num_key_value_heads=4, head_dim=256, sliding_window=4096,
                                  layer_types=None)),
    "gemma-3-1b": ("gemma3", dict(vocab_size=262144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                                  num_attention_heads=4, num_key_value_heads=1, head_dim=256, sliding_window=512,
                                  max_position_embeddings=32768, layer_types=None, query_pre_attn_scalar=256,
                                  final_logit_softcapping=None,
                                  rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                                   "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}})),
}  # fmt: skip


@pytest.mark.parametrize("shape", REAL_SHAPES)
def test_real_shapes_are_refused_or_opened_by_the_memory_limit_from_the_config(families, tmp_path, shape, monkeypatch):
    """On a server whose memory for weights holds 2,000 million numbers, Mistral-7B (7.2 billion numbers) and
    Gemma-2-2B (2.6 billion) are refused by that limit, naming it; Gemma-3-1B's config passes it (its folder opens in
    benchmarks/bench_families.py)."""
    from model.network.config import LIMITS

    monkeypatch.setitem(LIMITS, "parameters", 2_000_000_000)
    name, fields = REAL_SHAPES[shape]
    folder = _edited(families, tmp_path, name, **fields)
    (folder / "model.safetensors").unlink()
    fmt = next(f for f in REGISTRY if f.NAME == name)
    from model.checkpoints.formats.hf_decoder import read_config, to_config

    src = Source(folder)
    if shape == "gemma-3-1b":
        config = to_config(read_config(src, fmt.FAMILY), "here", fmt.FAMILY)
        assert config.kinds.count("global") == 4 and config.sliding_window == 512 and config.local_pe_base == 10000.0
        return
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    limit = (
        "the model would hold {n} million numbers, more than this server's memory for weights holds: {limit} million"
    )
    assert [v["limit"] for t, v in _refusals(err) if t == limit] == ["2,000"]


def test_the_lecture_packs_graph_keeps_the_window_and_the_soft_capping(families):
    """The pack's exported graph (onnxruntime) gives the model's own maps and log-probs for a text shorter than the
    window and one past it: the band and the soft-capping are in the graph, not fixed at the traced length."""
    from pack.onnx_graphs import check_graphs, export_graphs

    _folder, _hf, fast, model, _tok = families["gemma2"]
    ids = fast(TEXT)["input_ids"]
    parity = check_graphs(model, export_graphs(model), [([], ids[:3]), ([], ids)])
    assert parity.ok and max(parity.worst.values()) < 1e-4 and "decoder_self.0" in parity.worst
