/* The exported page: tokenize (tokenizers.js), encode once, decode one step at a time with the
 * key/value cache (onnxruntime-web, WebAssembly, one thread), then draw every attention weight.
 * Everything it needs is inside this HTML file: nothing is fetched, nothing is sent.
 * Decoding is greedy or beam search (the package's, step for step), and the beam is drawn as it grew.
 * window.tcPage is the page's handle for tests: ready (a promise), translate(text), view(kind, layer, head),
 * setDecoding(mode), ablate(kind, layer, head, off), restoreHeads(). */
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
    var base64 = $(id).textContent.trim();
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(base64);  // native (Chromium 140, Firefox 133, Safari 18.2)
    var text = atob(base64), bytes = new Uint8Array(text.length);
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
    // the three un-gzips start together; the graphs' go on while the runtime starts
    var wasm = gunzip(base64Bytes("tc-ort-wasm")), encoderBytes = gunzip(base64Bytes("tc-encoder"));
    var stepBytes = gunzip(base64Bytes("tc-decoder-step"));
    ort.env.wasm.wasmBinary = await wasm;
    var glue = new Blob([$("tc-ort-glue").textContent], {type: "text/javascript"});
    ort.env.wasm.wasmPaths = {mjs: URL.createObjectURL(glue)};  // a blob: URL: Chromium imports no file:// module
    // rounded (int) weights come with the nodes that give them back (DequantizeLinear; Cast, Mul, Add): folded
    // once at load (session.disable_quant_qdq), so each run multiplies fp32 matrices, as the fp32 page does
    var options = {executionProviders: data.providers, graphOptimizationLevel: "all",
                   extra: {session: {disable_quant_qdq: "1"}}};
    encoder = await ort.InferenceSession.create(await encoderBytes, options);
    step = await ort.InferenceSession.create(await stepBytes, options);
    page.timings.runtime_ms = performance.now() - start;
    page.timings.load_ms = performance.now();  // since the navigation started
  }

  function int64(values, dims) { return new ort.Tensor("int64", BigInt64Array.from(values.map(BigInt)), dims); }
  function argmax(values) {  // the first maximum, as torch.argmax
    var best = 0;
    for (var i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // Decoding as transformer_course.decode.translate does it: greedy (beam_size=1), or beam search (beam.py).
  var decoding = {mode: "greedy", size: m.beam.size, alpha: m.beam.length_penalty};
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
    var ctx = {enc: enc, mask: mask, L: limit};
    var d = decoding.mode === "beam" ? await beamSearch(ctx, limit, decoding.size, decoding.alpha) : await greedy(ctx, limit);
    var tgt = d.ys.slice(0, d.selfRows.length);  // what the decoder read, one row each: <s> y1 … yn
    var result = {
      text: tok.targetText(d.ys), ids: d.ys, src: src, srcLabels: tok.sourceLabels(src.pieces),
      tgtLabels: targetLabels(tgt), S: S, T: tgt.length, L: limit,
      encoder: enc.encoder_attention.data, selfRows: d.selfRows, crossRows: d.crossRows,
      ms: performance.now() - started, steps: d.steps, notes: notes(text, src), mode: decoding.mode,
      beam: d.beam || null, score: d.score === undefined ? null : d.score, logp: d.logp === undefined ? null : d.logp
    };
    result.weights = function (kind, layer, head) { return weights(result, kind, layer, head); };
    return result;
  }
  function targetLabels(read) { return ["<s>"].concat(tok.targetLabels(read.slice(1))); }

  function emptyCache(L) {
    var dims = [m.layers, 1, m.heads, L, m.d_k], size = m.layers * m.heads * L * m.d_k;
    return [new ort.Tensor("float32", new Float32Array(size), dims), new ort.Tensor("float32", new Float32Array(size), dims)];
  }
  // One decoder step of one prefix: its newest token at `position`, with its own self-attention cache.
  function runStep(ctx, token, position, keys, values) {
    return step.run({
      token: int64([token], [1, 1]), position: int64([position], [1]), self_keys: keys, self_values: values,
      cross_keys: ctx.enc.cross_keys, cross_values: ctx.enc.cross_values, head_mask: ctx.mask
    });
  }

  async function greedy(ctx, limit) {
    var cache = emptyCache(limit), keys = cache[0], values = cache[1];
    var ys = [BOS], selfRows = [], crossRows = [];
    for (var pos = 0; pos < limit; pos++) {
      var out = await runStep(ctx, ys[pos], pos, keys, values);
      selfRows.push(out.decoder_attention.data);  // (N, h, 1, L): this step's query row, 0 beyond pos
      crossRows.push(out.cross_attention.data);  // (N, h, 1, S)
      keys = out.new_self_keys;
      values = out.new_self_values;
      if (pos === limit - 1) break;  // the last token ran only to show its attention (no room for another)
      var next = argmax(out.log_probs.data);
      ys.push(next);
      if (next === EOS) break;
    }
    return {ys: ys, selfRows: selfRows, crossRows: crossRows, steps: selfRows.length};
  }

  // lp(Y) = ((5 + |Y|) / 6)^α, the GNMT length penalty (beam.gnmt_length_penalty); scores are float32, as in torch.
  function lengthPenalty(t, alpha) { return Math.fround(Math.pow((5 + t) / 6, alpha)); }
  function finite(pair) { return pair[1] > -Infinity; }
  // The n largest of values, best first (ties: the lower index first), as [index, value] pairs.
  function best(values, n) {
    var top = [];
    for (var i = 0; i < values.length; i++) {
      var v = values[i];
      if (top.length === n && !(v > top[n - 1][1])) continue;
      var at = top.length;
      while (at > 0 && v > top[at - 1][1]) at--;
      top.splice(at, 0, [i, v]);
      if (top.length > n) top.pop();
    }
    return top;
  }

  // Beam search for one sentence, step for step as transformer_course.decode.beam_search (beam.py) does it with
  // n_best = 1: each step extends the k open prefixes by every word; of the k·V extensions the k best are the
  // beam's choices (a choice that is </s> is finished, scored log P / lp), the k best that go on stay open, the
  // rest of the 2k best are pruned; at the last position every extension ends. The search stops when no open
  // prefix can beat the best finished one. Each prefix carries its own cache and attention rows, so the page
  // can show any hypothesis' cross-attention. beam: one entry per step, for the beam's picture.
  async function beamSearch(ctx, limit, k, alpha) {
    var longest = limit - 1, cache = emptyCache(limit);
    var start = {ys: [BOS], logp: 0, keys: cache[0], values: cache[1], selfRows: [], crossRows: []};
    var alive = [start];  // only beam 0 counts at first: the others (log P −∞) cannot be chosen
    var finished = null, beam = [], steps = 0;
    for (var t = 1; t <= longest; t++) {
      var outs = [];
      for (var j = 0; j < alive.length; j++) {
        var a = alive[j];
        outs.push(await runStep(ctx, a.ys[a.ys.length - 1], t - 1, a.keys, a.values));
      }
      steps++;
      var V = outs[0].log_probs.data.length, candidates = new Float32Array(k * V).fill(-Infinity);
      alive.forEach(function (a, j) {  // float32 sums, as alive_log_probs + log_p
        var lp = outs[j].log_probs.data;
        for (var w = 0; w < V; w++) candidates[j * V + w] = a.logp + lp[w];
      });
      var penalty = lengthPenalty(t, alpha);
      var extension = function (pair) {
        var j = Math.floor(pair[0] / V), w = pair[0] % V, a = alive[j];
        return {
          ys: a.ys.concat([w]), word: w, logp: pair[1], parent: j, out: outs[j],
          selfRows: a.selfRows.concat([outs[j].decoder_attention.data]), crossRows: a.crossRows.concat([outs[j].cross_attention.data])
        };
      };
      var step_ = {t: t, hypotheses: []};
      beam.push(step_);
      var offer = function (h) {  // Finished.add with n = 1: a tie keeps the one found first
        h.score = Math.fround(h.logp / penalty);
        h.length = t;
        if (h.score > -Infinity && (finished === null || h.score > finished.score)) finished = h;
      };
      if (t === longest) {  // the last step: every extension ends here; the best by score is offered
        var last = best(candidates, 2 * k).filter(finite).map(extension);
        last.forEach(function (h) { h.status = "pruned"; });
        var top = last[0];  // the highest log P is the highest score: they share lp(t)
        offer(top);
        top.status = finished === top ? "finished" : "beaten";
        step_.hypotheses = last;
        break;
      }
      var chosen = best(candidates, 2 * k).filter(finite).map(extension);  // the 2k best, best first
      chosen.forEach(function (h, i) {
        h.status = "pruned";
        if (i < k && h.word === EOS) { h.status = "ended"; offer(h); }
      });
      var next = chosen.filter(function (h) { return h.word !== EOS; }).slice(0, k);  // go_on: the k best that go on
      next.forEach(function (h) {
        h.status = "open";
        h.keys = h.out.new_self_keys;
        h.values = h.out.new_self_values;
      });
      chosen.forEach(function (h) { if (h.status === "ended") h.status = finished === h ? "finished" : "beaten"; });
      step_.hypotheses = chosen;
      alive = next;
      // cannot_improve: an open prefix at best reaches log P_now / max lp over the lengths still allowed
      var future = Math.max(lengthPenalty(t + 1, alpha), lengthPenalty(longest, alpha));
      var bound = Math.fround(Math.max.apply(null, alive.map(function (a) { return a.logp; })) / future);
      if (finished !== null && finished.score >= bound) break;
    }
    beam.forEach(function (s) {  // the finished hypothesis that won, marked in every step it appears
      s.hypotheses.forEach(function (h) { if (h.status === "finished" && h !== finished) h.status = "beaten"; });
    });
    return {ys: finished.ys, selfRows: finished.selfRows, crossRows: finished.crossRows, steps: steps, beam: beam,
            score: finished.score, logp: finished.logp};
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

  // The beam as it grew: a row per step with its 2k best extensions, best first. Open ones go on; pruned ones
  // (grey) fell out of the beam; a finished one (✓) ended in </s> and is the best so far; beaten ones ended but
  // scored lower. Hovering one draws its cross-attention (the layer and head chosen above).
  function drawBeam() {
    var r = page.last, box = $("tc-beam"), section = $("tc-beam-section");
    box.textContent = $("tc-beam-attention").textContent = "";
    section.hidden = !(r && r.beam);
    if (!r || !r.beam) return;
    $("tc-beam-title").textContent = format(T.beam_title, {k: decoding.size, alpha: decoding.alpha});
    $("tc-beam-help").textContent = T.beam_help;
    r.beam.forEach(function (s) {
      var row = document.createElement("div");
      row.className = "beam-step";
      var label = document.createElement("span");
      label.className = "beam-t";
      label.textContent = "t = " + s.t;
      row.appendChild(label);
      var hyps = document.createElement("div");
      hyps.className = "hyps";
      row.appendChild(hyps);
      s.hypotheses.forEach(function (h) {
        var chip = document.createElement("span"), text = tok.targetText(h.ys), before = tok.targetText(h.ys.slice(0, -1));
        chip.className = "hyp " + h.status;
        var ended = h.status === "finished" || h.status === "beaten";
        // the prefix's last characters, then what this step added (the word, or </s>), then log P or the score
        var added = h.word === EOS ? "</s>" : text.startsWith(before) ? text.slice(before.length) : text;
        var shown = text.startsWith(before) ? before : "";
        var prefix = document.createElement("span");
        prefix.className = "prefix";
        prefix.textContent = (h.status === "finished" ? "✓ " : "") + (shown.length > 28 ? "…" + shown.slice(-28) : shown);
        var word = document.createElement("b");
        word.textContent = added.trim() ? (h.word === EOS ? " " : "") + added : added + "·";
        var value = document.createElement("span");
        value.className = "value";
        value.textContent = " " + (ended ? h.score : h.logp).toFixed(2);
        chip.append(prefix, word, value);
        var tip = format(ended ? T.hyp_ended : T.hyp_open, {
          text: text, logp: h.logp.toFixed(3), score: ended ? h.score.toFixed(3) : "", status: T.status[h.status]
        });
        chip.title = tip;
        chip.addEventListener("mouseenter", function () { showHypothesis(r, h, tip); });
        hyps.appendChild(chip);
      });
      box.appendChild(row);
    });
  }
  function showHypothesis(r, h, tip) {
    var v = current(), read = h.ys.slice(0, h.crossRows.length);
    var hr = {S: r.S, T: read.length, L: r.L, crossRows: h.crossRows};
    var target = $("tc-beam-attention");
    target.textContent = "";
    var caption = document.createElement("div");
    caption.textContent = tip + " — " + T.kinds.cross + ", " + format(T.layer_n, {n: v.layer}) + ", " +
      (v.head === "mean" ? T.mean : format(T.head_n, {n: v.head}));
    target.appendChild(caption);
    target.appendChild(heatmap(weights(hr, "cross", v.layer, v.head), targetLabels(read), r.srcLabels, 20, 11));
    $("tc-readout").textContent = tip;
  }
  var decodingSel = $("tc-decoding");
  option(decodingSel, "greedy", T.greedy);
  option(decodingSel, "beam", format(T.beam, {k: decoding.size, alpha: decoding.alpha}));
  decodingSel.addEventListener("change", function () { decoding.mode = decodingSel.value; run(); });

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
      status(r.S ? format(T.timing, {ms: r.ms.toFixed(0), steps: r.steps, pieces: r.S, mode: r.mode === "beam" ?
        format(T.beam, {k: decoding.size, alpha: decoding.alpha}) : T.greedy}) : T.empty);
      $("tc-notes").textContent = r.notes.join(" ");
      $("tc-readout").textContent = "";
      draw();
      drawBeam();
      return r;
    } catch (err) {  // the old sentence's translation and heatmaps go: what is on the page is what was typed
      page.last = null;
      $("tc-translation").textContent = $("tc-notes").textContent = $("tc-readout").textContent = "";
      draw();
      drawBeam();
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
  page.setDecoding = function (mode) {  // "greedy" or "beam"; the next translation uses it
    if (mode !== "greedy" && mode !== "beam") throw new Error("decoding is 'greedy' or 'beam', got " + mode);
    decoding.mode = decodingSel.value = mode;
  };
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
