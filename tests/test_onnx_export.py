"""pack/onnx_graphs.py: the model's own graph, run by onnxruntime, gives what the app shows.

Demos: onnxruntime's greedy output, log-probs and every attention map against the app's capture() of the same
input (within 1e-4). Hugging Face folders (tiny random ones, tests/hf_families.py): against transformers itself
(eager attention, output_attentions=True), an implementation independent of this project."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from model import capture, load_checkpoint
from model.checkpoints.demos import list_demos
from model.network.recording import record
from model.text.inputs import prepare_source
from pack.onnx_graphs import MAX_ABS, export_graphs, output_names, run_graphs, sessions
from tests.hf_families import TEXTS, build_all
from tests.test_import_marian import marian_dir  # noqa: F401  (the tiny Marian folder fixture)

pytestmark = pytest.mark.filterwarnings("ignore")
DEMOS = [
    d.name for d in list_demos() if d.card.get("shape", "encoder-decoder") == "encoder-decoder"
]  # the pack runs those
INPUTS = {  # per demo: a typed input with capitals, punctuation, an unknown symbol
    "translate": "the cat sees the dog .",
    "fr_en": "Nous avons un chat noir.",
}
# A float16 pack's model (parameters rounded to float16) against the float32 model, the stated tolerance (docs/pack.md):
# measured at most 3.8e-3 (log-probs) and 3.9e-4 (attention maps) on the opus-mt-en-de shape, 1.3e-2 and 2e-3 on the
# tiny Marian folder, whose small random matrices have far larger entries
FLOAT16_LOG_PROBS, FLOAT16_MAPS = 5e-2, 5e-3


def ort_greedy(runs, config, source, limit):
    """Greedy decoding written out here: argmax of the last row, the forced first token, stop after </s>."""
    target = [config.bos_id]
    for step in range(limit):
        out = run_graphs(runs, source, target)
        nxt = int(np.argmax(out["log_probs"][0, -1]))
        if step == 0 and config.forced_bos_id is not None:
            nxt = config.forced_bos_id
        target.append(nxt)
        if nxt == config.eos_id:
            break
    return target[1:]


@pytest.fixture(scope="module")
def demos():
    return {d.name: load_checkpoint(d.path) for d in list_demos() if d.name in DEMOS}


@pytest.mark.parametrize("name", DEMOS)
def test_each_demo_graph_matches_the_apps_capture(demos, name):
    model, tok = demos[name]
    graphs = export_graphs(model)
    runs = sessions(graphs)
    text = INPUTS.get(name, "Stressed? 42 déjà")
    cap = capture(model, tok, text)
    source = [int(i) for i in cap.source_ids]
    got = run_graphs(runs, source, [int(i) for i in cap.target_ids])
    assert np.abs(got["log_probs"][0] - cap.log_probs).max() < MAX_ABS
    for kind in ("encoder_self", "decoder_self", "cross"):
        layers = getattr(cap, kind)
        for i in range(layers.shape[0]):
            assert got[f"{kind}.{i}"].shape == (1, *layers[i].shape)
            assert np.abs(got[f"{kind}.{i}"][0] - layers[i]).max() < MAX_ABS, (kind, i)
    assert np.abs(got["source_positions"] - cap.source_pe).max() < MAX_ABS
    assert np.abs(got["target_embeddings"][0] - cap.target_embeddings).max() < MAX_ABS
    written = ort_greedy(runs, model.config, source, model.config.max_len - 1)
    assert [model.config.bos_id] + [i for i in written if i != model.config.eos_id] == list(cap.target_ids)


def test_every_attention_map_is_a_named_output_with_dynamic_sequence_axes(demos):
    model, _ = demos["reverse"]
    graphs = export_graphs(model)
    names = output_names(model)
    for side in ("encoder", "decoder"):
        graph = onnx.load_from_string(graphs[side]).graph
        assert [o.name for o in graph.output] == names[side]
        dims = [d.dim_param or d.dim_value for d in graph.output[-1].type.tensor_type.shape.dim]
        assert dims[2:] == (["S", "S"] if side == "encoder" else ["T", "S"])
    L = model.config.n_decoder_layers
    assert names["decoder"][-L:] == [f"cross.{i}" for i in range(L)]
    runs = sessions(graphs)
    for S, T in ((1, 1), (9, 2), (30, 17)):  # lengths other than the traced one
        out = run_graphs(runs, [5] * (S - 1) + [2], [1] + [6] * (T - 1))
        assert out["cross.0"].shape == (1, model.config.n_heads, T, S)
        assert np.allclose(out["decoder_self.0"].sum(-1), 1.0, atol=1e-5)


def test_pad_tokens_are_masked_as_the_model_masks_them(demos):
    """A <pad> in the source (typed "<pad>") or in the decoder input (a greedy output that wrote it): the graph builds
    the model's padding masks from the ids it is given (its trace had a <pad> on both sides)."""
    model, _ = demos["translate"]
    runs = sessions(export_graphs(model))
    pad = model.config.pad_id
    source, target = [7, pad, 9, 11, 2], [model.config.bos_id, 8, pad, 12, 13, 14]
    got = run_graphs(runs, source, target)
    with torch.no_grad(), record(model) as rec:  # the model's own numbers for these ids, through its encode/decode
        memory, mask = model.encode(torch.tensor([source]))
        logits = model.decode(torch.tensor([target]), memory, mask)
    assert mask is not None and not bool(mask.all())
    assert np.abs(got["log_probs"][0] - logits[0].log_softmax(-1).numpy()).max() < MAX_ABS
    assert np.all(got["cross.0"][0, :, :, 1] == 0) and np.all(got["decoder_self.1"][0, :, 3:, 2] == 0)
    for i in range(model.config.n_decoder_layers):
        assert np.abs(got[f"cross.{i}"] - rec.attention[("cross", i)][0].numpy()).max() < MAX_ABS


