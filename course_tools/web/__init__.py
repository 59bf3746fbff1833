"""Type German, see the translation and every head's attention — in a static page, no Python.

A trained checkpoint becomes a folder that any browser opens from disk: two ONNX graphs that return every
attention weight (:mod:`.graphs`), the tokenizer ported to JavaScript with its rules (:mod:`.tokenizers`), a
manifest, and one self-contained page that runs the model with onnxruntime-web (:mod:`.page`).

    python -m transformer_course export-web runs/multi30k-cpu/best.pt explore/

needs the ``[web]`` extra (onnx, onnxscript, onnxruntime) for the export; the page needs nothing at all.
"""

from .export import FORMAT, check_graphs, export_graphs, export_web
from .graphs import DecoderStepForWeb, EncoderForWeb
from .page import build_page

__all__ = ["FORMAT", "DecoderStepForWeb", "EncoderForWeb", "build_page", "check_graphs", "export_graphs", "export_web"]
