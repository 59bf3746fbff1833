"""The static page: one self-contained HTML file that translates in the browser and shows every attention weight
(notebook 10 shows the same heatmaps in JupyterLab).

Everything the page needs is inside the file, so it works opened from disk (``file://``) or from any static host,
with no server and no request: the two ONNX graphs and the WebAssembly runtime as gzip in base64 text, the runtime's
JavaScript, the tokenizers (``static/tokenizers.js``) with their rules and vocabularies, and the page's own
script (``static/page.js``). Chromium refuses ``fetch`` and module imports of ``file://`` URLs, so nothing is
loaded by URL: onnxruntime-web gets its WebAssembly binary as bytes (``ort.env.wasm.wasmBinary``) and its
Emscripten glue as a ``blob:`` URL made in the page; it runs on one thread, since threads need cross-origin
isolation. The labels are English, or Chinese with ``language="zh"`` (the 中文版).
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from importlib import resources

from transformer_course.i18n import LANGUAGES, register, t

__all__ = ["ORT_VERSION", "PAGE_TEXT", "EXAMPLES", "build_page", "json_for_script"]

ORT_VERSION = "1.30.0"  # vendor/onnxruntime-web/README.md says where the files come from

EXAMPLES = {  # typed into the box by the example buttons (Multi30k-like German sentences, not from its test set)
    "de": ["Ein Hund läuft durch den Schnee.", "Zwei Männer sitzen auf einer Bank.", "Eine Frau spielt Gitarre."],
}

# Every word the page shows, in English; ZH holds the 中文版's (terms as in notebooks/zh/GLOSSARY.md).
PAGE_TEXT = {
    "title": "Attention in the browser: {src} → {tgt}",
    "input_label": "Type a sentence ({src}) and press Enter:",
    "translate": "Translate",
    "loading": "Loading the model into this page (WebAssembly) …",
    "ready": "Model ready ({ms} ms after the page opened).",
    "failed": "The model could not be loaded:",
    "empty": "Type a sentence first.",
    "too_long": "The sentence has {n} tokens; the model's positional table holds {max}. Shorten it.",
    "unknown": "{n} of {total} tokens are not in the model's vocabulary and are read as <unk>: the translation "
    "guesses around them.",
    "no_words": "There is no letter or digit here, only punctuation or symbols: the model can only guess.",
    "legend": "attention weight",
    "switch_off": "switch off",
    "switch_on": "switch on",
    "switched_off": "Switched off: {heads}. Click “switch on” under a head to bring it back.",
    "timing": "Translated in {ms} ms: {pieces} source tokens, {steps} decoder steps ({mode}).",
    "decoding": "decoding",
    "greedy": "greedy",
    "beam": "beam search (k = {k}, α = {alpha})",
    "beam_title": "The beam, step by step (k = {k}, α = {alpha})",
    "beam_help": "Each row is one step: its best extensions, best first, each with its log P (an ended one: its "
    "score, log P / lp). Grey ones were pruned; a crossed-out </s> ended but scored lower; ✓ marks the best "
    "finished one. Hover one to see its cross-attention.",
    "hyp_open": "“{text}”: log P {logp} ({status})",
    "hyp_ended": "“{text}” </s>: log P {logp}, score {score} ({status})",
    "open": "open: goes on",
    "pruned": "pruned: not among the k best that go on",
    "finished": "finished: the best so far",
    "beaten": "ended, but a finished one scores higher",
    "attention": "attention",
    "layer": "layer",
    "head": "head",
    "mean": "mean over heads",
    "layer {n}": "layer {n}",
    "head {n}": "head {n}",
    "{kind}, layer {n}: every head (click one)": "{kind}, layer {n}: every head (click one)",
    "{query} → {key}: {weight}": "query “{query}” → key “{key}”: {weight}",
    "encoder self-attention": "encoder self-attention",
    "decoder self-attention (masked)": "decoder self-attention (masked)",
    "cross-attention (decoder → encoder)": "cross-attention (decoder → encoder)",
    "spaCy words": "spaCy words",
    "subword pieces (BPE)": "subword pieces (BPE)",
    "model_info": "Model {name}: {parameters} parameters, {layers} + {layers} layers, {heads} heads, d_model = {d_model}; "
    "{tokenizer}, {vocab} source tokens.",
    "note": "What runs where: everything runs in this page. The tokenizer is JavaScript (a port of the course's, "
    "tested against Python); the model is two ONNX graphs (the encoder and one decoder step with its key/value cache) "
    "run by onnxruntime-web {ort} on WebAssembly, one thread, with {precision} weights. Decoding is greedy, as "
    "translate(checkpoint, sentences, beam_size=1) decodes, or beam search, as translate(…, beam_size={k}) does; "
    "rounded (int) weights change a few words. Nothing is downloaded "
    "and nothing you type leaves the page. "
    "Rows are queries, columns are keys; each row sums to 1. Made with: python -m transformer_course export-web.",
}
ZH = {
    "Attention in the browser: {src} → {tgt}": "浏览器中的注意力：{src} → {tgt}",
    "Type a sentence ({src}) and press Enter:": "输入一个句子（{src}），按回车：",
    "Translate": "翻译",
    "Loading the model into this page (WebAssembly) …": "正在把模型载入本页面（WebAssembly）……",
    "Model ready ({ms} ms after the page opened).": "模型已就绪（页面打开后 {ms} 毫秒）。",
    "The model could not be loaded:": "模型无法载入：",
    "Type a sentence first.": "请先输入一个句子。",
    "The sentence has {n} tokens; the model's positional table holds {max}. Shorten it.": "该句有 {n} 个词元，模型的位置编码表只有 {max} 个位置。请缩短句子。",
    PAGE_TEXT["unknown"]: "{total} 个词元中有 {n} 个不在模型词表中，按 <unk> 读入：译文只能绕开它们去猜。",
    PAGE_TEXT["no_words"]: "这里没有字母或数字，只有标点或符号：模型只能猜。",
    "attention weight": "注意力权重",
    "switch off": "关闭",
    "switch on": "打开",
    PAGE_TEXT["switched_off"]: "已关闭：{heads}。点击该头下方的“打开”即可恢复。",
    PAGE_TEXT["timing"]: "翻译用时 {ms} 毫秒：{pieces} 个源词元，{steps} 个解码步（{mode}）。",
    "decoding": "解码",
    "greedy": "贪心解码",
    PAGE_TEXT["beam"]: "束搜索（k = {k}，α = {alpha}）",
    PAGE_TEXT["beam_title"]: "束搜索的每一步（k = {k}，α = {alpha}）",
    PAGE_TEXT["beam_help"]: "每行是一步：这一步最好的若干扩展，按 log P 从高到低排列（已结束的假设显示得分，即 "
    "log P / lp）。灰色的已被剪掉；划掉的 </s> 虽已结束但得分较低；✓ 标出最好的已完成假设。把鼠标移到一个假设上，"
    "可看它的交叉注意力。",
    PAGE_TEXT["hyp_open"]: "“{text}”：log P {logp}（{status}）",
    PAGE_TEXT["hyp_ended"]: "“{text}” </s>：log P {logp}，得分 {score}（{status}）",
    PAGE_TEXT["open"]: "未结束：继续扩展",
    PAGE_TEXT["pruned"]: "被剪掉：不在继续扩展的前 k 个之中",
    PAGE_TEXT["finished"]: "已完成：目前最好",
    PAGE_TEXT["beaten"]: "已结束，但有得分更高的已完成假设",
    "attention": "注意力",
    "layer": "层",
    "head": "头",
    "mean over heads": "各头平均（mean）",
    "layer {n}": "第 {n} 层",
    "head {n}": "头 {n}",
    "{kind}, layer {n}: every head (click one)": "{kind}，第 {n} 层：所有注意力头（点击选择）",
    "query “{query}” → key “{key}”: {weight}": "查询“{query}” → 键“{key}”：{weight}",
    "encoder self-attention": "编码器自注意力",
    "decoder self-attention (masked)": "解码器自注意力（带掩码）",
    "cross-attention (decoder → encoder)": "交叉注意力（解码器 → 编码器）",
    "spaCy words": "spaCy 词",
    "subword pieces (BPE)": "子词（BPE）",
    "Model {name}: {parameters} parameters, {layers} + {layers} layers, {heads} heads, d_model = {d_model}; "
    "{tokenizer}, {vocab} source tokens.": "模型 {name}：{parameters} 个参数，{layers} + {layers} 层，{heads} 个头，"
    "d_model = {d_model}；{tokenizer}，源语言词表 {vocab} 个词元。",
    PAGE_TEXT["note"]: "什么在哪里运行：一切都在本页面中运行。分词由 JavaScript 完成（移植自课程的分词器，并与 Python "
    "逐一对照测试）；模型是两个 ONNX 计算图（编码器，以及带键值缓存的单步解码器），由 onnxruntime-web {ort} 在 "
    "WebAssembly 上单线程运行，权重为 {precision}。解码可选贪心解码（与 translate(checkpoint, sentences, beam_size=1) "
    "相同）或束搜索（与 translate(…, beam_size={k}) 相同）；取整（int）的权重会改变少数词。"
    "页面不下载任何东西，你输入的内容也不会离开页面。行是查询，列是键；每行之和为 1。生成命令：python -m "
    "transformer_course export-web。",
    "German": "德语",
    "English": "英语",
}
register("zh", ZH)
LANGUAGE_NAMES = {"de": "German", "en": "English", "fr": "French", "cs": "Czech"}


def _text(language: str, src_lang: str, tgt_lang: str, manifest_precision: str = "fp32", beam_size: int = 4) -> dict:
    """The page's words in ``language``, as the script wants them (``{n}``-style fields left to the page)."""
    from transformer_course.i18n import get_language, set_language

    previous = get_language()
    set_language(language)
    try:
        names = {k: t(LANGUAGE_NAMES.get(k, k)) for k in (src_lang, tgt_lang)}
        keep = {
            f: "{" + f + "}"
            for f in ("n", "max", "ms", "steps", "pieces", "kind", "query", "key", "weight", "total", "heads", "mode")
            + ("k", "alpha", "text", "logp", "score", "status")
        }
        precision = {"precision": manifest_precision}
        keep.update(
            {f: "{" + f + "}" for f in ("name", "parameters", "layers", "heads", "d_model", "tokenizer", "vocab")}
        )
        text = {
            "title": t(PAGE_TEXT["title"], src=names[src_lang], tgt=names[tgt_lang]),
            "input_label": t(PAGE_TEXT["input_label"], src=names[src_lang]),
            "note": t(PAGE_TEXT["note"], ort=ORT_VERSION, k=beam_size, **precision),
            "status": {k: t(PAGE_TEXT[k]) for k in ("open", "pruned", "finished", "beaten")},
            "model_info": t(PAGE_TEXT["model_info"], **keep),
            "tooltip": t(PAGE_TEXT["{query} → {key}: {weight}"], **keep),
            "layer_n": t("layer {n}", **keep),
            "head_n": t("head {n}", **keep),
            "grid_title": t("{kind}, layer {n}: every head (click one)", **keep),
            "kinds": {
                "encoder": t("encoder self-attention"),
                "decoder": t("decoder self-attention (masked)"),
                "cross": t("cross-attention (decoder → encoder)"),
            },
            "tokenizers": {"words": t("spaCy words"), "bpe": t("subword pieces (BPE)")},
        }
        for key in (
            "translate",
            "loading",
            "ready",
            "failed",
            "empty",
            "too_long",
            "unknown",
            "no_words",
            "legend",
            "switch_off",
            "switch_on",
            "switched_off",
            "timing",
            "attention",
            "layer",
            "head",
            "mean",
            "decoding",
            "greedy",
            "beam",
            "beam_title",
            "beam_help",
            "hyp_open",
            "hyp_ended",
        ):
            text[key] = t(PAGE_TEXT[key], **keep)
    finally:
        set_language(previous)
    return text


