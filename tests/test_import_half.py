"""Half-precision state_dicts (`model.half().state_dict()`, or bfloat16): every state_dict format loads them,
casts the weights to float32, accepts the rounded positional table, and says so in its caption.

Each format's own reference model, with its weights rounded the same way, is the independent check: the
import computes what the original code computes on the half-precision file (float32 arithmetic), and
stays within a rounding-sized distance of the float32 import."""

import copy

import pytest
import torch

from harness.reference.annotated import ann_make_model, ann_run
from harness.reference.gordic import GorTransformer, gor_run
from harness.reference.torch_tutorial import Seq2SeqTransformer, tut_run
from model import CheckpointError, load_checkpoint
from model.checkpoints.formats import inspect_checkpoint
from tests.i18n_helpers import matching, msgid_starting, rendered
from tests.import_helpers import (
    assert_close,
    assert_maps_equal,
    id_batch,
    our_run,
    perturb,
)

NOT_SINUSOIDAL = msgid_starting("{where}: {key} is not the sinusoidal positional encoding this format defines")

pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")

# (max |log p(half import) - log p(float32 import)|) allowed: a few units of each type's rounding
DRIFT = {torch.float16: 2e-2, torch.bfloat16: 1.5e-1}


def annotated():
    ref = ann_make_model(31, 27, N=2, d_model=24, d_ff=40, h=3, max_len=300)
    return ref, ref.state_dict, 3, lambda m, s, t: ann_run(m, s, t, 2)[0], id_batch(31, 27, 0, 0, 2)


def gordic():
    ref = GorTransformer(
        model_dimension=16, src_vocab_size=29, trg_vocab_size=33, number_of_heads=4, number_of_layers=2
    )
    return (
        ref,
        lambda: {"num_of_epochs": 3, "state_dict": ref.state_dict()},
        4,
        lambda m, s, t: gor_run(m, s, t, 1)[0],
        id_batch(29, 33, None, 2, 1, src_len=8),
    )


def tutorial():
    ref = Seq2SeqTransformer(3, 2, emb_size=20, nhead=5, src_vocab_size=26, tgt_vocab_size=30, dim_feedforward=36)
    return (
        ref,
        ref.state_dict,
        5,
        lambda m, s, t: tut_run(m, s, t, 1)[0].log_softmax(-1),
        id_batch(26, 30, 2, 2, 1, src_len=9, tgt_len=6),
    )


FORMATS = {"annotated": annotated, "gordic": gordic, "torch-tutorial": tutorial}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fmt", list(FORMATS))
@torch.no_grad()
def test_half_precision_state_dict_loads_in_float32(tmp_path, fmt, dtype):
    torch.manual_seed(0)
    ref, state_of, heads, ref_logp, (src, tgt) = FORMATS[fmt]()
    ref.eval()
    perturb(ref, seed=1, scale=0.1)
    torch.save(state_of(), tmp_path / "full.pt")
    rounded = copy.deepcopy(ref).to(dtype)  # what people share: model.half().state_dict(), buffers included
    ref.to(dtype)
    torch.save(state_of(), tmp_path / "half.pt")
    ref.float()  # the original code, run in float32 on the rounded weights

    info = inspect_checkpoint(tmp_path / "half.pt")
    name = str(dtype).removeprefix("torch.")
    assert info.format == fmt and info.precision == name
    assert (
        rendered("Stored in half precision ({precision}); the weights were cast to float32.", precision=name)
        in info.notes
    )
    assert (
        inspect_checkpoint(tmp_path / "full.pt").precision == "float32"
        and "half" not in inspect_checkpoint(tmp_path / "full.pt").notes
    )

    model, _ = load_checkpoint(tmp_path / "half.pt", n_heads=heads)
    assert {p.dtype for p in model.parameters()} == {torch.float32} and model.config.extra["precision"] == name
    first = next(iter(rounded.state_dict().values()))
    assert first.dtype == dtype
    full, _ = load_checkpoint(tmp_path / "full.pt", n_heads=heads)
    ours = our_run(model, src, tgt)[0].log_softmax(-1)
    assert_close(ours, ref_logp(ref, src, tgt).reshape(ours.shape), tol=1e-4)  # same numbers as its own code
    drift = (ours - our_run(full, src, tgt)[0].log_softmax(-1)).abs().max().item()
    assert 0 < drift < DRIFT[dtype]  # rounded, so not identical; but only by rounding


def test_a_wrong_table_is_still_refused_in_half_precision(tmp_path):
    ref = ann_make_model(10, 11, N=2, d_model=8, d_ff=16, h=2, max_len=30).half()
    state = ref.state_dict()
    state["src_embed.1.pe"] = state["src_embed.1.pe"].clone()
    state["src_embed.1.pe"][0, 3, 5] += 0.05  # far beyond float16 rounding (5e-4), far below the old 0.5 test
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=matching(NOT_SINUSOIDAL, key="src_embed.1.pe", pos=3, dim=5)):
        load_checkpoint(tmp_path / "bad.pt", n_heads=2)


@torch.no_grad()
def test_half_precision_maps_match_the_reference(tmp_path):
    torch.manual_seed(0)
    ref = ann_make_model(31, 27, N=2, d_model=24, d_ff=40, h=3, max_len=300).eval()
    perturb(ref, seed=1, scale=0.1)
    torch.save(ref.half().state_dict(), tmp_path / "half.pt")
    ref.float()
    model, _ = load_checkpoint(tmp_path / "half.pt", n_heads=3)
    src, tgt = id_batch(31, 27, 0, 0, 2)
    _, ref_maps = ann_run(ref, src, tgt, 2)
    assert_maps_equal(our_run(model, src, tgt)[1], ref_maps, tol=1e-4)
