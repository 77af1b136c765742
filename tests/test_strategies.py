"""The library under issue 15's views: the beam tree, training snapshots, two-model comparisons, their files."""

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from model import beam_search, capture, load_checkpoint, sample
from model.analysis.compare import attention_map, decoder_input_text, difference, mismatches
from model.checkpoints.checkpoint import load_card
from model.checkpoints.errors import CheckpointError
from model.checkpoints.snapshots import list_snapshots, snapshot_steps
from model.decoding.strategy_export import (
    beam_csv,
    beam_json,
    comparison_npz,
    sampling_csv,
    sampling_json,
    snapshots_csv,
)
from tasks import train as train_mod
from tasks import training
from tasks.evaluate import alignment_accuracy, evaluate
from tasks.gold import alignment_share, gold_example
from tasks.registry import get_task
from tasks.tasks import dataset, held_out
from tests.conftest import make_tiny

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------ the beam as a tree


def test_the_beam_tree_links_every_hypothesis_to_the_one_it_extends(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=3)
    trace = beam_search(model, char_tokenizer, "hello", beam_size=3, max_len=7)
    tree = trace.tree()
    n = sum(len(s.live) + len(s.finished) + len(s.pruned) for s in trace.steps)
    assert all(len(v) == n for v in tree.values())
    texts = tree["tokens"]
    for i in range(n):
        assert tree["rank"][i] < 2 * 3
        if tree["step"][i] == 0:
            assert tree["parent"][i] == -1 and len(texts[i]) == 1
            continue
        p = tree["parent"][i]
        assert tree["status"][p] == "live" and tree["step"][p] == tree["step"][i] - 1
        assert texts[i] == texts[p] + [tree["token"][i]]  # the parent's tokens, then one more
    best = [texts[i] for i in np.flatnonzero(tree["best"])]
    assert best == [h.tokens for h in trace.best_path]
    for t, step in enumerate(trace.steps):  # ranks follow the log-probabilities of the step's 2K extensions
        at = np.flatnonzero(tree["step"] == t)
        assert sorted(tree["rank"][at]) == list(range(len(at)))
        assert list(tree["log_prob"][at][np.argsort(tree["rank"][at])]) == sorted(tree["log_prob"][at], reverse=True)


def test_any_hypothesis_has_its_path_and_attention(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=1)
    trace = beam_search(model, char_tokenizer, "abcab", beam_size=4, length_penalty=1.0, max_len=6)
    hyps = [h for s in trace.steps for h in s.finished + s.live]
    assert hyps
    for h in hyps:
        path = trace.path(h)
        assert path[-1] is h and [len(p.output_ids) for p in path] == list(range(1, len(h.output_ids) + 1))
        assert all(b.output_ids[:-1] == a.output_ids for a, b in zip(path, path[1:]))
        np.testing.assert_array_equal(trace.cross_alignment(path)[:, :, -1], h.cross)
    done = trace.finished()
    assert [h.score for h in done] == sorted((h.score for h in done), reverse=True)
    if done:
        assert trace.best is done[0]


# ------------------------------------------------------------------ training snapshots


def test_snapshot_steps_start_untrained_and_double_up_to_the_end():
    assert snapshot_steps(4000, 8) == [0, 62, 125, 250, 500, 1000, 2000, 4000]
    assert snapshot_steps(3, 8) == [0, 1, 2, 3]  # fewer steps than snapshots: every step once
    assert snapshot_steps(10, 1) == [10] and snapshot_steps(10, 2) == [0, 10]
    for total, n in ((7, 5), (100, 20), (1, 2)):
        steps = snapshot_steps(total, n)
        assert steps[0] == 0 and steps[-1] == total and len(steps) == min(n, total + 1)
        assert all(a < b for a, b in zip(steps, steps[1:]))


SNAPSHOT_RUN = ["--task", "reverse", "--preset", "tiny", "--d-model", "24", "--heads", "2", "--steps", "6",
                "--batch-size", "16", "--warmup", "3", "--train-size", "200", "--eval-examples", "0",
                "--report-examples", "10", "--no-progress"]  # fmt: skip


