"""One forward path (issue 31): everything that runs the network computes the model's own log-probabilities.

For every positional kind, each imported family's configuration and with an intervention on, the log-probs that each
path computes for the same source and output equal the model's own teacher-forced pass (`model.encode` then
`model.decode` from ids, written out here) within 1e-5, and integrated gradients' rows sum to
log p(y|x) - log p(y|x') of that same pass. `test_every_path_is_listed` finds the code that runs the network (a call
of `.encode` / `.decode` on a model outside model/network/) and fails on one this file does not check.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

from model import attribute, capture, load_checkpoint
from model.analysis.importance import head_importance
from model.decoding import beam_search, greedy_decode, greedy_ids, sample
from model.interventions import Interventions
from model.network.config import POSITIONAL_KINDS
from model.network.recording import record
from tasks.evaluate import cross_attention_argmax, ends, greedy_batch
from tests.conftest import make_tiny
from tests.hf_families import build_bart, build_mbart, build_t5

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-5
SOURCE = "abca"

# Each checked path: the function that calls the model's encode/decode, and the test below that checks it.
PATHS = {
    "model/analysis/capture.py:_lazy_pass": "capture's log_probs against the pass written here (every shape: the "
    "one pass of the lazy and the eager capture)",
    "model/decoding/core.py:DecoderSession.__init__": "greedy, forced, beam and sampling: every step's probability",
    "model/decoding/core.py:DecoderSession.step": "(the same)",
    "model/analysis/attribution_methods/passes.py:logits_of": "occlusion's and the gradient methods' log_probs, "
    "completeness, for each shape (rollout and flow record the same pass)",
    "model/analysis/importance.py:head_importance": "head importance's baseline",
    "tasks/evaluate.py:cross_attention_argmax": "the batched alignment pass against capture's cross-attention",
    "pack/onnx_graphs.py:_Encoder.forward": "the pack's exported graphs, run by onnxruntime",
    "pack/onnx_graphs.py:_Decoder.forward": "(the same)",
    "pack/onnx_graphs.py:export_graphs": "(the same: the trace's example pass)",
    "pack/onnx_graphs.py:_OneStack.forward": "a one-stack model's exported graph, run by onnxruntime: "
    "tests/test_onnx_export.py (the decoder-only demos against capture and greedy_decode, GPT-2, Llama and BERT "
    "against transformers)",
    "pack/onnx_graphs.py:_Step.forward": "the cached decoder step, run by onnxruntime: "
    "tests/test_onnx_export.py::test_the_cached_step_graphs_decode_as_greedy_decode_and_capture",
    "pack/onnx_graphs.py:export_step_graphs": "(the same: the trace's example pass)",
    "model/analysis/head_switch_off.py:item_losses": "the head atlas's switch-off tests, one batched pass per input: "
    "test_the_atlas_passes_read_as_capture",
    "tasks/induction.py:halves_accuracy": "the induction demo's card: (the same)",
    "model/analysis/batched_maps.py:map_each": "the head atlas's batched maps against capture's maps of each input "
    "alone: tests/test_head_scores.py::test_batched_maps_are_the_maps_capture_gives_each_input_alone",
}

# The configurations the importers give each family (model/checkpoints/formats/), on this file's tiny sizes.
FAMILIES = {
    "annotated": dict(norm_first=True, final_norm=True, norm="std", layer_norm_eps=1e-6),
    "gordic": dict(norm_first=True, final_norm=True),
    "tutorial": dict(norm_first=False, final_norm=True),
    "marian": dict(
        norm_first=False,
        final_norm=False,
        pe_layout="half",
        share_embeddings=True,
        tie_generator=True,
        activation="silu",
        bos_id=0,
        pad_id=0,
    ),  # fmt: skip
}


def teacher_forced(model, src_ids, inputs, scored, changes=None, src_override=None) -> np.ndarray:
    """(T,) log p of scored[t] after decoder inputs[: t + 1]: the model's own encode/decode from ids, one pass."""
    src = torch.tensor([src_override if src_override is not None else src_ids])
    with torch.no_grad(), record(model, interventions=changes, keep=False):
        memory, mask = model.encode(src)
        logp = model.decode(torch.tensor([inputs]), memory, mask).double().log_softmax(-1)[0]
    return logp[torch.arange(len(scored)), torch.tensor(scored)].numpy()