def test_a_model_in_training_mode_is_refused_and_export_leaves_eval_mode_alone(demos):
    model, _ = demos["copy"]
    export_graphs(model)
    assert not any(m.training for m in model.modules())
    model.train()
    try:
        with pytest.raises(ValueError, match="eval mode"):
            export_graphs(model)
    finally:
        model.eval()


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    built = build_all(tmp_path_factory.mktemp("hf"))
    out = {}
    for name, fam in built.items():
        model, tok = load_checkpoint(fam.folder)
        out[name] = (fam, model, tok, sessions(export_graphs(model)))
    return out


@pytest.mark.parametrize("name", ["t5", "flan-t5", "bart", "mbart"])
@torch.no_grad()
def test_each_family_graph_matches_transformers(families, name):
    fam, model, tok, runs = families[name]
    for text in TEXTS[:3]:
        source = prepare_source(model, tok, text).ids
        assert source == fam.tokenizer(text)["input_ids"]
        target = [fam.start] + ([fam.forced] if fam.forced is not None else []) + [5, 9, 7]
        got = run_graphs(runs, source, target)
        ref = fam.hf(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([target]), output_attentions=True)
        assert np.abs(got["log_probs"] - ref.logits.log_softmax(-1).numpy()).max() < MAX_ABS
        theirs = {"encoder_self": ref.encoder_attentions, "decoder_self": ref.decoder_attentions}
        theirs["cross"] = ref.cross_attentions
        for kind, layers in theirs.items():
            for i, layer in enumerate(layers):
                assert np.abs(got[f"{kind}.{i}"] - layer.numpy()).max() < MAX_ABS, (kind, i)
        written = ort_greedy(runs, model.config, source, 8)
        generated = fam.hf.generate(
            torch.tensor([source]), num_beams=1, do_sample=False, max_new_tokens=8, forced_eos_token_id=None
        )[0].tolist()
        assert written == generated[1:], text


@torch.no_grad()
def test_a_marian_folder_graph_matches_transformers(marian_dir):  # noqa: F811
    """MarianMT (tests/test_import_marian.py's tiny folder): the decoder starts from <pad>, which is not masked."""
    import transformers

    model, tok = load_checkpoint(marian_dir)
    hf = transformers.MarianMTModel.from_pretrained(str(marian_dir), attn_implementation="eager").eval()
    runs = sessions(export_graphs(model))
    source = prepare_source(model, tok, "the cat sat on a mat").ids
    target = [model.config.bos_id, 5, 9, 7, 11]
    got = run_graphs(runs, source, target)
    ref = hf(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([target]), output_attentions=True)
    assert target[0] == model.config.pad_id  # Marian's start token is its <pad>
    assert np.abs(got["log_probs"] - ref.logits.log_softmax(-1).numpy()).max() < MAX_ABS
    for kind, layers in (("encoder_self", ref.encoder_attentions), ("decoder_self", ref.decoder_attentions),
                         ("cross", ref.cross_attentions)):  # fmt: skip
        for i, layer in enumerate(layers):
            assert np.abs(got[f"{kind}.{i}"] - layer.numpy()).max() < MAX_ABS, (kind, i)


