"""The checkers speak English, or Chinese after ``set_language("zh")``: every message a learner sees is an id passed
to a checker module's ``t()`` (or ``lazy_t()`` for a text written at import), and every id has its English and its
Chinese template (transformer_course/exercises/en/ and zh/<module>.json) with the same fields. The shortcut guard
passes English templates to ``i18n.t`` (exercises/zh/guard.json). English stays exactly as it was."""

import ast
import functools
import json
import re
import string
import tomllib
from pathlib import Path

import pytest
import torch

from transformer_course import i18n
from transformer_course.exercises import lazy_t as common_lazy_t
from transformer_course.exercises import (
    nb00_introduction,
    nb01_masks,
    nb02_attention,
    nb03_multi_head_attention,
    nb04_layernorm_residual,
    nb05_embeddings_positional_encoding,
    nb06_encoder,
    nb07_decoder,
    nb08_training_loop,
    nb09_decoding,
    nb10_attention_visualization,
    nb11_train_multi30k,
    nb12_gpt_from_the_same_parts,
)
from transformer_course.exercises import t as common_t
from transformer_course.i18n import get_language, lazy_t, load_catalogue, messages, register, set_language, t

from helpers import solutions

EXERCISES = Path(__file__).resolve().parent.parent / "transformer_course" / "exercises"
MODULES = sorted(p.stem for p in EXERCISES.glob("*.py") if "from ..i18n import" in p.read_text(encoding="utf-8"))
TEMPLATED = {"guard"}  # passes English templates to i18n.t; every other module passes ids to its own t
TEMPLATE_FUNCTIONS = {"t", "lazy_t"}
# English words side by side: a sentence, not a code name ("self-attention with a mask", not "x + norm(x)")
PROSE = re.compile(r"[A-Za-z]{2,}'?[a-z]* +[A-Za-z]{2,}")
# strings with English words that are not messages to a learner, each with the reason
NOT_MESSAGES = {
    ("__init__", "{}: hints for letters {} not in {}"): "an authoring error in a checker module's Choice, raised "
    "when the module is imported; never shown to a learner",
    ("__init__", "questions/{}.json has {}, but digests were given for {}"): "an authoring error in a checker "
    "module's quiz, raised when the module is imported; never shown to a learner",
}


def source(module: str) -> str:
    return (EXERCISES / f"{module}.py").read_text(encoding="utf-8")


@functools.cache
def tree(module: str) -> ast.Module:
    """The parsed module (one tree per module, so that its nodes can be told apart by id)."""
    return ast.parse(source(module))


def catalogue_name(module: str) -> str:
    return "common" if module == "__init__" else module


def catalogue(module: str, language: str = "zh") -> dict[str, str]:
    return load_catalogue(catalogue_name(module), language)


def english(module: str) -> dict[str, str]:
    """{id or template: English template} of a module's messages."""
    if module in TEMPLATED:
        return {template: template for template in catalogue(module)}
    return catalogue(module, "en")