def before_pad(outputs: list[int], model) -> int:
    """Steps up to this index read no generated <pad>: a random model may write one, which the teacher-forced pass
    masks as a key (as padding) and the cached decoding step reads as a token; trained models never write it."""
    pad = model.config.pad_id
    return next((i for i, t in enumerate(outputs) if t == pad), len(outputs))


def interventions_for(model, tokenizer, source) -> list[Interventions | None]:
    ablate = [("cross", 0, 0), ("encoder_self", 0, 1), ("decoder_self", 0, 1)]
    changed = [Interventions.make(ablate)]
    longest = max(len(capture(model, tokenizer, source).target_ids), len(tokenizer.source.encode(source)) + 1)
    if model.config.positional != "none" and longest + 2 <= model.config.max_len:  # room to shift every position
        changed.append(Interventions.make(ablate, positional="shifted", shift=2))
    return [None, *changed]


def check_completeness(model, tokenizer, source: str, target: str, changes) -> None:
    """Integrated gradients (baseline <unk>) on a short given output: its log p is the model's, and each row sums to
    log p(y|x) - log p(y|x') of the model's own pass, x' the source with every token <unk>, within 1%."""
    ig = attribute(
        model, tokenizer, source, target, method="integrated_gradients", baseline="unk", interventions=changes
    )
    cap = capture(model, tokenizer, source, target)
    src_ids, inputs = [int(i) for i in cap.source_ids], [int(i) for i in cap.target_ids]
    scored = inputs[1:] + [tokenizer.target.eos_id]
    ref = teacher_forced(model, src_ids, inputs, scored, changes)
    np.testing.assert_allclose(ig.log_probs, ref, atol=TOL, err_msg="integrated gradients")
    unk = [tokenizer.source.unk_id] * len(src_ids)
    change = ref - teacher_forced(model, src_ids, inputs, scored, changes, src_override=unk)
    missed = np.abs(ig.row_sums() - change)
    assert np.all(missed <= 0.01 * np.abs(change) + 1e-4), ("completeness", missed, change)


def check_every_path(model, tokenizer, source: str, target: str) -> None:
    vocab = tokenizer.target
    eos, bos = vocab.eos_id, vocab.bos_id
    forced_first = model.config.forced_bos_id is not None  # the step function sets step 0 (BART <s>, mBART language)
    first = 1 if forced_first else 0
    model.double()  # every path in float64: they compute one function, apart from float32's order of sums
    for changes in interventions_for(model, tokenizer, source):
        # capture: the unchanged model's greedy output as decoder input, the pass under `changes`
        cap = capture(model, tokenizer, source, interventions=changes)
        src_ids = [int(i) for i in cap.source_ids]
        inputs = [int(i) for i in cap.target_ids]
        scored = inputs[1:] + [eos]
        ref = teacher_forced(model, src_ids, inputs, scored, changes)
        got = cap.log_probs[np.arange(len(scored)), scored]
        np.testing.assert_allclose(got, ref, atol=TOL, err_msg="capture")

        # forced decoding (the output as prefix), under the same changes: every step's probability
        trace = greedy_decode(model, tokenizer, source, prefix=scored[:-1], interventions=changes)
        steps = [s for s in trace.steps[: before_pad(scored, model) + 1] if s.token_id == scored[s.index]]
        assert len(steps) >= min(len(scored), before_pad(scored, model) + 1) - 1
        for s in steps[first:]:
            assert np.log(s.prob) == pytest.approx(ref[s.index], abs=TOL), ("forced", s.index)

        # sampling draws its own output; its probabilities are the model's for that output
        drawn = sample(model, tokenizer, source, seed=3, max_len=6, interventions=changes)
        d_out = drawn.output_ids
        d_ref = teacher_forced(model, src_ids, [bos] + d_out[:-1], d_out, changes)
        for s in drawn.steps[first : before_pad(d_out, model) + 1]:
            assert np.log(s.prob) == pytest.approx(d_ref[s.index], abs=TOL), ("sample", s.index)

        # beam search of width 1 keeps the greedy path of the changed model; its sum is the model's
        beam = beam_search(model, tokenizer, source, beam_size=1, length_penalty=0.0, max_len=6, interventions=changes)
        b_out = beam.best.output_ids if hasattr(beam.best, "output_ids") else beam.output_ids
        b_ref = teacher_forced(model, src_ids, [bos] + b_out[:-1], b_out, changes)
        if before_pad(b_out, model) >= len(b_out) - 1:
            assert beam.best.log_prob == pytest.approx(b_ref[first:].sum(), abs=1e-4), "beam"

        # head importance: its baseline is the output's total log p under `changes`
        imp = head_importance(model, tokenizer, source, interventions=changes)
        assert imp.baseline == pytest.approx(ref[: len(imp.output_tokens)].sum(), abs=1e-4), "importance"

        # attribution: occlusion and the gradient methods score the same output with the same log p
        for method in ("occlusion", "grad_x_input"):
            att = attribute(model, tokenizer, source, method=method, interventions=changes)
            assert att.output_tokens == vocab.decode(scored[: len(att.output_tokens)])
            np.testing.assert_allclose(att.log_probs, ref[: len(att.log_probs)], atol=TOL, err_msg=method)
        if changes is not None and changes.positional is None and tokenizer.source.unk_id is not None:
            check_completeness(model, tokenizer, source, target, changes)

    # greedy decoding, the batched generator and capture agree on the output of the unchanged model
    plain = greedy_decode(model, tokenizer, source)
    assert plain.output_ids == [int(i) for i in capture(model, tokenizer, source).target_ids[1:]] + (
        [eos] if plain.stop_reason == "eos" else []
    )
    assert greedy_ids(model, [src_ids], bos_id=bos, eos_id=eos)[0] == plain.output_ids
    # the batched alignment pass of the training reports reads the same cross-attention as capture
    cap = capture(model, tokenizer, source)
    argmax = cross_attention_argmax(model, [src_ids], [plain.output_ids], bos_id=bos, eos_id=eos)[0].numpy()
    mean = np.sort(cap.cross.mean(1), -1)  # (L, T, S): where the two largest weights tie (float32 sums), either wins
    clear = mean[..., -1] - mean[..., -2] > 1e-5
    clear[:, before_pad(plain.output_ids, model) + 1 :] = False  # rows after a written <pad>: see before_pad
    np.testing.assert_array_equal(argmax[clear], cap.cross.mean(1).argmax(-1)[clear])