ONE_STACK_DEMOS = [d.name for d in list_demos() if d.card.get("shape") == "decoder-only"]


@pytest.mark.parametrize("name", ONE_STACK_DEMOS)
def test_a_decoder_only_demo_graph_continues_the_prompt_as_the_app(name):
    """The decoder graph alone over prompt + continuation: the capture's maps and log-probs, and a greedy loop written
    here over the graph (argmax of the last row, the whole sequence each step) writes model.greedy_decode's tokens."""
    from model import greedy_decode

    model, tok = load_checkpoint(next(d.path for d in list_demos() if d.name == name))
    graphs = export_graphs(model)
    assert list(graphs) == ["decoder"] == list(output_names(model))
    graph = onnx.load_from_string(graphs["decoder"]).graph
    assert [i.name for i in graph.input] == ["target_ids"]
    runs = sessions(graphs)
    trace = greedy_decode(model, tok, "stressed=")
    seq = list(trace.source_ids)
    for step in range(len(trace.steps)):
        out = run_graphs(runs, [], seq)
        seq.append(int(np.argmax(out["log_probs"][0, -1])))
        if seq[-1] == model.config.eos_id:
            break
    assert seq[len(trace.source_ids) :] == trace.output_ids
    full = [i for i in seq if i != model.config.eos_id]
    cap = capture(model, tok, "stressed=", tok.target.detokenize(trace.output_tokens))
    assert cap.target_ids.tolist() == full  # the app's pass over prompt + continuation
    got = run_graphs(runs, [], full)
    assert np.abs(got["log_probs"][0] - cap.log_probs).max() < MAX_ABS
    for i in range(model.config.n_decoder_layers):
        assert np.abs(got[f"decoder_self.{i}"][0] - cap.decoder_self[i]).max() < MAX_ABS, i
    assert np.abs(got["target_positions"] - cap.target_pe).max() < MAX_ABS


@pytest.fixture(scope="module")
def one_stack(tmp_path_factory):
    """A tiny GPT-2 (learned positions, byte-level BPE; and with Stanford CRFM's per-layer scale), a Llama with grouped-query attention (RoPE, RMS norms,
    SwiGLU, sentencepiece) and a BERT with its masked-LM head (tests/hf_one_stack.py), and their graphs' sessions."""
    from tests.hf_one_stack import BUILDERS

    root = tmp_path_factory.mktemp("one_stack")
    out = {}
    for name in ("gpt2", "gpt2-crfm", "llama-gqa", "bert-mlm"):
        fam = BUILDERS[name](root)
        model, tok = load_checkpoint(fam.folder)
        out[name] = (fam, model, tok, sessions(export_graphs(model)))
    return out


@pytest.mark.parametrize("name", ["gpt2", "gpt2-crfm", "llama-gqa"])
@torch.no_grad()
def test_a_decoder_only_folder_graph_matches_transformers(one_stack, name):
    """Every attention map (each query head of a grouped-query layer) and the log-probs against transformers' eager
    model; greedy continuation over the graph against transformers' generate()."""
    from tests.hf_one_stack import TEXTS as ONE_TEXTS

    fam, model, tok, runs = one_stack[name]
    for text in ONE_TEXTS[:2]:
        ids = tok.source.encode(text)
        got = run_graphs(runs, [], ids)
        ref = fam.hf(input_ids=torch.tensor([ids]), output_attentions=True)
        assert np.abs(got["log_probs"][0] - ref.logits[0].log_softmax(-1).numpy()).max() < MAX_ABS
        assert len(ref.attentions) == model.config.n_decoder_layers
        for i, layer in enumerate(ref.attentions):
            assert np.abs(got[f"decoder_self.{i}"] - layer.numpy()).max() < MAX_ABS, i
        seq = list(ids)
        for _ in range(6):
            seq.append(int(np.argmax(run_graphs(runs, [], seq)["log_probs"][0, -1])))
        generated = fam.hf.generate(
            torch.tensor([ids]), do_sample=False, num_beams=1, max_new_tokens=6, min_new_tokens=6, eos_token_id=None
        )[0].tolist()
        assert seq == generated, text