def _vendor(name: str) -> bytes:
    return resources.files(__package__).joinpath("vendor", "onnxruntime-web", name).read_bytes()


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


# Inside a JSON string these characters are written as escapes, which JSON.parse reads back as the characters:
# no "<" can start "</script>" (in any letter case) or "<!--", so no string can end the element or change how
# it is parsed; ">" and "&" are escaped too, and U+2028/U+2029, which older JavaScript does not take in a string.
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_for_script(value) -> str:
    """``value`` as JSON that can sit inside ``<script type="application/json">`` whatever its strings hold (a
    vocabulary token, a model name): the page reads it back with ``JSON.parse(element.textContent)``."""
    text = json.dumps(value, ensure_ascii=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group()], text)


def _script_safe(code: str, what: str) -> str:
    """JavaScript (the page's own and onnxruntime-web's) that can sit inside a <script> element: "</script" in any
    letter case becomes "<\\/script", which reads the same in a JavaScript string, regular expression or comment;
    "<!--", which changes how the element is parsed, is refused. Data goes in by :func:`json_for_script`."""
    if "<!--" in code:
        raise ValueError(f"{what} contains '<!--', which cannot be placed inside a <script> element as it is")
    return re.sub(r"</(script)", r"<\\/\1", code, flags=re.IGNORECASE)