@pytest.mark.parametrize("kind", POSITIONAL_KINDS)
def test_every_path_computes_the_models_log_probs_for_each_positional_kind(char_tokenizer, kind):
    model = make_tiny(char_tokenizer, seed=5, positional=kind, max_len=64)
    check_every_path(model, char_tokenizer, SOURCE, "ba")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_path_for_each_native_family_configuration(char_tokenizer, family):
    model = make_tiny(char_tokenizer, seed=6, **FAMILIES[family])
    check_every_path(model, char_tokenizer, SOURCE, "ba")


@pytest.fixture(scope="module")
def hf_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_paths")
    return {
        f.name: f.folder for f in (build_t5(root, False), build_t5(root, True), build_bart(root), build_mbart(root))
    }


@pytest.mark.parametrize("family", ["t5", "flan-t5", "bart", "mbart"])
def test_every_path_for_each_imported_hugging_face_family(hf_folders, family):
    model, tokenizer = load_checkpoint(str(hf_folders[family]))
    check_every_path(model, tokenizer, "the cat", "the")


@pytest.mark.parametrize("kind", POSITIONAL_KINDS)
def test_the_packs_exported_graphs_compute_captures_log_probs_and_maps(char_tokenizer, kind):
    """The lecture pack's network: the model's graphs exported by torch.onnx and run by onnxruntime (float32 on both
    sides: within 1e-4, the pack's stated tolerance), on capture's own output."""
    import onnxruntime as ort

    from pack.onnx_graphs import export_graphs

    model = make_tiny(char_tokenizer, seed=9, positional=kind, max_len=64)
    graphs = export_graphs(model)
    run = {k: ort.InferenceSession(v, providers=["CPUExecutionProvider"]) for k, v in graphs.items()}
    cap = capture(model, char_tokenizer, SOURCE)
    src = np.array([cap.source_ids], dtype=np.int64)
    memory = run["encoder"].run(["memory"], {"source_ids": src})[0]
    names = [o.name for o in run["decoder"].get_outputs()]
    feeds = {"target_ids": np.array([cap.target_ids], dtype=np.int64), "memory": memory, "source_ids": src}
    out = dict(zip(names, run["decoder"].run(None, {**feeds, "pad_mask": np.array([True])})))
    np.testing.assert_allclose(out["log_probs"][0], cap.log_probs, atol=1e-4)
    for layer in range(model.config.n_decoder_layers):
        np.testing.assert_allclose(out[f"cross.{layer}"][0], cap.cross[layer], atol=1e-4)