@torch.no_grad()
def test_an_encoder_only_folder_graph_matches_transformers(one_stack):
    """BERT: every encoder map and the masked-LM head's log-probs against transformers' BertForMaskedLM."""
    fam, model, tok, runs = one_stack["bert-mlm"]
    (graph,) = [onnx.load_from_string(g).graph for g in export_graphs(model).values()]
    assert [i.name for i in graph.input] == ["source_ids"] and graph.output[0].name == "log_probs"
    for text in ("the cat sat on a mat", "Birds sang, while THE dog ran!"):
        ids = prepare_source(model, tok, text).ids
        assert ids == fam.tokenizer(text)["input_ids"]
        got = run_graphs(runs, ids, [])
        ref = fam.hf(input_ids=torch.tensor([ids]), output_attentions=True)
        assert np.abs(got["log_probs"][0] - ref.logits[0].log_softmax(-1).numpy()).max() < MAX_ABS
        for i, layer in enumerate(ref.attentions):
            assert np.abs(got[f"encoder_self.{i}"] - layer.numpy()).max() < MAX_ABS, i


def step_loop(runs, names, config, source, target=None, limit=0, pad_mask=False):
    """A loop over the step graph written out here: greedy (target None: argmax, the forced first token, stop after
    </s>, at most `limit` steps) or teacher-forced over `target` (<s> y_1 .. y_n); each step's outputs by name."""
    inputs, outputs = names
    src = np.array([source], dtype=np.int64)
    enc = runs["encoder"]
    got = dict(zip([o.name for o in enc.get_outputs()], enc.run(None, {"source_ids": src})))
    cross = {n: got[n] for n in inputs if n.startswith("cross_")}
    some = cross[next(iter(cross))]
    past = {
        n: np.zeros((1, some.shape[1], 0, some.shape[3]), dtype=np.float32) for n in inputs if n.startswith("past_")
    }
    seq, steps = [config.bos_id], []
    for t in range(limit if target is None else len(target)):
        feeds = {"target_ids": np.array([[seq[-1]]]), "key_ids": np.array([seq]), "source_ids": src}
        feeds.update(pad_mask=np.array([pad_mask]), **past, **cross)
        out = dict(zip(outputs, runs["step"].run(None, feeds)))
        steps.append(out)
        past = {n.replace("present_", "past_"): out[n] for n in outputs if n.startswith("present_")}
        if target is not None:
            if t + 1 < len(target):
                seq.append(target[t + 1])
            continue
        token = int(np.argmax(out["log_probs"][0, -1]))
        token = config.forced_bos_id if t == 0 and config.forced_bos_id is not None else token
        seq.append(token)
        if token == config.eos_id:
            break
    return got, seq[1:], steps


@pytest.mark.parametrize("name", ["translate", "reverse_rope", "reverse_alibi", "reverse_relative"])
def test_the_cached_step_graphs_decode_as_greedy_decode_and_capture(demos, name):
    """The encoder graph with the cross-attention keys and values (Transformer.cross_cache) and the decoder step with
    the key/value cache as inputs and outputs (export_step_graphs), run by onnxruntime from an empty cache: a greedy
    loop written here gives greedy_decode's tokens, each step's top-5 probabilities and attention rows within 1e-4;
    a loop over the capture's decoder input gives capture()'s log-probs, every map, embeddings and positions row by
    row. Sinusoidal positions, RoPE, ALiBi and T5's relative bias: each reads the step's position from the cache."""
    import onnxruntime as ort

    from model import greedy_decode
    from pack.onnx_graphs import export_step_graphs, step_names

    model, tok = demos[name]
    cfg = model.config
    runs = {
        k: ort.InferenceSession(v, providers=["CPUExecutionProvider"]) for k, v in export_step_graphs(model).items()
    }
    text = INPUTS.get(name, "Stressed? 42 déjà")
    trace = greedy_decode(model, tok, text)
    _, written, steps = step_loop(runs, step_names(model), cfg, trace.source_ids, limit=len(trace.steps))
    assert written == trace.output_ids
    for t, (s, got) in enumerate(zip(trace.steps, steps)):
        probs = np.exp(got["log_probs"][0, -1].astype(np.float64))
        np.testing.assert_allclose(probs[s.top_ids], s.top_probs, atol=MAX_ABS, rtol=0)
        for i in range(cfg.n_decoder_layers):
            assert got[f"decoder_self.{i}"].shape == (1, cfg.n_heads, 1, t + 1)
            np.testing.assert_allclose(got[f"decoder_self.{i}"][0, :, 0], s.decoder_self[i], atol=MAX_ABS, rtol=0)
            np.testing.assert_allclose(got[f"cross.{i}"][0, :, 0], s.cross[i], atol=MAX_ABS, rtol=0)
    assert_steps_are_the_capture(runs, model, tok, text)


