"""Answers as keys: a quiz's texts are locked with the answer, so reading the package tells no answer.

A checker must tell a right answer from a wrong one, so the process that runs it can always try answers; what it
must not do is *show* them. So a question stores no answer, no letter set a right letter could be subtracted
from, no explanation that names the answer, and no digest a short loop inverts:

- **One entry per answer the checker speaks about.** A multiple-choice question has an entry for *every* letter,
  the right one's (why it is right) and each wrong one's (what it mixes up) alike; a number has one for each of
  the three buckets it accepts (its own and both neighbours) and for those of each plausible wrong number (its
  hint); a find-the-bug exercise has one for every line and one for the set of wrong lines. Each entry is filed
  under a *tag* and its text is encrypted, both derived from the answer it belongs to, so the entries' keys say
  nothing, and all the texts of one question are padded to one length, so their sizes say nothing either.
- **The attempt is the key.** A check derives a key from ``salt``, the question's ``key`` and the canonical form
  of the attempt (:func:`derive`), looks up its tag and, only when it is there, decrypts that entry: a right
  attempt unlocks the explanation, a wrong letter its hint, and anything else finds nothing. The plain texts live
  outside the package, with the reference solutions (``notebooks/solutions/quiz/<module>.json``), and the course
  tooling, ``python -m course_tools.quiz notebooks/solutions/quiz``, writes the locked entries into
  ``exercises/questions/<module>.json``: the runtime only unlocks.
- **A slow key.** The derivation is scrypt (n = 2¹⁴, r = 8, p = 1: 16 MiB of memory each), not one SHA-256.
  Measured on the course's 2-core CPU: 42 ms per derivation on a quiet machine (73 ms with four other jobs
  running), so one check stays under 50 ms, and a loop over 10⁴ candidate buckets costs about 7 minutes of one
  core (10⁶: about 12 hours), where the same loop over the former SHA-256 digests took 5 ms. The 16 MiB each
  try needs keep a GPU from doing it much faster.
- **A salt the hub does not get.** Each question's ``salt`` is a 24-digit hex string in its checker module, the
  form the hub wheel leaves out (``"sealed:N"``, :mod:`course_tools.classroom.verdict`); the graded hidden test
  carries it back. Without it no entry of the hub wheel can be unlocked, whatever the loop.

What this does not do: in a self-learner's installation the checker itself is an oracle (it must be, to help),
so a learner can try every letter, every line, and with minutes of computing every bucket of a number. The
locking makes that cost what trying costs, and keeps answers out of every text a learner reads; grades that hold
come from the classroom's graded path.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math

__all__ = [
    "SCRYPT",
    "canonical",
    "derive",
    "lock",
    "number_form",
    "tag",
    "unlock",
]

SCRYPT = {"n": 2**14, "r": 8, "p": 1}  # 16 MiB per derivation (128 · r · n bytes): about 42 ms on the course's CPU


def canonical(answer) -> str:
    """One text per answer, whatever its form: a letter ``'B'``/``'(b)'`` → ``'letter:b'``; a collection of
    whole numbers (bug lines) → ``'lines:2,5,6'`` (sorted); one whole number of a line → ``'line:6'``."""
    if isinstance(answer, str):
        return "letter:" + answer.strip().strip("().").strip().lower()
    if isinstance(answer, (set, frozenset, list, tuple)):
        return "lines:" + ",".join(str(int(n)) for n in sorted(set(answer)))
    if isinstance(answer, int) and not isinstance(answer, bool):
        return f"line:{answer}"
    raise TypeError(f"no canonical form for {type(answer).__name__}")


def number_form(value: float, rel_tol: float, step: int = 0) -> str:
    """The bucket of ``value`` on a logarithmic grid of relative width ``rel_tol`` (``rel_tol == 0``: the number
    itself), as text: what a number is keyed by. ``step``: the bucket that many places up the grid (the locks of
    a right number are filed under its bucket and both neighbours'); 0 and exact numbers have no neighbours."""
    if rel_tol == 0:
        return f"exact:{float(value)!r}"
    if value == 0:
        return "bucket:0"
    sign = "+" if value > 0 else "-"
    return f"bucket:{sign}{math.floor(math.log(abs(value)) / math.log1p(rel_tol)) + step}@{rel_tol!r}"


@functools.lru_cache(maxsize=256)
def derive(salt: str, key: str, form: str) -> bytes:
    """64 bytes from scrypt of the attempt's canonical ``form``, salted with the question's ``salt`` and ``key``."""
    return hashlib.scrypt(form.encode("utf-8"), salt=f"{salt}\x1f{key}".encode(), dklen=64, maxmem=64 * 2**20, **SCRYPT)


def tag(derived: bytes) -> str:
    """The name an entry is filed under (16 hex digits), from the derived key."""
    return hashlib.sha256(b"tag\x1f" + derived).hexdigest()[:16]


def _stream(derived: bytes, length: int) -> bytes:
    blocks = (hashlib.sha256(b"text\x1f" + derived + i.to_bytes(4, "big")).digest() for i in range(length // 32 + 1))
    return b"".join(blocks)[:length]


def lock(derived: bytes, entry: dict, length: int) -> str:
    """``entry`` (a JSON object) encrypted with the derived key, padded with spaces to ``length`` bytes (hex)."""
    plain = json.dumps(entry, ensure_ascii=False, sort_keys=True).encode("utf-8").ljust(length)
    return bytes(a ^ b for a, b in zip(plain, _stream(derived, len(plain)))).hex()


def unlock(derived: bytes, locked: str) -> dict:
    """The entry :func:`lock` encrypted (only the right derived key gives it back)."""
    data = bytes.fromhex(locked)
    return json.loads(bytes(a ^ b for a, b in zip(data, _stream(derived, len(data)))).decode("utf-8"))