def test_the_alignment_pass_starts_where_the_app_does_when_the_config_spells_another_start_token(char_tokenizer):
    """Marian's config names its pad id as the start token; the app decodes from the target vocabulary's (here <s>).
    The training reports' batched pass, given the vocabulary's tokens (`ends`), reads capture's rows; with the
    config's start token it reads other rows (the difference this test found)."""
    model = make_tiny(char_tokenizer, seed=6, **FAMILIES["marian"]).double()
    assert model.config.bos_id != char_tokenizer.target.bos_id
    plain = greedy_decode(model, char_tokenizer, SOURCE)
    cap = capture(model, char_tokenizer, SOURCE)
    src, want = [[int(i) for i in cap.source_ids]], cap.cross.mean(1).argmax(-1)
    argmax = cross_attention_argmax(model, src, [plain.output_ids], **ends(char_tokenizer))[0].numpy()
    np.testing.assert_array_equal(argmax, want)
    assert greedy_batch(model, src, **ends(char_tokenizer))[0] == plain.output_ids
    assert (cross_attention_argmax(model, src, [plain.output_ids])[0].numpy() != want).any()


def test_the_gradient_path_is_the_models_forward_for_positions_inside_attention(char_tokenizer):
    """The published error: the gradient methods ran an encoder of their own without rotary, ALiBi or relative
    positions. Their log p is the model's, and differs from that of the same weights with positions removed."""
    for kind in ("rope", "alibi", "relative"):
        model = make_tiny(char_tokenizer, seed=8, positional=kind)
        att = attribute(model, char_tokenizer, "abcdab", target="badcba", method="grad_x_input")
        src = char_tokenizer.source.encode("abcdab") + [2]
        inputs = [1] + char_tokenizer.target.encode("badcba")
        ref = teacher_forced(model, src, inputs, inputs[1:] + [2])
        np.testing.assert_allclose(att.log_probs, ref, atol=TOL)
        blind = make_tiny(char_tokenizer, seed=8, positional="none")
        blind.load_state_dict(model.state_dict(), strict=False)
        assert np.abs(teacher_forced(blind, src, inputs, inputs[1:] + [2]) - ref).max() > 1e-3


@pytest.mark.parametrize("extra", [dict(positional="rope"), dict(positional="none", n_kv_heads=1)])
def test_every_path_of_a_decoder_only_model(extra):
    """A decoder-only model (grouped-query attention in the second case): capture's log-probs, greedy continuation,
    forced and sampled steps and beam search against the model's own decode over the whole sequence."""
    from model.network.config import TransformerConfig
    from model.network.transformer import build_model
    from model.text.tokenizer import Tokenizer, Vocab

    vocab = Vocab.build(list("abcdefgh="), level="char")
    tok = Tokenizer(vocab, vocab)
    cfg = TransformerConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=24, n_heads=4, d_ff=32,
                            max_len=48, dropout=0.0, shape="decoder-only", n_encoder_layers=0, n_decoder_layers=2,
                            **extra)  # fmt: skip
    model = build_model(cfg, seed=4).double()

    def own(ids: list[int]) -> np.ndarray:  # (T, V) log p after each prefix: one pass of the model's decode
        with torch.no_grad():
            return model.decode(torch.tensor([ids])).double().log_softmax(-1)[0].numpy()

    cap = capture(model, tok, "abc=")
    ids = [int(i) for i in cap.target_ids]
    np.testing.assert_allclose(cap.log_probs, own(ids), atol=TOL)
    greedy = greedy_decode(model, tok, "abc=", max_new_tokens=5)
    seq = ids + greedy.output_ids
    ref = own(seq)
    for s in greedy.steps:
        assert np.log(s.prob) == pytest.approx(ref[len(ids) - 1 + s.index, s.token_id], abs=TOL)
        assert s.token_id == int(ref[len(ids) - 1 + s.index].argmax())
    drawn = sample(model, tok, "abc=", seed=2, max_len=5)
    ref = own(ids + drawn.output_ids)
    for s in drawn.steps:
        assert np.log(s.prob) == pytest.approx(ref[len(ids) - 1 + s.index, s.token_id], abs=TOL)
    beam = beam_search(model, tok, "abc=", beam_size=1, length_penalty=0.0, max_len=5)
    out = beam.best.output_ids
    ref = own(ids + out)
    assert beam.best.log_prob == pytest.approx(sum(ref[len(ids) - 1 + t, y] for t, y in enumerate(out)), abs=1e-4)
    # attribution: occlusion and the gradient methods score the continuation "hgf" (then </s>) with the model's own
    # log p, the prompt's last position writing its first token; integrated gradients is complete against the pass
    # with every prompt token <unk>
    cont = vocab.encode("hgf") + [vocab.eos_id]
    ref = own(ids + cont[:-1])
    want = np.array([ref[len(ids) - 1 + t, y] for t, y in enumerate(cont)])
    for method in ("occlusion", "grad_x_input", "integrated_gradients"):
        att = attribute(model, tok, "abc=", "hgf", method=method, baseline="unk")
        assert att.source_tokens == list("abc=") and att.output_tokens == [*"hgf", "</s>"]
        np.testing.assert_allclose(att.log_probs, want, atol=TOL, err_msg=method)
    blank = own([vocab.unk_id] * len(ids) + cont[:-1])
    change = want - np.array([blank[len(ids) - 1 + t, y] for t, y in enumerate(cont)])
    assert np.all(np.abs(att.row_sums() - change) <= 0.01 * np.abs(change) + 1e-4), ("completeness", change)


