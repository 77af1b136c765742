"""The training command and the batched evaluation it reports with (fast: tiny models, few steps)."""

import json
import shlex

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model import capture, greedy_decode, load_checkpoint
from model.checkpoints.checkpoint import load_card
from model.network.config import TransformerConfig
from tasks import train as train_mod
from tasks import training
from tasks.evaluate import alignment_accuracy, cross_attention_argmax, evaluate, exact_match, greedy_batch, source_ids
from tasks.registry import get_task
from tasks.tasks import Example, dataset, held_out
from tasks.training import build_tokenizer, encode_examples, make_batch, make_optimizer, noam_lr, sequence_loss, train

COPY = get_task("copy")
REQUIRED_CARD_FIELDS = {
    "task", "description", "config", "command", "held_out_exact_match", "held_out_examples", "alignment",
    "training_seconds", "steps", "seed", "parameters", "trained_on", "examples",
}  # fmt: skip


def small_config(tokenizer, **overrides):
    return TransformerConfig.preset(
        "tiny",
        src_vocab_size=len(tokenizer.source),
        tgt_vocab_size=len(tokenizer.target),
        share_embeddings=True,
        tie_generator=True,
        **{"d_model": 32, "n_heads": 2, "d_ff": 64, "n_encoder_layers": 1, "n_decoder_layers": 1, **overrides},
    )


@pytest.fixture(scope="module")
def trained_copy():
    """A small copy model after a few hundred steps (shared by the tests that need a trained model)."""
    tokenizer = build_tokenizer(COPY)
    result = train(
        COPY, small_config(tokenizer), tokenizer, steps=400, batch_size=32, warmup=100, lr_factor=1.0,
        train_size=4000, seed=0, eval_examples=0, progress=False,
    )  # fmt: skip
    return result


# ------------------------------------------------------------------ the recipe


def test_noam_schedule_matches_the_formula_and_peaks_at_warmup():
    d, warmup, factor = 64, 400, 2.0
    for step in (1, 10, 399, 400, 401, 1000, 5000):
        expected = factor * d**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert noam_lr(step, d, warmup, factor) == pytest.approx(expected, rel=1e-12)
    rates = [noam_lr(s, d, warmup, factor) for s in range(1, 3 * warmup)]
    assert int(np.argmax(rates)) + 1 == warmup
    assert rates[warmup - 1] == pytest.approx(factor * d**-0.5 * warmup**-0.5)
    # linear warm-up, inverse square-root decay
    assert noam_lr(200, d, warmup) == pytest.approx(noam_lr(100, d, warmup) * 2)
    assert noam_lr(1600, d, warmup) == pytest.approx(noam_lr(400, d, warmup) / 2)


def test_optimizer_follows_the_schedule_and_uses_the_paper_adam(char_tokenizer):
    from tests.conftest import make_tiny

    model = make_tiny(char_tokenizer).train()
    optimizer, scheduler = make_optimizer(model, warmup=5, factor=0.5)
    assert optimizer.defaults["betas"] == (0.9, 0.98) and optimizer.defaults["eps"] == 1e-9
    src = torch.randint(4, 20, (2, 6))
    seen = []
    for step in range(1, 12):
        seen.append(optimizer.param_groups[0]["lr"])  # the lr of update number `step`
        loss = model(src, src).logsumexp(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx([noam_lr(s, model.config.d_model, 5, 0.5) for s in range(1, 12)])


def test_label_smoothing_is_the_smoothed_cross_entropy_and_ignores_padding():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=g)
    targets = torch.randint(1, 7, (2, 5), generator=g)
    targets[1, 3:] = 0  # padding
    eps = 0.1
    logp = logits.log_softmax(-1)
    keep = targets != 0
    nll = -logp.gather(-1, targets[..., None])[..., 0]
    uniform = -logp.mean(-1)
    expected = ((1 - eps) * nll + eps * uniform)[keep].mean()
    assert float(sequence_loss(logits, targets, 0, eps)) == pytest.approx(float(expected), rel=1e-5)
    # a model that is certain of the right answer still pays for ignoring the other tokens
    sure = F.one_hot(targets, 7).float() * 50
    assert float(sequence_loss(sure, targets, 0, 0.0)) < 1e-6
    assert float(sequence_loss(sure, targets, 0, eps)) > 1.0


