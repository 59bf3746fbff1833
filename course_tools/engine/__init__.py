"""A checkpoint as a CTranslate2 model folder: the engine OpenNMT, fairseq and Marian Transformers are served on.

    python -m transformer_course export-ct2 runs/multi30k-cpu/best.pt engine/
    python -m transformer_course translate --engine ctranslate2 --checkpoint engine/ "Ein Hund läuft."

The export (:mod:`.export`) fills CTranslate2's ``TransformerSpec`` with the course's weights; translating with it is
the runtime's :mod:`transformer_course.engine`. Needs the ``[engine]`` extra (ctranslate2).
"""

from .export import QUANTIZATIONS, check_export, export_ct2, model_spec

__all__ = ["QUANTIZATIONS", "check_export", "export_ct2", "model_spec"]
