"""bertviz's head and model views of a capture, optional (notebook 10).

bertviz (Vig, 2019) draws attention as lines between tokens. Its ``head_view`` / ``model_view`` take, per
layer, tensors of shape (batch=1, heads, q, k); :func:`to_bertviz` turns an
:class:`~transformer_course.viz.capture.AttentionCapture` into those arguments. bertviz is not a dependency
(``pip install --no-deps bertviz``) and its pages load require.js and d3 from a CDN, so unlike the Altair
views it needs internet to draw.
"""

from __future__ import annotations

from .capture import AttentionCapture

__all__ = ["bertviz_view", "to_bertviz"]


def to_bertviz(capture: AttentionCapture) -> dict:
    """The keyword arguments of bertviz's ``head_view`` / ``model_view`` for an encoder-decoder model.

    bertviz takes, per layer, tensors of shape (batch=1, heads, q, k): ``encoder_attention``,
    ``decoder_attention``, ``cross_attention``, with ``encoder_tokens`` and ``decoder_tokens``.
    """
    return {
        "encoder_attention": tuple(w[None] for w in capture.encoder),  # (1, h, S, S) per layer
        "decoder_attention": tuple(w[None] for w in capture.decoder),  # (1, h, T, T) per layer
        "cross_attention": tuple(w[None] for w in capture.cross),  # (1, h, T, S) per layer
        "encoder_tokens": list(capture.src_tokens),
        "decoder_tokens": list(capture.tgt_tokens),
    }


def bertviz_view(capture: AttentionCapture, view: str = "head"):
    """bertviz's ``head_view`` or ``model_view`` of a capture (optional; ``pip install --no-deps bertviz``).

    bertviz's HTML loads require.js and d3 from a CDN, so it needs internet, unlike the Altair views here.
    """
    if view not in ("head", "model"):
        raise ValueError(f"view must be 'head' or 'model', got {view!r}")
    try:
        import bertviz
    except ImportError as error:
        raise ImportError(
            "bertviz is not installed; run `pip install --no-deps bertviz` (it needs internet to draw)"
        ) from error
    show = bertviz.head_view if view == "head" else bertviz.model_view
    return show(**to_bertviz(capture), html_action="return")