def test_the_snapshots_command_saves_scored_float16_checkpoints_and_the_same_weights(tmp_path):
    plain = tmp_path / "plain"
    train_mod.main(["--out", str(plain), *SNAPSHOT_RUN])
    out = tmp_path / "run"
    card = train_mod.main(["--out", str(out), *SNAPSHOT_RUN, "--snapshots", "3"])
    final, tokenizer = load_checkpoint(out)
    assert (out / "model.safetensors").read_bytes() == (plain / "model.safetensors").read_bytes()  # unchanged run
    assert "--snapshots" not in card["command"] and card["snapshots"]["steps"] == [0, 3, 6]
    assert card["snapshots"]["command"].endswith("--snapshots 3")
    snaps = list_snapshots(out)
    assert snaps.steps == [0, 3, 6] and snaps.examples == training.SNAPSHOT_EXAMPLES
    stored = load_file(str(snaps.items[-1].path / "model.safetensors"))
    assert {t.dtype for t in stored.values()} == {torch.float16}
    last, _ = load_checkpoint(snaps.items[-1].path)  # the last step's weights, rounded to float16
    for name, p in final.state_dict().items():
        torch.testing.assert_close(last.state_dict()[name], p.half().float(), rtol=0, atol=0)
    first, _ = load_checkpoint(snaps.items[0].path)
    assert not torch.equal(first.state_dict()["generator.weight"], last.state_dict()["generator.weight"])
    # the recorded scores are the model's at that step on the fresh held-out set: checked for the last one
    task = get_task("reverse")
    sources = {e.source for e in dataset(task, 200, 0)}
    probe = held_out(task, training.SNAPSHOT_EXAMPLES, training.PROGRESS_SEED_OFFSET, exclude=sources)
    scores = evaluate(final, tokenizer, probe)
    assert snaps.items[-1].exact_match == pytest.approx(scores.exact_match, abs=1e-4)
    assert snaps.items[-1].alignment == pytest.approx(scores.alignment, abs=1e-4)
    assert load_card(snaps.items[1].path)["snapshot"]["step"] == 3


def test_a_snapshot_index_cannot_point_outside_its_folder(tmp_path):
    root = tmp_path / "ckpt" / "snapshots"
    (root / "step-00000").mkdir(parents=True)
    (root / "step-00000" / "config.json").write_text("{}")
    (tmp_path / "ckpt" / "elsewhere").mkdir()
    (tmp_path / "ckpt" / "elsewhere" / "config.json").write_text("{}")
    assert list_snapshots(tmp_path / "nothing") is None
    for entries, problem in (
        ([{"step": 0, "folder": "../elsewhere"}], "names no folder"),
        ([{"step": 0, "folder": ".."}], "names no folder"),
        ([{"step": 1, "folder": "step-00001"}], "missing"),
        ([{"step": -1, "folder": "step-00000"}], "step"),
        ([{"step": 0, "folder": "step-00000"}] * 2, "same step"),
        ("all", "must be a list"),
    ):
        (root / "snapshots.json").write_text(json.dumps({"snapshots": entries}))
        with pytest.raises(CheckpointError, match=problem):
            list_snapshots(tmp_path / "ckpt")
    (root / "snapshots.json").write_text(json.dumps({"snapshots": [{"step": 0, "folder": "step-00000"}]}))
    assert list_snapshots(tmp_path / "ckpt").items[0].exact_match is None


def test_the_shipped_translate_snapshots_learn_to_align():
    snaps = list_snapshots(ROOT / "checkpoints" / "translate")
    assert snaps.steps[0] == 0 and snaps.steps[-1] == load_card(ROOT / "checkpoints" / "translate")["steps"]
    assert sum(f.stat().st_size for f in snaps.root.rglob("*") if f.is_file()) <= 8 * 2**20
    assert snaps.items[0].exact_match < 0.05 and snaps.items[-1].exact_match > 0.95
    assert snaps.items[0].alignment[-1] < 0.3 < 0.9 < snaps.items[-1].alignment[-1]


# ------------------------------------------------------------------ two models, one input