def test_training_applies_label_smoothing_by_default(monkeypatch, tmp_path):
    seen = []
    real = training.sequence_loss

    def spy(logits, targets, pad_id, label_smoothing):
        seen.append(label_smoothing)
        return real(logits, targets, pad_id, label_smoothing)

    monkeypatch.setattr(training, "sequence_loss", spy)
    card = train_mod.main(["--task", "copy", "--out", str(tmp_path / "c"), "--preset", "tiny", "--steps", "3",
                           "--train-size", "100", "--eval-examples", "0", "--report-examples", "5", "--no-progress"])  # fmt: skip
    assert seen == [0.1, 0.1, 0.1]
    assert card["recipe"]["label_smoothing"] == 0.1


def test_batches_follow_the_sequence_conventions():
    tokenizer = build_tokenizer(COPY)
    pairs = encode_examples([Example("abc", "abc", ()), Example("t", "t", ())], tokenizer)
    batch = make_batch(pairs)
    a, b, c, t = tokenizer.source.ids(list("abct"))
    assert batch.src.tolist() == [[a, b, c, 2], [t, 2, 0, 0]]
    assert batch.tgt_in.tolist() == [[1, a, b, c], [1, t, 0, 0]]
    assert batch.tgt_out.tolist() == [[a, b, c, 2], [t, 2, 0, 0]]
    assert batch.tokens == 6


def test_shared_vocabulary_only_when_both_sides_use_the_same_symbols():
    assert build_tokenizer(get_task("reverse")).shared
    tok = build_tokenizer(get_task("translate"))
    assert not tok.shared and tok.source.level == tok.target.level == "word"
    assert "voiture" in tok.target.tokens and "voiture" not in tok.source.tokens
    assert build_tokenizer(get_task("dates")).target.tokens[4:] == sorted("0123456789-")


# ------------------------------------------------------------------ training


def test_training_reduces_the_loss_and_learns_to_copy(trained_copy):
    losses = trained_copy.losses
    assert len(losses) == trained_copy.steps == 400
    assert np.mean(losses[-50:]) < 0.5 * np.mean(losses[:20])
    assert not trained_copy.model.training
    examples = held_out(COPY, 100, seed=5, exclude=trained_copy.train_sources)
    assert all(e.source not in trained_copy.train_sources for e in examples)
    tokenizer = trained_copy.tokenizer
    # per-token accuracy under teacher forcing: far above the 1-in-20 of guessing
    batch = make_batch(encode_examples(examples, tokenizer))
    with torch.no_grad():
        predicted = trained_copy.model(batch.src, batch.tgt_in).argmax(-1)
    keep = batch.tgt_out != 0
    assert float((predicted == batch.tgt_out)[keep].float().mean()) > 0.6
    assert exact_match(trained_copy.model, tokenizer, examples) > 0.05


def test_same_seed_same_weights_other_seed_other_weights():
    tokenizer = build_tokenizer(COPY)

    def run(seed):
        r = train(COPY, small_config(tokenizer, dropout=0.1), tokenizer, steps=15, batch_size=8, warmup=5,
                  lr_factor=1.0, train_size=200, seed=seed, eval_examples=0, progress=False)  # fmt: skip
        return r.model.state_dict()

    a, b, c = run(0), run(0), run(1)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_max_minutes_stops_early_with_a_clear_message(tmp_path, capsys):
    card = train_mod.main(["--task", "copy", "--out", str(tmp_path / "c"), "--preset", "tiny", "--steps", "50",
                           "--train-size", "100", "--eval-examples", "0", "--report-examples", "5",
                           "--max-minutes", "0", "--no-progress"])  # fmt: skip
    assert card["stopped_early"] is True and card["steps"] == 0
    assert "STOPPED EARLY" in capsys.readouterr().err