def called(node: ast.AST) -> str | None:
    """The name a call calls: ``t`` for ``t(...)``, ``format`` for ``"...".format(...)``."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return None


def template_calls(module: str) -> list[ast.Call]:
    return [node for node in ast.walk(tree(module)) if called(node) in TEMPLATE_FUNCTIONS]


def templates(module: str) -> set[str]:
    """The ids (English templates in the guard) a module passes to t() and lazy_t(), and those its quiz's questions
    (exercises/questions/<module>.json) name."""
    called_ids = {call.args[0].value for call in template_calls(module) if call.args and is_text(call.args[0])}
    return called_ids | question_ids(module)


def question_ids(module: str) -> set[str]:
    path = EXERCISES / "questions" / f"{module}.json"
    table = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    ids = set()
    for question in table.values():
        ids |= {question[field] for field in ("why", "otherwise") if field in question}
        ids |= set(question.get("mistakes", {})) | set(question.get("wrong", {}).values())
    return ids


def is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def fields(template: str) -> set[tuple[str, str, str | None]]:
    """(name, format spec, conversion) of each field: a translation keeps ``{got:,}`` and ``{got!r}`` as they are."""
    return {(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None}


# ---- static: every message is a literal id with both its entries, and no message bypasses t() ----------------


def test_the_checker_modules_are_found():
    assert {"__init__", "guard", "seal", "nb02_attention", "nb11_train_multi30k"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_message_is_one_literal_id_with_its_values_named(module):
    """t("shape_expected", what=..., got=...): never an f-string, a variable or a concatenation (the catalogue could
    not hold it), and exactly its template's fields as keywords (a missing one would raise)."""
    problems = []
    texts = english(module)
    for call in template_calls(module):
        where = f"{module}.py:{call.lineno}"
        if len(call.args) != 1 or not is_text(call.args[0]):
            problems.append(f"{where}: the first argument of {called(call)}() must be one string literal")
            continue
        key = call.args[0].value
        if module not in TEMPLATED and key not in texts:
            problems.append(f"{where}: no id {key!r} in exercises/en/{catalogue_name(module)}.json")
            continue
        names = {keyword.arg for keyword in call.keywords}
        if None in names:
            problems.append(f"{where}: name each value (no **values)")
        elif names != {name for name, _, _ in fields(texts.get(key, key))}:
            problems.append(f"{where}: keywords {sorted(names)} do not match the fields of {texts.get(key, key)!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", MODULES)
def test_every_message_has_its_entry_in_both_languages_with_the_same_fields(module):
    zh, en = catalogue(module), english(module)
    missing = sorted(key for key in templates(module) if key not in zh)
    assert not missing, f"no Chinese entry in exercises/zh/ for {len(missing)} messages:\n" + "\n".join(missing)
    assert set(zh) == set(en), f"ids in one language only: {sorted(set(zh) ^ set(en))}"
    different = [key for key in templates(module) if fields(en[key]) != fields(zh[key])]
    assert not different, f"the Chinese templates must keep the fields, specs and conversions of: {different}"