def test_maps_line_up_only_with_the_same_shape_and_tokens(char_tokenizer):
    a, b = make_tiny(char_tokenizer, seed=1), make_tiny(char_tokenizer, seed=2)
    cap_a = capture(a, char_tokenizer, "hello")
    cap_b = capture(b, char_tokenizer, "hello", target=decoder_input_text(cap_a, char_tokenizer.target.detokenize))
    assert cap_b.target_tokens == cap_a.target_tokens
    assert all(mismatches(cap_a, cap_b, kind) == [] for kind in ("encoder_self", "decoder_self", "cross"))
    ma, mb, diff = difference(cap_a, cap_b, "cross", 1, None)
    np.testing.assert_allclose(ma, cap_a.cross[1].mean(0))
    np.testing.assert_allclose(diff, cap_a.cross[1].mean(0) - cap_b.cross[1, :].mean(0), atol=1e-7)
    assert np.abs(diff).max() > 0 and not difference(cap_a, cap_a, "cross", 0, 2)[2].any()
    np.testing.assert_array_equal(attention_map(cap_a, "encoder_self", 2, 1), cap_a.encoder_self[2, 1])
    own = capture(b, char_tokenizer, "hello")  # B's own output: other decoder rows
    assert own.target_tokens != cap_a.target_tokens
    assert [m.what for m in mismatches(cap_a, own, "cross")] == ["target_tokens"]
    assert mismatches(cap_a, own, "encoder_self") == []  # the encoder reads the same source
    deeper = capture(make_tiny(char_tokenizer, n_decoder_layers=3, n_heads=4), char_tokenizer, "hello")
    assert {m.what for m in mismatches(cap_a, deeper, "cross")} >= {"layers", "heads"}
    with pytest.raises(ValueError, match="do not line up"):
        difference(cap_a, deeper, "cross", 0, None)


def test_models_that_split_the_input_differently_are_named():
    a, tok_a = load_checkpoint(ROOT / "checkpoints" / "reverse")
    b, tok_b = load_checkpoint(ROOT / "checkpoints" / "dates")
    cap_a, cap_b = capture(a, tok_a, "march 3 2021"), capture(b, tok_b, "march 3 2021")
    assert "source_tokens" in [m.what for m in mismatches(cap_a, cap_b, "encoder_self")]


def test_one_inputs_alignment_is_the_cards_measure():
    model, tokenizer = load_checkpoint(ROOT / "checkpoints" / "translate")
    card = load_card(ROOT / "checkpoints" / "translate")
    for source in card["examples"][:3]:
        example = gold_example(card, source)
        assert evaluate(model, tokenizer, [example]).exact_match == 1.0  # greedy output == gold: same rows
        cap = capture(model, tokenizer, source, target=example.target)
        assert alignment_share(cap.cross, example.alignment) == pytest.approx(
            alignment_accuracy(model, tokenizer, [example])
        )
    assert alignment_share(cap.cross, []) == []


# ------------------------------------------------------------------ files


def test_beam_and_sampling_files_hold_what_the_search_did(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=3)
    trace = beam_search(model, char_tokenizer, "hello", beam_size=2, max_len=5)
    data = json.loads(beam_json(trace))
    assert data["text"] == trace.text and len(data["steps"]) == len(trace.steps)
    step = data["steps"][-1]
    assert [h["tokens"] for h in step["live"]] == [h.tokens for h in trace.steps[-1].live]
    assert np.shape(step["live"][0]["cross"]) == trace.steps[-1].live[0].cross.shape
    rows = list(csv.DictReader(io.StringIO(beam_csv(trace))))
    assert len(rows) == len(trace.tree()["step"])
    assert sum(r["on_best_path"] == "1" for r in rows) == len(trace.best_path)
    assert {r["status"] for r in rows} <= {"live", "finished", "pruned"}

    drawn = sample(model, char_tokenizer, "hello", temperature=2.0, seed=4, max_len=6, shown=3)
    rows = list(csv.DictReader(io.StringIO(sampling_csv(drawn))))
    assert [sum(r["drawn"] == "1" for r in rows if int(r["step"]) == t + 1) for t in range(6)] == [1] * 6
    assert [r["token"] for r in rows if r["drawn"] == "1"] == drawn.output_tokens
    data = json.loads(sampling_json(drawn, {"temperature": 2.0, "seed": 4}))
    assert data["settings"]["seed"] == 4 and [s["drawn"] for s in data["steps"]] == drawn.output_tokens

    arrays = np.load(io.BytesIO(comparison_npz({"a": np.eye(2)}, source_tokens=["x", "</s>"])))
    np.testing.assert_array_equal(arrays["a"], np.eye(2))
    assert list(arrays["source_tokens"]) == ["x", "</s>"]
    rows = list(csv.reader(io.StringIO(snapshots_csv([0, 5], [0.0, 0.5], [0.1, None], [0.25, 1.0]))))
    assert rows == [["step", "held_out_exact_match", "held_out_alignment", "input_alignment"],
                    ["0", "0.0", "0.1", "0.25"], ["5", "0.5", "", "1.0"]]  # fmt: skip
