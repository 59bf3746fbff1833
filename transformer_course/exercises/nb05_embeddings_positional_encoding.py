"""Checkers for the exercises of notebook 05 (embeddings and positional encoding; paper §3.4, §3.5).

from transformer_course.exercises import nb05_embeddings_positional_encoding as ex
ex.check_positional_encoding(positional_encoding)
ex.check_embed(embed)
ex.check_shift_matrix(shift_matrix)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..layers import sinusoidal_table
from . import Hint, Result, expect_tensor, name_known_mistake, run_check


def _positional_variants(max_len: int, d_model: int) -> dict[str, Tensor]:
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angle = pos / 10000 ** (two_i / d_model)  # (max_len, d_model/2)
    angle_i = pos / 10000 ** (two_i / 2 / d_model)  # exponent i/d_model instead of 2i/d_model
    swapped = torch.zeros(max_len, d_model)
    swapped[:, 0::2], swapped[:, 1::2] = torch.cos(angle), torch.sin(angle)
    wrong_exponent = torch.zeros(max_len, d_model)
    wrong_exponent[:, 0::2], wrong_exponent[:, 1::2] = torch.sin(angle_i), torch.cos(angle_i)
    return {
        "sin and cos are swapped: even columns (2i) take sin, odd columns (2i+1) take cos": swapped,
        "the sines and cosines are in two halves [sin … | cos …]; the paper interleaves them: "
        "column 2i is sin, column 2i+1 is cos of the same angle (use pe[:, 0::2] and pe[:, 1::2])": torch.cat(
            [torch.sin(angle), torch.cos(angle)], dim=1
        ),
        "the exponent should be 2i/d_model, where 2i is the even column index (0, 2, 4, …); "
        "you used i/d_model": wrong_exponent,
        "the wavelengths are reversed: pos / 10000^(2i/d_model) divides, it does not multiply": _interleave(
            torch.sin(pos * 10000 ** (two_i / d_model)), torch.cos(pos * 10000 ** (two_i / d_model))
        ),
    }


def _interleave(even: Tensor, odd: Tensor) -> Tensor:
    out = torch.zeros(even.size(0), 2 * even.size(1))
    out[:, 0::2], out[:, 1::2] = even, odd
    return out


def check_positional_encoding(positional_encoding: Callable[[int, int], Tensor]) -> Result:
    """``positional_encoding(max_len, d_model)`` must return the paper's (max_len, d_model) table."""

    def check() -> None:
        for max_len, d_model in ((10, 4), (50, 16)):
            expected = sinusoidal_table(max_len, d_model)
            got = positional_encoding(max_len, d_model)
            what = f"positional_encoding({max_len}, {d_model})"
            name_known_mistake(
                got, expected, _positional_variants(max_len, d_model), atol=1e-4, message=f"{what}: {{}}"
            )
            expect_tensor(got, expected, what, atol=1e-4)

    return run_check("positional_encoding", check, "equals the paper's table (and the package's sinusoidal_table)")


def check_embed(embed: Callable[[Tensor, nn.Embedding, Tensor], Tensor]) -> Result:
    """``embed(tokens, lut, pe)`` must return lut(tokens) · √d_model + pe[:len]."""

    def check() -> None:
        torch.manual_seed(5)
        d_model = 16
        lut = nn.Embedding(20, d_model)
        pe = sinusoidal_table(12, d_model)
        tokens = torch.tensor([[4, 7, 7, 2, 0], [9, 3, 5, 0, 0]])
        with torch.no_grad():
            vectors = lut(tokens)  # (2, 5, 16)
            expected = vectors * math.sqrt(d_model) + pe[:5]
            wrong = {
                "the embeddings are not multiplied by √d_model (§3.4)": vectors + pe[:5],
                "you divided by √d_model; the paper multiplies the embedding weights by √d_model": vectors
                / math.sqrt(d_model)
                + pe[:5],
                "you multiplied by d_model; the factor is √d_model": vectors * d_model + pe[:5],
                "the positional encoding is not added": vectors * math.sqrt(d_model),
                "the positional encoding was scaled by √d_model too; only the embeddings are": (vectors + pe[:5])
                * math.sqrt(d_model),
            }
            got = embed(tokens.clone(), lut, pe)
        name_known_mistake(got, expected, wrong)
        expect_tensor(got, expected, "embed(tokens, lut, pe) for tokens of shape (2, 5)")

    return run_check("embed", check, "embeddings × √d_model plus the positions of the first len rows")


def check_shift_matrix(shift_matrix: Callable[[int, int], Tensor]) -> Result:
    """``shift_matrix(k, d_model)`` must map PE(pos) to PE(pos + k) for every pos: PE(pos + k) = M @ PE(pos)."""

    def check() -> None:
        d_model, k = 8, 3
        table = sinusoidal_table(40, d_model)
        M = shift_matrix(k, d_model)
        if not isinstance(M, Tensor):
            raise Hint(f"shift_matrix should return a torch.Tensor, got {type(M).__name__}")
        if M.shape != (d_model, d_model):
            raise Hint(f"shift_matrix({k}, {d_model}) has shape {tuple(M.shape)}, expected ({d_model}, {d_model})")
        M = M.float()
        shifted = table[: 40 - k] @ M.T  # (40-k, d_model): row pos is M @ PE(pos)
        if torch.allclose(shifted, table[k:], atol=1e-4):
            return
        if torch.allclose(table[k:] @ M.T, table[: 40 - k], atol=1e-4):
            raise Hint(
                "your matrix moves backwards: M @ PE(pos) = PE(pos − k). It is the transpose (= the "
                "inverse) of the right rotation: swap the signs of the two sine entries in each 2×2 block"
            )
        errors = (shifted - table[k:]).abs().amax(dim=0)  # (d_model,)
        column = int(errors.argmax())
        raise Hint(
            f"M @ PE(pos) differs from PE(pos + {k}) most in dimension {column} (pair {column // 2}): "
            "each pair (2i, 2i+1) needs its own 2×2 rotation by the angle k / 10000^(2i/d_model)"
        )

    return run_check("shift_matrix", check, "M @ PE(pos) = PE(pos + k) for every position: a fixed linear map")