def assert_steps_are_the_capture(runs, model, tok, text, target=None, tol=MAX_ABS):
    """A teacher-forced loop over the capture's decoder input (pad_mask on) gives capture()'s rows."""
    from pack.onnx_graphs import step_names

    cap = capture(model, tok, text, target)
    enc, _, steps = step_loop(runs, step_names(model), model.config, cap.source_ids, cap.target_ids, pad_mask=True)
    np.testing.assert_allclose(enc["encoder_self.0"][0], cap.encoder_self[0], atol=tol, rtol=0)
    stack = lambda name: np.concatenate([s[name] for s in steps], axis=-2)  # noqa: E731  rows along the query axis
    np.testing.assert_allclose(stack("log_probs")[0], cap.log_probs, atol=tol, rtol=0)
    T = len(cap.target_ids)
    for i in range(model.config.n_decoder_layers):
        self_rows = np.zeros((model.config.n_heads, T, T), dtype=np.float32)
        for t, s in enumerate(steps):
            self_rows[:, t, : t + 1] = s[f"decoder_self.{i}"][0, :, 0]
        np.testing.assert_allclose(self_rows, cap.decoder_self[i], atol=tol, rtol=0)
        np.testing.assert_allclose(stack(f"cross.{i}")[0], cap.cross[i], atol=tol, rtol=0)
    np.testing.assert_allclose(stack("target_embeddings")[0], cap.target_embeddings, atol=tol, rtol=0)
    np.testing.assert_allclose(np.concatenate([s["target_positions"] for s in steps]), cap.target_pe, atol=tol, rtol=0)
    return cap


def test_the_step_graphs_mask_a_written_pad_as_the_capture(demos):
    """A decoder input holding <pad> (a model may write it): the loop with pad_mask on gives capture()'s rows, as the
    teacher-forced pass masks that key."""
    import onnxruntime as ort

    from pack.onnx_graphs import export_step_graphs

    model, tok = demos["translate"]
    runs = {
        k: ort.InferenceSession(v, providers=["CPUExecutionProvider"]) for k, v in export_step_graphs(model).items()
    }
    words = [t for t in tok.target.tokens if not t.startswith("<")][:2]
    cap = assert_steps_are_the_capture(runs, model, tok, "the cat sees the dog .", f"{words[0]} <pad> {words[1]}")
    assert model.config.pad_id in cap.target_ids[1:]


def test_a_marian_folder_packed_in_float16_with_shared_weights_decodes_as_the_rounded_model(marian_dir):  # noqa: F811
    """The large pack's graphs (pack/weights.py) on a tiny opus-mt-shaped folder (shared and tied
    table, <pad> as the start token): the model's parameters rounded to float16 and stored so, each tensor once (the
    table not in both graphs, its transposed copy a Transpose node), float32 arithmetic. Greedy decoding over them
    writes greedy_decode's tokens of the rounded model, and the steps' rows are its capture() within 1e-4."""
    from model import greedy_decode
    from pack.onnx_graphs import export_step_graphs, step_names
    from pack.weights import half_rounded, sessions, shared_weights

    model, tok = load_checkpoint(marian_dir)
    rounded = half_rounded(model)
    graphs, blob = shared_weights(export_step_graphs(rounded))
    V, D = rounded.src_embed.weight.shape
    where = {}
    for name, graph in graphs.items():
        for t in onnx.load_from_string(graph).graph.initializer:
            assert sorted(t.dims) != sorted([V, D]) or t.data_location == onnx.TensorProto.EXTERNAL, t.name
            if sorted(t.dims) == sorted([V, D]):
                assert t.data_type == onnx.TensorProto.FLOAT16
                where.setdefault(name, []).append({e.key: e.value for e in t.external_data}["offset"])
    assert where["encoder"] == where["step"] and len(where["step"]) == 1  # the table once, no transposed copy
    runs = sessions(graphs, blob)
    for text in TEXTS:
        trace = greedy_decode(rounded, tok, text)
        _, written, _ = step_loop(runs, step_names(rounded), rounded.config, trace.source_ids, limit=len(trace.steps))
        assert written == trace.output_ids
        cap = assert_steps_are_the_capture(runs, rounded, tok, text)
        # the rounded model against the float32 one (the stated tolerance of a float16 pack, docs/pack.md)
        exact = capture(model, tok, text)
        assert exact.target_ids.tolist() == cap.target_ids.tolist()  # the same greedy output
        assert np.abs(exact.log_probs - cap.log_probs).max() < FLOAT16_LOG_PROBS
        for kind in ("encoder_self", "decoder_self", "cross"):
            assert np.abs(getattr(exact, kind) - getattr(cap, kind)).max() < FLOAT16_MAPS, kind