def _network_calls(path: Path) -> set[str]:
    """Qualified names of the functions in `path` that call .encode / .decode on a model (or call a model)."""
    found: set[str] = set()

    def is_model(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "model") or (
            isinstance(node, ast.Attribute) and node.attr == "model"
        )

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, [*scope, child.name])
                continue
            if isinstance(child, ast.Call):
                f = child.func
                if (isinstance(f, ast.Attribute) and f.attr in ("encode", "decode") and is_model(f.value)) or is_model(
                    f
                ):
                    found.add(f"{path.relative_to(ROOT).as_posix()}:{'.'.join(scope)}")
            visit(child, scope)

    visit(ast.parse(path.read_text()), [])
    return found


def test_every_path_is_listed():
    """A new piece of code that runs the network must be added to PATHS (and checked above)."""
    found: set[str] = set()
    for package in ("model", "tasks", "ui", "viz", "pack", "cli", "pages"):
        for path in (ROOT / package).rglob("*.py"):
            if "network" not in path.relative_to(ROOT).parts:
                found |= _network_calls(path)
    training = {
        p for p in found if p.startswith("tasks/train.py") or p.endswith((":train", ":train_step"))
    }  # loss passes
    assert found - training == set(PATHS), f"unlisted: {found - training - set(PATHS)}, gone: {set(PATHS) - found}"


def test_the_atlas_passes_read_as_capture():
    """head_switch_off.ablated_losses (the unchanged row and a row with a head off) and tasks.induction's
    halves_accuracy against capture's log-probabilities on the same ids, with the same head switched off."""
    from model.analysis.batched_maps import item_tokenizer
    from model.analysis.head_switch_off import ablated_losses, scored_input
    from tasks.induction import fresh_sequences, halves_accuracy

    model, tok = load_checkpoint(str(ROOT / "checkpoints" / "induction"))
    ids = fresh_sequences(tok.source, 1, seed=7)[0]
    off = ("decoder_self", 1, 0)
    s = scored_input(model, tok, ids, repeated=True)
    losses, _ = ablated_losses(model, tok, [ids], "decoder_self", [[], [off[1:]]], repeated=True)
    for row, changes in enumerate((Interventions(), Interventions.make(ablate=[off]))):
        item_tok, text = item_tokenizer(model, tok, ids)
        cap = capture(model, item_tok, text, interventions=changes)
        assert list(cap.target_ids) == list(s.inputs)
        want = -np.mean([cap.log_probs[p, y] for p, y in zip(s.positions, s.targets)])
        assert losses[row] == pytest.approx(want, abs=1e-4)
        predicted = cap.log_probs.argmax(-1)
        half = len(ids) // 2
        parts = [range(0, half - 1), range(half, len(ids) - 1)]
        want_acc = [np.mean([predicted[p] == ids[p + 1] for p in rows]) for rows in parts]
        got = halves_accuracy(model, [ids], ablate=[off] if row else ())
        assert got == pytest.approx(want_acc, abs=1e-9)
