"""``train --set FIELD=VALUE``: any :class:`~transformer_course.config.Config` field from the command line, read as the
field's type and validated as one Config, so that a recipe change needs no code edit (like minGPT's
``--key=value``)."""

from __future__ import annotations

import difflib
from dataclasses import fields

from .config import Config

__all__ = ["apply_overrides", "parse_override"]

_TRUE, _FALSE, _NONE = ("true", "yes", "on", "1"), ("false", "no", "off", "0"), ("none", "null")


def parse_override(text: str) -> tuple[str, object]:
    """``"FIELD=VALUE"`` → ``(field, value)`` with the value read as the field's type (what ``train --set``
    takes): ``dropout=0.3``, ``N=6``, ``norm_first=true``, ``tie_embeddings=decoder``, ``clip_norm=none``.
    A ValueError says what is wrong in one line: no ``=``, an unknown field (with the nearest known one),
    or a value that is not of the field's type. Ranges are checked by :meth:`Config.validate`."""
    field_name, eq, raw = text.partition("=")
    field_name, raw = field_name.strip(), raw.strip()
    types = {f.name: str(f.type) for f in fields(Config)}
    if not eq or not field_name:
        raise ValueError(f"--set takes FIELD=VALUE (e.g. --set dropout=0.3), got {text!r}")
    if field_name not in types:
        near = difflib.get_close_matches(field_name, types, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise ValueError(f"--set {text}: Config has no field {field_name!r}; {hint}fields: {', '.join(types)}")
    kind = types[field_name]
    if "None" in kind and raw.lower() in _NONE:
        return field_name, None
    try:
        if kind.startswith("bool"):
            if raw.lower() not in _TRUE + _FALSE:
                raise ValueError
            return field_name, raw.lower() in _TRUE
        if kind.startswith("int"):
            return field_name, int(raw)
        if kind.startswith("float"):
            return field_name, float(raw)
    except ValueError:
        words = {"bool": "true or false", "int": "an integer", "float": "a number"}[kind.split()[0]]
        none = " or none" if "None" in kind else ""
        raise ValueError(f"--set {text}: {field_name} takes {words}{none}, got {raw!r}") from None
    return field_name, raw  # a str field; its choices are checked by Config.validate


def apply_overrides(config: Config, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """``config`` with each ``"FIELD=VALUE"`` of ``overrides`` applied (later ones win), validated as one
    Config: a bad field, value or combination is a ValueError naming the ``--set`` it came from."""
    changes = dict(parse_override(text) for text in overrides)
    if not changes:
        return config
    try:
        return config.replace(**changes)
    except ValueError as err:
        given = " ".join(f"--set {t}" for t in overrides)
        raise ValueError(f"{given}: {err}") from None
