/* The exported page: tokenize (tokenizers.js), encode once, decode greedily one step at a time with the
 * key/value cache (onnxruntime-web, WebAssembly, one thread), then draw every attention weight.
 * Everything it needs is inside this HTML file: nothing is fetched, nothing is sent.
 * window.tcPage is the page's handle for tests: ready (a promise), translate(text), view(kind, layer, head). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tc-data").textContent);
  var m = data.manifest, T = data.text, BOS = m.specials.bos, EOS = m.specials.eos;
  var tok = tcTokenizers.forModel(data.tokenizer);
  var $ = function (id) { return document.getElementById(id); };
  var page = window.tcPage = {last: null, timings: {}};
  var encoder = null, step = null;
  // Which heads run: (3, N, h), kinds in the order encoder, decoder, cross; 0 switches a head off before W^O,
  // as transformer_course.ablation.zero_head does (the graphs' head_mask input).
  var KINDS = ["encoder", "decoder", "cross"];
  var headMask = new Float32Array(3 * m.layers * m.heads).fill(1);
  function maskAt(kind, layer, head) { return (KINDS.indexOf(kind) * m.layers + layer) * m.heads + head; }

  function base64Bytes(id) {
    var text = atob($(id).textContent.trim()), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  }
  async function gunzip(bytes) {
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  function format(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, k) { return values[k]; });
  }

  async function load() {
    var start = performance.now();
    ort.env.wasm.numThreads = 1;  // threads need SharedArrayBuffer, which a file:// page does not get
    ort.env.wasm.proxy = false;
    ort.env.wasm.wasmBinary = await gunzip(base64Bytes("tc-ort-wasm"));
    var glue = new Blob([$("tc-ort-glue").textContent], {type: "text/javascript"});
    ort.env.wasm.wasmPaths = {mjs: URL.createObjectURL(glue)};  // a blob: URL: Chromium imports no file:// module
    var options = {executionProviders: ["wasm"], graphOptimizationLevel: "all"};
    encoder = await ort.InferenceSession.create(await gunzip(base64Bytes("tc-encoder")), options);
    step = await ort.InferenceSession.create(await gunzip(base64Bytes("tc-decoder-step")), options);
    page.timings.runtime_ms = performance.now() - start;
    page.timings.load_ms = performance.now();  // since the navigation started
  }

  function int64(values, dims) { return new ort.Tensor("int64", BigInt64Array.from(values.map(BigInt)), dims); }
  function argmax(values) {  // the first maximum, as torch.argmax
    var best = 0;
    for (var i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // Greedy decoding as transformer_course.decode.translate(..., beam_size=1) does it.
  async function translate(text) {
    var started = performance.now();
    if (!text.trim()) return {text: "", ids: [], src: {ids: [], pieces: []}, steps: 0, ms: 0, notes: []};
    var src = tok.source(text);
    if (!src.ids.length) return {text: "", ids: [], src: src, steps: 0, ms: performance.now() - started, notes: []};
    var S = src.ids.length;
    if (S > m.max_len) throw new Error(format(T.too_long, {n: S, max: m.max_len}));
    var limit = Math.min(S + 50 + 1, m.max_len);  // the paper's rule: source length + 50 (+ 1 for <s>)
    var mask = new ort.Tensor("float32", headMask.slice(), [3, m.layers, m.heads]);
    var enc = await encoder.run({src: int64(src.ids, [1, S]), head_mask: mask});
    var N = m.layers, H = m.heads, L = limit, cache = [N, 1, H, L, m.d_k];
    var keys = new ort.Tensor("float32", new Float32Array(N * H * L * m.d_k), cache);
    var values = new ort.Tensor("float32", new Float32Array(N * H * L * m.d_k), cache);
    var ys = [BOS], selfRows = [], crossRows = [];
    for (var pos = 0; pos < limit; pos++) {
      var out = await step.run({
        token: int64([ys[pos]], [1, 1]), position: int64([pos], [1]), self_keys: keys, self_values: values,
        cross_keys: enc.cross_keys, cross_values: enc.cross_values, head_mask: mask
      });
      selfRows.push(out.decoder_attention.data);  // (N, h, 1, L): this step's query row, 0 beyond pos
      crossRows.push(out.cross_attention.data);  // (N, h, 1, S)
      keys = out.new_self_keys;
      values = out.new_self_values;
      if (pos === limit - 1) break;  // the last token ran only to show its attention (no room for another)
      var next = argmax(out.log_probs.data);
      ys.push(next);
      if (next === EOS) break;
    }
    var tgt = ys[ys.length - 1] === EOS ? ys.slice(0, -1) : ys;  // what the decoder read: <s> y1 … yn
    var result = {
      text: tok.targetText(ys), ids: ys, src: src, srcLabels: tok.sourceLabels(src.pieces),
      tgtLabels: ["<s>"].concat(tok.targetLabels(tgt.slice(1))), S: S, T: tgt.length, L: L,
      encoder: enc.encoder_attention.data, selfRows: selfRows, crossRows: crossRows,
      ms: performance.now() - started, steps: selfRows.length, notes: notes(text, src)
    };
    result.weights = function (kind, layer, head) { return weights(result, kind, layer, head); };
    return result;
  }

  // What the page says about a sentence the model reads badly: pieces it does not know, or no word at all.
  function notes(text, src) {
    var out = [], unknown = src.ids.filter(function (id) { return id === m.specials.unk; }).length;
    if (!/[\p{L}\p{N}]/u.test(text)) out.push(T.no_words);
    if (unknown) out.push(format(T.unknown, {n: unknown, total: src.ids.length}));
    var off = [];
    KINDS.forEach(function (kind) {
      for (var l = 0; l < m.layers; l++) for (var h = 0; h < m.heads; h++) {
        if (!headMask[maskAt(kind, l, h)]) off.push(T.kinds[kind] + " " + format(T.layer_n, {n: l}) + " " + format(T.head_n, {n: h}));
      }
    });
    if (off.length) out.push(format(T.switched_off, {heads: off.join("; ")}));
    return out;
  }

  // (rows × columns) weights of one kind, layer and head (head "mean": the mean over heads).
  function weights(r, kind, layer, head) {
    var H = m.heads, heads = head === "mean" ? Array.from({length: H}, function (_, i) { return i; }) : [head];
    var rows = kind === "encoder" ? r.S : r.T, cols = kind === "cross" ? r.S : kind === "encoder" ? r.S : r.T;
    var out = [];
    for (var i = 0; i < rows; i++) {
      var row = [];
      for (var j = 0; j < cols; j++) {
        var sum = 0;
        heads.forEach(function (h) {
          if (kind === "encoder") sum += r.encoder[((layer * H + h) * r.S + i) * r.S + j];
          else if (kind === "cross") sum += r.crossRows[i][(layer * H + h) * r.S + j];
          else sum += j <= i ? r.selfRows[i][(layer * H + h) * r.L + j] : 0;
        });
        row.push(sum / heads.length);
      }
      out.push(row);
    }
    return out;
  }

  function axes(r, kind) {
    return {
      encoder: [r.srcLabels, r.srcLabels], decoder: [r.tgtLabels, r.tgtLabels], cross: [r.tgtLabels, r.srcLabels]
    }[kind];
  }

  var SVG = "http://www.w3.org/2000/svg";
  function el(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  // matplotlib's "Blues" (the notebooks' heatmaps, vmin 0, vmax 1): its nine colours, linearly between them.
  var BLUES = [[247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225], [107, 174, 214],
               [66, 146, 198], [33, 113, 181], [8, 81, 156], [8, 48, 107]];
  function colour(w) {
    var t = Math.max(0, Math.min(1, w)) * (BLUES.length - 1), i = Math.min(Math.floor(t), BLUES.length - 2), f = t - i;
    return "rgb(" + BLUES[i].map(function (x, c) { return Math.round(x + (BLUES[i + 1][c] - x) * f); }).join(",") + ")";
  }

  // The colour bar under the controls: 0 … 1 in the heatmaps' colours, with its scale.
  function legend() {
    var width = 260, svg = el("svg", {width: width + 40, height: 42, id: "tc-legend-bar"});
    for (var k = 0; k < 100; k++) {
      el("rect", {x: 10 + k * width / 100, y: 4, width: width / 100 + 0.5, height: 14, fill: colour(k / 99)}, svg);
    }
    el("rect", {x: 10, y: 4, width: width, height: 14, fill: "none", stroke: "#888"}, svg);
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      var x = 10 + v * width;
      el("line", {x1: x, x2: x, y1: 18, y2: 23, stroke: "#444"}, svg);
      el("text", {x: x, y: 36, "text-anchor": "middle"}, svg).textContent = String(v);
    });
    return svg;
  }

  // One heatmap with its tokens on both axes (keys on top, queries on the left); font: the labels' size in px.
  // Hovering a cell shows its value in the readout line (and as the cell's tooltip).
  function heatmap(w, queries, keys, cell, font) {
    var longest = function (labels) { return Math.max.apply(null, labels.map(function (s) { return s.length; })); };
    var left = 8 + 0.62 * font * longest(queries), top = 8 + 0.55 * font * longest(keys);
    var right = 0.3 * font * longest(keys);  // the last key's label leans right
    var svg = el("svg", {width: left + cell * keys.length + right, height: top + cell * queries.length + 2});
    svg.style.fontSize = font + "px";
    keys.forEach(function (k, j) {
      var x = left + cell * j + cell / 2 + font / 3, y = top - 4;
      el("text", {x: x, y: y, transform: "rotate(-60 " + x + " " + y + ")"}, svg).textContent = k;
    });
    queries.forEach(function (q, i) {
      el("text", {x: left - 4, y: top + cell * i + cell / 2 + font / 3, "text-anchor": "end"}, svg).textContent = q;
      keys.forEach(function (k, j) {
        var r = el("rect", {x: left + cell * j, y: top + cell * i, width: cell - 1, height: cell - 1,
                            fill: colour(w[i][j]), "data-row": i, "data-col": j, "data-w": w[i][j]}, svg);
        var tip = format(T.tooltip, {query: q, key: k, weight: w[i][j].toFixed(4)});
        el("title", {}, r).textContent = tip;
        r.addEventListener("mouseenter", function () { $("tc-readout").textContent = tip; });
      });
    });
    return svg;
  }

  var kindSel = $("tc-kind"), layerSel = $("tc-layer"), headSel = $("tc-head");
  function option(select, value, text) { var o = document.createElement("option"); o.value = value; o.textContent = text; select.appendChild(o); }
  ["cross", "encoder", "decoder"].forEach(function (k) { option(kindSel, k, T.kinds[k]); });
  for (var l = 0; l < m.layers; l++) option(layerSel, l, format(T.layer_n, {n: l}));
  option(headSel, "mean", T.mean);
  for (var h = 0; h < m.heads; h++) option(headSel, h, format(T.head_n, {n: h}));

  function current() {
    return {kind: kindSel.value, layer: +layerSel.value, head: headSel.value === "mean" ? "mean" : +headSel.value};
  }
  function draw() {
    var r = page.last;
    if (!r || !r.S) { $("tc-main").textContent = $("tc-grid").textContent = $("tc-grid-title").textContent = ""; return; }
    var v = current(), ax = axes(r, v.kind);
    var main = $("tc-main"), grid = $("tc-grid");
    main.textContent = "";
    main.appendChild(heatmap(r.weights(v.kind, v.layer, v.head), ax[0], ax[1], 26, 13));
    $("tc-grid-title").textContent = format(T.grid_title, {kind: T.kinds[v.kind], n: v.layer});
    grid.textContent = "";
    ["mean"].concat(Array.from({length: m.heads}, function (_, i) { return i; })).forEach(function (head) {
      var fig = document.createElement("figure");
      if (head === v.head) fig.className = "selected";
      fig.appendChild(heatmap(r.weights(v.kind, v.layer, head), ax[0], ax[1], 15, 10));
      var cap = document.createElement("figcaption");
      cap.textContent = head === "mean" ? T.mean : format(T.head_n, {n: head});
      if (head !== "mean") {  // switch this head off (or on again) and translate again
        var off = !headMask[maskAt(v.kind, v.layer, head)], toggle = document.createElement("button");
        toggle.className = "head-toggle";
        toggle.textContent = off ? T.switch_on : T.switch_off;
        if (off) fig.classList.add("off");
        toggle.addEventListener("click", function (e) {
          e.stopPropagation();
          page.ablate(v.kind, v.layer, head, !off);
          run();
        });
        cap.appendChild(toggle);
      }
      fig.appendChild(cap);
      fig.addEventListener("click", function () { headSel.value = String(head); draw(); });
      grid.appendChild(fig);
    });
  }
  [kindSel, layerSel, headSel].forEach(function (s) { s.addEventListener("change", draw); });

  function status(text, error) { var s = $("tc-status"); s.textContent = text; s.className = error ? "error" : ""; }

  function run() {  // tests wait on tcPage.pending; a failure is shown in the status line, not thrown at the button
    page.pending = runNow();
    page.pending.catch(function () {});
    return page.pending;
  }

  async function runNow() {
    var button = $("tc-translate");
    button.disabled = true;
    try {
      var r = await translate($("tc-input").value);
      page.last = r;
      $("tc-translation").textContent = r.text;
      status(r.S ? format(T.timing, {ms: r.ms.toFixed(0), steps: r.steps, pieces: r.S}) : T.empty);
      $("tc-notes").textContent = r.notes.join(" ");
      $("tc-readout").textContent = "";
      draw();
      return r;
    } catch (err) {  // the old sentence's translation and heatmaps go: what is on the page is what was typed
      page.last = null;
      $("tc-translation").textContent = $("tc-notes").textContent = $("tc-readout").textContent = "";
      draw();
      status(String(err.message || err), true);
      throw err;
    } finally {
      button.disabled = false;
    }
  }

  $("tc-legend").appendChild(legend());
  $("tc-model-info").textContent = format(T.model_info, {
    name: m.model.name, parameters: m.model.parameters.toLocaleString("en"), layers: m.layers, heads: m.heads,
    d_model: m.d_model, tokenizer: T.tokenizers[m.tokenizer], vocab: m.vocab.src
  });
  var examples = $("tc-examples");
  data.examples.forEach(function (s) {
    var b = document.createElement("button");
    b.className = "example";
    b.textContent = s;
    b.addEventListener("click", function () { $("tc-input").value = s; run(); });
    examples.appendChild(b);
  });
  $("tc-translate").addEventListener("click", run);
  $("tc-input").addEventListener("keydown", function (e) { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); run(); } });

  page.ablate = function (kind, layer, head, off) { headMask[maskAt(kind, layer, head)] = off ? 0 : 1; };
  page.restoreHeads = function () { headMask.fill(1); };
  page.translate = function (text) { $("tc-input").value = text; return run(); };
  page.view = function (kind, layer, head) {
    kindSel.value = kind; layerSel.value = String(layer); headSel.value = String(head); draw();
  };
  page.ready = load().then(function () {
    status(format(T.ready, {ms: page.timings.load_ms.toFixed(0)}));
    $("tc-translate").disabled = false;
    return run();
  }, function (err) { status(T.failed + " " + (err.message || err), true); throw err; });
})();