def test_command_writes_a_loadable_checkpoint_with_a_complete_card(tmp_path):
    out = tmp_path / "ckpt"
    argv = ["--task", "reverse", "--out", str(out), "--preset", "tiny", "--d-model", "24", "--heads", "3",
            "--steps", "20", "--batch-size", "16", "--warmup", "10", "--train-size", "300",
            "--eval-every", "10", "--eval-examples", "20", "--report-examples", "40", "--seed", "3", "--no-progress",
            "--positional", "learned"]  # fmt: skip
    card = train_mod.main(argv)
    model, tokenizer = load_checkpoint(out)
    assert load_card(out) == card
    assert REQUIRED_CARD_FIELDS <= set(card)
    assert card["task"] == "reverse" and card["steps"] == 20 and card["seed"] == 3
    assert card["stopped_early"] is False
    assert card["held_out_examples"] == 40
    assert card["config"]["d_model"] == model.config.d_model == 24 and card["config"]["n_heads"] == 3
    assert card["parameters"] == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert tokenizer.shared and model.config.share_embeddings and model.config.tie_generator
    assert shlex.split(card["command"])[:3] == ["python", "-m", "model.train"]
    assert train_mod.parse_args(shlex.split(card["command"])[3:]) == train_mod.parse_args(argv)
    assert len(card["alignment"]["per_layer"]) == model.config.n_decoder_layers
    assert card["examples"] == get_task("reverse").examples()
    assert model.config.positional == card["config"]["positional"] == "learned"
    train_lengths = [len(e.source) for e in dataset(get_task("reverse"), 300, 3)]
    assert card["input_tokens"] == {"min": min(train_lengths), "max": max(train_lengths), "unit": "characters"}
    # the card's numbers are the loaded model's numbers on the same held-out examples
    train_sources = {e.source for e in dataset(get_task("reverse"), 300, 3)}
    report = held_out(get_task("reverse"), 40, card["held_out_seed"], exclude=train_sources)
    scores = evaluate(model, tokenizer, report)
    assert card["held_out_exact_match"] == pytest.approx(scores.exact_match, abs=1e-4)
    assert card["alignment"]["per_layer"] == pytest.approx(scores.alignment, abs=1e-4)
    json.dumps(card)  # plain JSON


# ------------------------------------------------------------------ batched evaluation == one at a time

SOURCES = ["hello", "a", "abcdefghijklmnopqrst", "qq", "tsrqponm", "feedback", "abababab"]


def one_at_a_time_alignment(model, tokenizer, examples):
    """The attention measure computed from `capture`, one example at a time (the reference)."""
    hits = np.zeros(model.config.n_decoder_layers)
    counted = 0
    for ex in examples:
        cap = capture(model, tokenizer, ex.source)
        best = cap.cross.mean(1).argmax(-1)  # (L, T)
        out = cap.target_tokens[1:]
        gold = list(ex.target) if tokenizer.target.level == "char" else ex.target.split()
        for j in range(min(len(out) + 0, len(gold))):
            linked = {s for s, t in ex.alignment if t == j}
            if not linked:
                continue
            counted += 1
            hits += [best[layer, j] in linked for layer in range(len(hits))]
    return list(hits / counted)


@pytest.mark.parametrize("which", ["random", "trained"])
def test_batched_greedy_equals_greedy_decode(which, trained_copy, char_tokenizer):
    from tests.conftest import make_tiny

    if which == "random":  # never says </s>: exercises the per-source step limits
        model, tokenizer = make_tiny(char_tokenizer, seed=3), char_tokenizer
    else:
        model, tokenizer = trained_copy.model, trained_copy.tokenizer
    batched = greedy_batch(model, source_ids(model, tokenizer, SOURCES), batch_size=3)
    single = [greedy_decode(model, tokenizer, s).output_ids for s in SOURCES]
    assert batched == single
    if which == "trained":
        assert sum(o[-1:] == [2] for o in batched) >= 4  # most stop with </s>


