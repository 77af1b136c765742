import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from model import capture, load_checkpoint, save_checkpoint, sinusoidal_encoding
from model.network.config import TransformerConfig
from model.network.positional import relative_position_map, wavelengths
from tests.conftest import make_tiny
from tests.i18n_helpers import matching


def test_matches_the_papers_formula_entry_by_entry():
    pe = sinusoidal_encoding(50, 16, base=10000.0)
    assert pe.shape == (50, 16) and pe.dtype == torch.float32
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000.0 ** (2 * i / 16)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_base_changes_the_wavelengths():
    assert not torch.allclose(sinusoidal_encoding(20, 8, base=100.0), sinusoidal_encoding(20, 8))
    lam = wavelengths(8, base=100.0)
    assert lam[0].item() == pytest.approx(2 * math.pi)
    assert lam[-1].item() == pytest.approx(2 * math.pi * 100.0 ** (6 / 8))


def test_half_layout_puts_sines_then_cosines():
    inter = sinusoidal_encoding(30, 12)
    half = sinusoidal_encoding(30, 12, layout="half")
    assert torch.equal(half[:, :6], inter[:, 0::2])
    assert torch.equal(half[:, 6:], inter[:, 1::2])


def test_dot_product_depends_on_the_offset_only():
    pe = sinusoidal_encoding(200, 64).double()
    for k in (1, 5, 17):
        dots = torch.stack([pe[p] @ pe[p + k] for p in range(0, 150, 7)])
        assert torch.allclose(dots, dots[0].expand_as(dots), atol=1e-4)
        # and equals sum_i cos(k w_i)
        w = 2 * math.pi / wavelengths(64)
        assert dots[0].item() == pytest.approx(torch.cos(k * w).sum().item(), abs=1e-4)
    # different offsets give different dot products
    assert abs((pe[3] @ pe[4]) - (pe[3] @ pe[13])) > 0.1


def test_a_fixed_linear_map_shifts_every_position():
    pe = sinusoidal_encoding(120, 32).double()
    for k in (1, 3, 40):
        m = relative_position_map(k, 32).double()
        shifted = pe[: 120 - k] @ m.T  # row p -> M_k PE(p)
        assert torch.allclose(shifted, pe[k:], atol=1e-5)
        # M_k is a rotation: orthogonal, so it preserves norms
        assert torch.allclose(m @ m.T, torch.eye(32, dtype=torch.float64), atol=1e-6)


def test_rejects_odd_width_and_unknown_layout():
    with pytest.raises(ValueError, match="even"):
        sinusoidal_encoding(10, 7)
    with pytest.raises(ValueError, match="layout"):
        sinusoidal_encoding(10, 8, layout="spiral")


def test_a_model_without_positions_reads_its_source_as_a_bag_of_tokens(char_tokenizer, tmp_path):
    model = make_tiny(char_tokenizer, seed=3, positional="none")
    assert model.config.positional == "none"
    plain = capture(model, char_tokenizer, "abcde", target="xyz")
    assert (plain.source_pe == 0).all() and (plain.target_pe == 0).all()
    # no positions: the encoder is permutation-equivariant, so the decoder cannot tell a source from its anagram
    anagram = capture(model, char_tokenizer, "dbeca", target="xyz")
    np.testing.assert_allclose(plain.log_probs, anagram.log_probs, atol=1e-5)
    positioned = make_tiny(char_tokenizer, seed=3)  # the same weights with sinusoids added
    a, b = (capture(positioned, char_tokenizer, s, target="xyz") for s in ("abcde", "dbeca"))
    assert np.abs(a.log_probs - b.log_probs).max() > 1e-3
    # the intervention that removes positions changes nothing here; the decoder still sees its causal mask
    off = capture(model, char_tokenizer, "abcde", target="xyz", positional="off")
    np.testing.assert_array_equal(off.log_probs, plain.log_probs)
    # saved and loaded by the native format, which stores no positional table for it
    save_checkpoint(model, char_tokenizer, tmp_path / "nope")
    assert not [k for k in load_file(str(tmp_path / "nope" / "model.safetensors")) if "_pe" in k]
    loaded, _ = load_checkpoint(tmp_path / "nope")
    assert loaded.config.positional == "none"
    np.testing.assert_array_equal(capture(loaded, char_tokenizer, "abcde", target="xyz").log_probs, plain.log_probs)
    with pytest.raises(
        ValueError,
        match=matching("{name} is not one of {allowed}", name="positional", allowed="sinusoidal, learned, none"),
    ):
        TransformerConfig(10, 10, positional="rotary")