def build_page(
    manifest: dict,
    tokenizer: dict,
    encoder: bytes,
    decoder_step: bytes,
    language: str = "en",
    runtime: dict | None = None,
) -> str:
    """The whole page as one HTML string: the manifest and tokenizer (from :func:`~course_tools.web.
    export_web`), the two ONNX graphs (bytes, weights inside), onnxruntime-web, labels in ``language``.
    ``runtime``: another build of onnxruntime-web of the same version (``ort``: its script, ``glue``: its
    Emscripten module, ``wasm_gz``: its gzipped binary, ``providers``: the execution providers to ask for, in
    order); by default the vendored WebAssembly build and ``["wasm"]`` (benchmarks/web_webgpu.py measures the
    WebGPU one)."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {list(LANGUAGES)} (English or 中文), got {language!r}")
    beam_size = manifest["beam"]["size"]
    text = _text(language, manifest["src_lang"], manifest["tgt_lang"], manifest.get("precision", "fp32"), beam_size)
    examples = EXAMPLES.get(manifest["src_lang"], [])
    runtime = runtime or {
        "ort": _vendor("ort.wasm.min.js").decode("utf-8"),
        "glue": _vendor("ort-wasm-simd-threaded.mjs").decode("utf-8"),
        "wasm_gz": _vendor("ort-wasm-simd-threaded.wasm.gz"),
        "providers": ["wasm"],
    }
    data = {"manifest": manifest, "tokenizer": tokenizer, "text": text, "examples": examples}
    data["providers"] = list(runtime["providers"])
    ort = runtime["ort"]
    ort = "\n".join(line for line in ort.splitlines() if not line.startswith("//# sourceMappingURL="))
    fields = {
        "lang": "zh-CN" if language == "zh" else "en",
        "title": text["title"],
        "input_label": text["input_label"],
        "first_example": examples[0] if examples else "",
        "translate": text["translate"],
        "loading": text["loading"],
        "attention": text["attention"],
        "layer": text["layer"],
        "head": text["head"],
        "decoding": text["decoding"],
        "legend": text["legend"],
        "note": text["note"],
    }
    fields = {key: _html(value) for key, value in fields.items()}  # plain text into HTML
    blocks = {  # into <script> elements, which take their content as it is
        "data": json_for_script(data),  # JSON with "<", ">", "&" escaped: no string ends the element
        "ort_glue": _script_safe(runtime["glue"], "the onnxruntime-web glue"),
        "ort_wasm": base64.b64encode(runtime["wasm_gz"]).decode("ascii"),
        "encoder": _packed(encoder),
        "decoder_step": _packed(decoder_step),
        "ort": _script_safe(ort, "onnxruntime-web"),
        "tokenizers": _script_safe(_static("tokenizers.js"), "tokenizers.js"),
        "page_js": _script_safe(_static("page.js"), "page.js"),
    }
    fields.update(blocks)
    return re.sub(
        r"\{\{(\w+)\}\}", lambda m: fields[m.group(1)], _static("page.html")
    )  # one pass: values stay as they are


def _packed(graph: bytes) -> str:
    """A graph as the page holds it: gzip (``mtime=0``: the same graph, the same page), then base64 text; the page
    un-gzips it with ``DecompressionStream``, as it does the runtime. An int8 graph shrinks by about a fifth."""
    return base64.b64encode(gzip.compress(graph, compresslevel=9, mtime=0)).decode("ascii")


def _html(text: str) -> str:
    return html.escape(text, quote=True)