def test_each_catalogue_is_a_file_of_texts_its_module_loads_and_the_wheel_carries():
    """exercises/en/ and exercises/zh/ hold one JSON object of texts per checker module, read by its
    ``t, lazy_t = messages(name)`` (the guard: ``register("zh", load_catalogue("guard"))``; zh/learner.json: tc.learner's
    lines, registered by tc.provenance); pyproject.toml ships them as package data."""
    files = sorted(path.stem for path in (EXERCISES / "zh").glob("*.json"))
    keyed = sorted(catalogue_name(module) for module in MODULES if module not in TEMPLATED)
    assert files == sorted([*map(catalogue_name, MODULES), "learner"])
    assert sorted(path.stem for path in (EXERCISES / "en").glob("*.json")) == keyed
    for language in ("en", "zh"):
        assert not list((EXERCISES / language).glob("*.py")), f"the catalogues are data: no Python in {language}/"
    for name in files:
        found = json.loads((EXERCISES / "zh" / f"{name}.json").read_text(encoding="utf-8"))
        assert found and all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()), name
        assert load_catalogue(name) == found
        owner = "provenance" if name == "learner" else {"common": "__init__"}.get(name, name)
        home = EXERCISES.parent if name == "learner" else EXERCISES
        loads = f't, lazy_t = messages("{name}")' if name in keyed else f'register("zh", load_catalogue("{name}"))'
        assert loads in (home / f"{owner}.py").read_text(encoding="utf-8"), name
    pyproject = tomllib.loads((EXERCISES.parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["transformer_course.exercises"]
    assert {"en/*.json", "zh/*.json", "questions/*.json"} <= set(shipped)


def test_every_id_a_question_names_is_a_message_of_its_module():
    """A quiz's texts are ids of its module's messages; a question file belongs to a module that loads it."""
    for path in (EXERCISES / "questions").glob("*.json"):
        assert f'questions(\n    "{path.stem}",' in source(path.stem) or f'questions("{path.stem}"' in source(path.stem)
        missing = sorted(question_ids(path.stem) - set(english(path.stem)))
        assert not missing, f"questions/{path.name} names ids exercises/en/{path.name} lacks: {missing}"


@pytest.mark.parametrize("module", MODULES)
def test_every_entry_belongs_to_a_message_the_module_uses(module):
    for language in ("en", "zh") if module not in TEMPLATED else ("zh",):
        unused = sorted(set(catalogue(module, language)) - templates(module))
        assert not unused, f"entries of {language}/{catalogue_name(module)}.json no checker uses: {unused}"


def test_an_id_says_what_its_message_is_about():
    """Short snake_case words, so that a reader of a checker can find the message."""
    bad = [
        (module, key)
        for module in MODULES
        if module not in TEMPLATED
        for key in catalogue(module, "en")
        if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", key) or len(key) > 48
    ]
    assert not bad, bad


# a Chinese character, or Chinese punctuation (a template such as "{what}：{hint}" has only the colon)
CHINESE = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff01-\uff1f]")


@pytest.mark.parametrize("module", MODULES)
def test_every_chinese_entry_is_chinese(module):
    en = english(module)
    left = [en[key] for key, zh in catalogue(module).items() if zh == en[key] or not CHINESE.search(zh)]
    assert not left, f"entries left in English: {left}"


@pytest.mark.parametrize("module", MODULES)
def test_two_hints_of_a_module_never_share_one_translation(module):
    """Hints are keys of tables (hint → wrong answer): two English hints with one Chinese text would merge into one
    key and lose a hint in Chinese. Only frames around a hint ("{what} = {got}: {hint}") may coincide."""
    by_translation: dict[str, list[str]] = {}
    en = english(module)
    for key, zh in catalogue(module).items():
        by_translation.setdefault(zh, []).append(en[key])
    merged = [
        english for english in by_translation.values() if len(english) > 1 and not all("{hint}" in e for e in english)
    ]
    assert not merged, f"one Chinese text for several English templates: {merged}"


def test_a_template_shared_by_two_modules_has_one_translation():
    seen: dict[str, tuple[str, str]] = {}
    clashes = []
    for module in MODULES:
        en = english(module)
        for key, zh in catalogue(module).items():
            text = en[key]
            if text in seen and seen[text][1] != zh:
                clashes.append(f"{text!r}: {seen[text][0]} and {module} differ")
            seen.setdefault(text, (module, zh))
    assert not clashes, "\n".join(clashes)


def import_time_nodes(node: ast.AST):
    """The nodes that run when the module is imported: everything outside function bodies and lambdas."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from (d for decorator in getattr(child, "decorator_list", []) for d in ast.walk(decorator))
            continue
        yield child
        yield from import_time_nodes(child)


@pytest.mark.parametrize("module", MODULES)
def test_no_message_is_translated_at_import(module):
    """t() at import would fix the language before the notebook chooses it: texts written at import use lazy_t()."""
    early = [node.lineno for node in import_time_nodes(tree(module)) if called(node) == "t"]
    assert not early, f"{module}.py calls t() at import on lines {early}; use lazy_t() there"


def builds_a_string(node: ast.AST) -> bool:
    """An f-string, a literal, a concatenation or a .format/.join: a message made without t(). A code name alone
    ("LayerNorm", "pe_dot") reads the same in every language and may stay a literal."""
    if isinstance(node, ast.IfExp):
        return builds_a_string(node.body) or builds_a_string(node.orelse)
    if is_text(node):
        return not re.fullmatch(r"[\w.]+", node.value)
    return isinstance(node, (ast.JoinedStr, ast.BinOp)) or called(node) in {"format", "join"}


# the calls whose arguments a learner reads: Hint(message), Result(name, passed, message),
# run_check(name, check, success), check_question(name, question, answer)
SHOWN = {"Hint": (0,), "Result": (0, 2), "run_check": (0, 2), "check_question": (0,)}


@pytest.mark.parametrize("module", MODULES)
def test_no_hint_or_result_is_built_without_t(module):
    problems = []
    for node in ast.walk(tree(module)):
        for position in SHOWN.get(called(node), ()):
            if position < len(node.args) and builds_a_string(node.args[position]):
                problems.append(f"{module}.py:{node.lineno}: {called(node)}(...) argument {position} skips t()")
    assert not problems, "\n".join(problems)


def texts_outside_templates(module: str):
    """Each string literal (and each literal part of an f-string) that is neither a docstring nor a template."""
    root = tree(module)
    skip = {id(call.args[0]) for call in template_calls(module) if call.args}
    for node in ast.walk(root):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node, clean=False):
            skip.add(id(node.body[0].value))
    for node in ast.walk(root):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in node.values)
            text = "".join(part.value if is_text(part) else "{}" for part in node.values)
            yield node.lineno, text
        elif is_text(node):
            yield node.lineno, node.value


@pytest.mark.parametrize("module", MODULES)
def test_no_english_sentence_is_left_outside_t(module):
    """The net under the other checks: a sentence in a checker module is a template, or a listed non-message."""
    left = [
        f"{module}.py:{line}: {text!r}"
        for line, text in texts_outside_templates(module)
        if PROSE.search(text) and (module, text) not in NOT_MESSAGES
    ]
    assert not left, "put these through t() or lazy_t():\n" + "\n".join(left)


def test_the_static_checks_catch_a_message_that_skips_t():
    code = 'def check():\n    raise Hint(f"{what} is wrong")\nX = t("made at import")\n'
    node = ast.parse(code)
    hint = next(n for n in ast.walk(node) if called(n) == "Hint")
    assert builds_a_string(hint.args[0])
    assert [n.lineno for n in import_time_nodes(node) if called(n) == "t"] == [3]
    assert PROSE.search("is wrong") and not PROSE.search("x + norm(sublayer(x))")


def test_the_chinese_entries_use_the_glossarys_terms():
    """The checkers speak the 术语表's words (掩码, not 遮罩; 词元, not 令牌), as the zh notebooks do."""
    from helpers import GLOSSARY_ZH, avoided_uses, parse_glossary

    texts = [(f"exercises/zh/{module}", zh) for module in MODULES for zh in catalogue(module).values()]
    found = avoided_uses(texts, parse_glossary(GLOSSARY_ZH))
    assert not found, "\n".join(found)


# ---- dynamic: each notebook's checkers print English by default and Chinese after set_language("zh") ----------


@pytest.fixture(autouse=True)
def language():
    """Every test starts in English and leaves the language as it found it."""
    before = get_language()
    set_language("en")
    yield
    set_language(before)


def ex_local_mask_hiding_the_diagonal(size, window):
    i, j = torch.arange(size)[:, None], torch.arange(size)[None, :]
    return ((i - j > 0) & (i - j < window))[None, None]


# (notebook and path, the checker call, the English line it prints: exactly what it printed before the 中文版)
LINES = [
    (
        "nb00 fails",
        lambda: nb00_introduction.check_attention_layer_macs(lambda n, d, h: 2 * n * n * d),
        "❌ attention layer cost: attention_layer_macs(n=10, d=64, heads=4) = 12,800: only the attention core is "
        "counted: the four projections W^Q, W^K, W^V, W^O cost n·d² each",
    ),
    (
        "nb00 passes",
        lambda: nb00_introduction.check_layers_to_connect(solutions("nb00_introduction").layers_to_connect),
        "✅ layers to connect: passed: ⌈(n − 1)/(k − 1)⌉ contiguous layers, ⌈log_k n⌉ dilated ones",
    ),
    (
        "nb01 fails",
        lambda: nb01_masks.check_local_mask(ex_local_mask_hiding_the_diagonal),
        "❌ local mask: local_mask(6, window=3) hides the diagonal: a position may attend to itself",
    ),
    (
        "nb01 passes",
        lambda: nb01_masks.check_mask_from_lengths(solutions("nb01_masks").mask_from_lengths),
        "✅ mask from lengths: passed: torch.arange(max_len) < lengths[:, None], as (B, 1, 1, L)",
    ),
    (
        "nb02 fails",
        lambda: nb02_attention.check_bug_lines([3]),
        "❌ find the bugs: line 3 is right: einsum '...qd,...kd->...qk' multiplies every query with every key over d, "
        "Q Kᵀ",
    ),
    (
        "nb02 passes",
        lambda: nb02_attention.check_longest_sentence(solutions("nb02_attention").longest_sentence),
        "✅ how long a sentence fits: passed: the weights grow with n², so n = ⌊√(memory / (batch · heads · "
        "bytes_per_number))⌋: 4 times the memory gives sentences twice as long",
    ),
    (
        "nb03 fails",
        lambda: nb03_multi_head_attention.check_predicted_shapes(
            lambda b, T, S, d, h: {
                **solutions("nb03_multi_head_attention").predicted_shapes(b, T, S, d, h),
                "q": (b, T, h, d // h),
            }
        ),
        "❌ predicted shapes: predicted_shapes(batch=2, T=4, S=6, d_model=512, heads=8)['q'] = (2, 4, 8, 64): that is "
        "before the transpose: split_heads puts the heads before the positions",
    ),
    (
        "nb03 passes",
        lambda: nb03_multi_head_attention.check_question_cross("b"),
        "✅ question 2 (cross-attention): right: its keys and values come from the encoder's memory, which does not "
        "change while the sentence is written: project once, reuse at every step (notebook 09 caches it)",
    ),
    (
        "nb04 fails",
        lambda: nb04_layernorm_residual.check_bug_line(12),
        "❌ the wrong line: that line computes E[x²] exactly as it says; the trouble is what the next step does with it",
    ),
    (
        "nb04 passes",
        lambda: nb04_layernorm_residual.check_rms_norm(solutions("nb04_layernorm_residual").rms_norm),
        "✅ RMSNorm: equals F.rms_norm, also on rows with a tiny spread",
    ),
    (
        "nb05 fails",
        lambda: nb05_embeddings_positional_encoding.check_quiz(q1=2 * 3.141592653589793 * 10000),
        "❌ q1: that is the paper's round bound 10000 · 2π; the last pair is i = d_model/2 − 1 = 255, so the "
        "exponent is 2i/d_model = 510/512, not 1",
    ),
    (
        "nb05 passes",
        lambda: nb05_embeddings_positional_encoding.check_pe_dot(
            solutions("nb05_embeddings_positional_encoding").pe_dot
        ),
        "✅ pe_dot: Σ_i cos(ω_i·k): it depends on the distance k only, never on pos",
    ),
    (
        "nb06 fails",
        lambda: nb06_encoder.check_mask_effect([[False] * 5, [False] * 5]),
        "❌ mask effect: leaving the mask out lets every query of sentence 1 read its two <pad> keys: its outputs "
        "change",
    ),
    (
        "nb06 passes",
        lambda: nb06_encoder.check_encoder_parameter_count(solutions("nb06_encoder").encoder_parameter_count),
        "✅ encoder_parameter_count: a closed form: right for five sizes, the paper's base encoder and one of 9.7 "
        "billion parameters included",
    ),
    (
        "nb07 fails",
        lambda: nb07_decoder.check_mystery(model_1="a", model_2="c"),
        "❌ find the bug: model_2 is not (c): change one word of the source: the decoder's outputs change, so "
        "cross-attention does read the memory",
    ),
    (
        "nb07 passes",
        lambda: nb07_decoder.check_quiz(q2=32),
        "✅ q2: right: sequence first: dimension 1 (10) is read as the batch and dimension 0 (32) as the positions, so "
        "the 'sentence' of one output holds one vector of each of the 32 real sentences, and attention mixes them",
    ),
    (
        "nb08 fails",
        lambda: nb08_training_loop.check_loss_floor(0),
        "❌ the loss floor: loss_floor = 0: 0 is the common misconception: with ε > 0 the target q itself is spread "
        "out, and the loss −Σ q log p is at least the entropy of q (reached when p = q)",
    ),
    (
        "nb08 passes",
        lambda: nb08_training_loop.check_peak(*solutions("nb08_training_loop").peak()),
        "✅ the peak of the schedule: passed: step 150, rate 0.2 · (256 · 150)^-0.5 = 1.021e-03",
    ),
    (
        "nb09 fails",
        lambda: nb09_decoding.check_table_design(
            {
                "<s>": {"A": 0.5, "B": 0.4, "C": 0.1},
                "A": {"</s>": 0.1, "A": 0.3, "B": 0.2, "C": 0.4},
                "B": {"</s>": 0.9, "A": 0.05, "B": 0.03, "C": 0.02},
                "C": {"</s>": 0.6, "A": 0.2, "B": 0.1, "C": 0.1},
            }
        ),
        "❌ table design: beam search with k = 2 already finds the most likely sentence, B </s> (P = 0.3600); for "
        "k = 2 to miss it and k = 3 to find it, it can start with the word ranked third after <s>, which k = 2 drops "
        "at the first step",
    ),
    (
        "nb09 passes",
        lambda: nb09_decoding.check_crossover_alpha(solutions("nb09_decoding").crossover_alpha),
        "✅ crossover α: passed: α = ln(log P_long / log P_short) / ln((5 + |Y_long|) / (5 + |Y_short|))",
    ),
    (
        "nb10 fails",
        lambda: nb10_attention_visualization.check_rollout(lambda layers: layers[0]),
        "❌ rollout: you got one rollout per head: average the heads of each layer first (mean over dim 0)",
    ),
    (
        "nb10 passes",
        lambda: nb10_attention_visualization.check_head_focus(solutions("nb10_attention_visualization").head_focus),
        "✅ head focus: passed: 1 − H / ln n per row, rows with one key left out: a causal head spread evenly over "
        "what it may see is 0, however short its early rows",
    ),
    (
        "nb11 fails",
        lambda: nb11_train_multi30k.check_quiz(q2=8000),
        "❌ q2: that is one GPU's batch; with DDP each of the 4 GPUs processes its own batch in the same step",
    ),
    (
        "nb11 passes",
        lambda: nb11_train_multi30k.check_bleu_change(solutions("nb11_train_multi30k").bleu_change),
        "✅ which part of BLEU moved: passed: ln BLEU = ln BP + ¼ Σ ln p_n, so a change splits into parts that add "
        "up; a shorter output pays in the brevity part",
    ),
    (
        "nb12 fails",
        lambda: nb12_gpt_from_the_same_parts.check_next_token_pairs(lambda ids: (ids, ids)),
        "❌ the causal shift: next_token_pairs(ids (3, 7)): the targets are the inputs themselves: each position would "
        "learn to copy the token it already reads; the target of position t is token t + 1",
    ),
    (
        "nb12 passes",
        lambda: nb12_gpt_from_the_same_parts.check_top_k_filter(solutions("nb12_gpt_from_the_same_parts").top_k_filter),
        "✅ top-k filtering: passed: the k best scores of each row kept, the rest at -inf",
    ),
]
IDEOGRAPH = re.compile(r"[\u4e00-\u9fff]")


@functools.cache
def english_fragments() -> set[str]:
    """The English text of every template (the parts between its fields) that holds a phrase, not just code."""
    return {
        text.strip()
        for module in MODULES
        for template in english(module).values()
        for text, _, _, _ in string.Formatter().parse(template)
        if PROSE.search(text)
    }


def printed(call, capsys) -> str:
    call()
    return capsys.readouterr().out.strip()


def test_each_notebook_has_a_failing_and_a_passing_line():
    covered = {where for where, _, _ in LINES}
    notebooks = sorted(module[:4] for module in MODULES if module.startswith("nb"))
    assert covered == {f"{nb} {path}" for nb in notebooks for path in ("fails", "passes")}
    assert all(line[0] == ("❌" if where.endswith("fails") else "✅") for where, _, line in LINES)


@pytest.mark.parametrize(("where", "call", "english"), LINES, ids=[where for where, _, _ in LINES])
def test_a_checker_prints_english_by_default_and_chinese_after_set_language_zh(where, call, english, capsys):
    assert printed(call, capsys) == english
    set_language("zh")
    chinese = printed(call, capsys)
    assert chinese[0] == english[0] and IDEOGRAPH.search(chinese) and "\n" not in chinese, chinese
    left = sorted(fragment for fragment in english_fragments() if fragment in chinese)
    assert not left, f"English left in the Chinese line {chinese!r}: {left}"
    set_language("en")
    assert printed(call, capsys) == english  # the same checker, back in English


def test_a_quiz_summary_follows_the_language():
    result = nb00_introduction.check_quiz(q1="a")
    assert repr(result) == "❌ quiz: 0 of 1 right"
    set_language("zh")
    assert repr(result) == "❌ quiz：0 of 1 right"  # its words were made in English; the frame follows the language
    assert repr(nb00_introduction.check_quiz(q1=21)) == "✅ 问答题：共 1 题，答对 1 题"


def test_not_done_and_a_crash_are_said_in_chinese(capsys):
    def crash(*args):
        return 1 / 0

    set_language("zh")
    assert printed(lambda: nb05_embeddings_positional_encoding.check_pe_dot(lambda k, d: ...), capsys).startswith(
        "❌ pe_dot：pe_dot(k=0, d_model=8) 应是一个数"
    )
    assert "还没有完成" in printed(lambda: nb01_masks.check_allowed_pairs(...), capsys)
    assert "你的代码抛出了 ZeroDivisionError" in printed(lambda: nb09_decoding.check_crossover_alpha(crash), capsys)


# ---- the language setting itself ------------------------------------------------------------------------------


def test_set_language_rejects_an_unknown_language_with_one_line_that_says_what_to_write():
    set_language("zh")
    with pytest.raises(ValueError) as error:
        set_language("fr")
    message = str(error.value)
    assert "\n" not in message and "'fr'" in message and "set_language('zh')" in message
    assert get_language() == "zh"  # unchanged


def test_a_template_without_an_entry_falls_back_to_english():
    set_language("zh")
    assert t("a template no catalogue has, {n} times", n=3) == "a template no catalogue has, 3 times"
    assert common_t("passed") == "通过"


def test_a_lazy_text_is_translated_when_shown_not_when_written():
    text = common_lazy_t("right", why=common_lazy_t("passed"))
    assert str(text) == "right: passed" and f"[{text}]" == "[right: passed]"
    set_language("zh")
    assert str(text) == "正确：通过" and f"[{text}]" == "[正确：通过]"
    template = lazy_t("a template no catalogue has, {n} times", n=2)
    assert str(template) == "a template no catalogue has, 2 times"


def write_catalogues(folder: Path, en: dict, zh: dict | None) -> None:
    for language, texts in (("en", en), ("zh", zh)):
        if texts is not None:
            (folder / language).mkdir()
            (folder / language / "demo.json").write_text(json.dumps(texts), encoding="utf-8")


def test_messages_by_id_fall_back_to_english_where_a_translation_lacks_one(tmp_path, monkeypatch):
    write_catalogues(tmp_path, {"shape": "{what} has shape {got}", "done": "done"}, {"done": "完成"})
    monkeypatch.setattr(i18n, "CATALOGUE_FOLDER", tmp_path)
    demo_t, demo_lazy_t = messages("demo")
    set_language("zh")
    assert demo_t("done") == "完成" and demo_t("shape", what="x", got=(2,)) == "x has shape (2,)"
    with pytest.raises(KeyError, match="no message 'nothing' in exercises/en/demo.json"):
        demo_lazy_t("nothing")


@pytest.mark.parametrize(
    "zh", [{"shape": "{what} 的形状"}, {"other": "别的"}], ids=["other fields", "an id English lacks"]
)
def test_messages_refuse_a_translation_that_does_not_match_english(tmp_path, monkeypatch, zh):
    write_catalogues(tmp_path, {"shape": "{what} has shape {got}"}, zh)
    monkeypatch.setattr(i18n, "CATALOGUE_FOLDER", tmp_path)
    with pytest.raises(ValueError, match="exercises/zh/demo.json"):
        messages("demo")


def test_a_language_without_a_file_speaks_english(tmp_path, monkeypatch):
    write_catalogues(tmp_path, {"done": "done"}, None)
    monkeypatch.setattr(i18n, "CATALOGUE_FOLDER", tmp_path)
    demo_t, _ = messages("demo")
    set_language("zh")
    assert demo_t("done") == "done"


def test_register_refuses_a_translation_with_other_fields_and_keeps_the_catalogue_unchanged():
    before = dict(i18n.CATALOGUES["zh"])
    with pytest.raises(ValueError, match="same fields"):
        register("zh", {"{a} is fine": "{a} 没问题", "{got} of {total}": "共 {total} 个"})
    assert i18n.CATALOGUES["zh"] == before