def test_batched_attention_equals_capture(trained_copy):
    model, tokenizer = trained_copy.model, trained_copy.tokenizer
    src = source_ids(model, tokenizer, SOURCES)
    outputs = greedy_batch(model, src)
    batched = cross_attention_argmax(model, src, outputs, batch_size=4)
    for source, best in zip(SOURCES, batched):
        cap = capture(model, tokenizer, source)
        np.testing.assert_array_equal(best.numpy(), cap.cross.mean(1).argmax(-1))


def test_alignment_and_exact_match_equal_the_one_at_a_time_reference(trained_copy):
    model, tokenizer = trained_copy.model, trained_copy.tokenizer
    for task in ("copy", "reverse"):  # reverse: the trained copy model attends to the wrong places
        examples = held_out(get_task(task), 30, seed=9, exclude=set())
        expected = one_at_a_time_alignment(model, tokenizer, examples)
        assert alignment_accuracy(model, tokenizer, examples, batch_size=7) == pytest.approx(expected)
        texts = [greedy_decode(model, tokenizer, e.source).text for e in examples]
        expected_em = np.mean([t == e.target for t, e in zip(texts, examples)])
        assert exact_match(model, tokenizer, examples, batch_size=7) == pytest.approx(expected_em)
    assert exact_match(model, tokenizer, [Example("abc", "xyz", ())]) == 0.0


def test_checkpoint_averaging_is_the_mean_of_the_last_snapshots():
    """average=3, every 2 steps: the mean of the weights after steps 2, 4 and 6 of the same run."""
    tokenizer = build_tokenizer(COPY)

    def run(steps, average):
        r = train(COPY, small_config(tokenizer, dropout=0.1), tokenizer, steps=steps, batch_size=8, warmup=3,
                  lr_factor=1.0, train_size=100, seed=1, eval_examples=0, progress=False, average=average,
                  average_every=2)  # fmt: skip
        return r, r.model.state_dict()

    result, averaged = run(6, 3)
    assert result.averaged == 3
    states = [run(s, 1)[1] for s in (2, 4, 6)]
    for key, value in averaged.items():
        torch.testing.assert_close(value, sum(s[key] for s in states) / 3)
    assert not torch.equal(averaged["generator.bias"], states[-1]["generator.bias"])


# ------------------------------------------------------------------ the command's safety


TINY_RUN = ["--task", "copy", "--preset", "tiny", "--steps", "3", "--train-size", "100", "--eval-examples", "0",
            "--report-examples", "5", "--no-progress"]  # fmt: skip


def test_checkpoint_is_saved_before_the_report_and_kept_when_it_fails(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("sequence reaches position 64")

    monkeypatch.setattr(train_mod, "report", broken)
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="held-out report failed") as err:
        train_mod.main(["--out", str(out), *TINY_RUN])
    assert str(out) in str(err.value) and "sequence reaches position 64" in str(err.value)
    model, tokenizer = load_checkpoint(out)  # the trained weights are there
    card = load_card(out)
    assert card["steps"] == 3 and "held_out_exact_match" not in card
    assert model.config.tgt_vocab_size == len(tokenizer.target)


def test_an_existing_checkpoint_is_replaced_only_on_purpose(tmp_path):
    out = tmp_path / "run"
    first = train_mod.main(["--out", str(out), *TINY_RUN])
    before = (out / "model.safetensors").read_bytes()
    with pytest.raises(SystemExit, match="--overwrite"):
        train_mod.main(["--out", str(out), *TINY_RUN, "--seed", "1"])
    assert (out / "model.safetensors").read_bytes() == before  # untouched
    second = train_mod.main(["--out", str(out), *TINY_RUN, "--seed", "1", "--overwrite"])
    assert (out / "model.safetensors").read_bytes() != before and second["seed"] == 1 != first["seed"]
    assert "--overwrite" not in second["command"]  # the card's command names what decides the weights
    (tmp_path / "empty").mkdir()
    assert train_mod.main(["--out", str(tmp_path / "empty"), *TINY_RUN])["steps"] == 3
