/* The page's tokenizers: the JavaScript twins of transformer_course's.
 *
 *   spacyTokenizer(spec)  spaCy's rule-based tokenizer (spacy.blank(lang)) on the rules exported by
 *                         course_tools/web/tokenizers.py: whitespace split, prefixes, suffixes, special
 *                         cases, URLs, infixes, then special cases across affixes ("Hallo:)" → "Hallo", ":)").
 *   bpeTokenizer(spec)    the byte-pair tokenizer of transformer_course.data.SubwordTokenizer: Metaspace +
 *                         Punctuation("isolated") pre-tokenizer, then the earliest-learned merge first.
 *   detokenize(tokens)    transformer_course.data.detokenize: spaCy words back to text.
 *
 * Each tokenizer has encode(text) → pieces and encodeIds(text) → ids (unknown → <unk>, id 1).
 * Runs in a browser (window.tcTokenizers) and in node (module.exports), where tests/test_web_page.py checks it
 * against Python on every test2016 source sentence.
 */
(function (root) {
  "use strict";
  var UNK = 1, EOS = 3;
  var SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"];

  function vocabulary(itos) {
    var stoi = new Map();
    itos.forEach(function (token, i) { stoi.set(token, i); });
    return function (tokens) { return tokens.map(function (t) { return stoi.has(t) ? stoi.get(t) : UNK; }); };
  }

  // ---- spaCy ----------------------------------------------------------------------------------------------
  function spacyTokenizer(spec, itos) {
    var prefix = new RegExp(spec.prefix, "u");
    var suffix = new RegExp(spec.suffix, "u");
    var infix = new RegExp(spec.infix, "gu");
    var url = spec.url ? new RegExp(spec.url, "u") : null;
    var rules = new Map(Object.entries(spec.rules));
    var space = new Set(Array.from(spec.whitespace));
    var matched = Object.entries(spec.matched);  // [key, its affix split]
    var byFirst = new Map();
    matched.forEach(function (m) {
      var first = m[1][0];
      if (!byFirst.has(first)) byFirst.set(first, []);
      byFirst.get(first).push(m);
    });

    function findPrefix(s) { var m = prefix.exec(s); return m ? m[0].length : 0; }
    function findSuffix(s) { var m = suffix.exec(s); return m ? m[0].length : 0; }

    // One whitespace-free span → its tokens (spaCy's Tokenizer._tokenize: _split_affixes, then _attach_tokens).
    function span(string) {
      if (rules.has(string)) return rules.get(string).slice();
      var prefixes = [], suffixes = [], lastSize = -1;
      while (string && string.length !== lastSize) {
        if (rules.has(string)) break;
        lastSize = string.length;
        var pre = findPrefix(string), pfx = string.slice(0, pre), minusPre = string.slice(pre);
        if (pre && minusPre && rules.has(minusPre)) { string = minusPre; prefixes.push(pfx); break; }
        var suf = findSuffix(string.slice(pre));
        var sfx = suf ? string.slice(string.length - suf) : "", minusSuf = suf ? string.slice(0, string.length - suf) : string;
        if (suf && minusSuf && rules.has(minusSuf)) { string = minusSuf; suffixes.push(sfx); break; }
        if (pre && suf && pre + suf <= string.length) {
          string = string.slice(pre, string.length - suf); prefixes.push(pfx); suffixes.push(sfx);
        } else if (pre) {
          string = minusPre; prefixes.push(pfx);
        } else if (suf) {
          string = minusSuf; suffixes.push(sfx);
        }
        if (rules.has(string)) break;
      }
      var tokens = prefixes.slice();
      if (string) {
        if (rules.has(string)) {
          tokens.push.apply(tokens, rules.get(string));
        } else if (url && url.test(string)) {
          tokens.push(string);
        } else {
          var start = 0;
          infix.lastIndex = 0;
          var matches = Array.from(string.matchAll(infix));
          matches.forEach(function (m) {
            var a = m.index, b = m.index + m[0].length;
            if (a === 0) return;  // an infix at the very start splits nothing (spaCy: start_before_infixes)
            if (a !== start) tokens.push(string.slice(start, a));
            if (a !== b) tokens.push(string.slice(a, b));
            start = b;
          });
          if (string.slice(start)) tokens.push(string.slice(start));
        }
      }
      for (var i = suffixes.length - 1; i >= 0; i--) tokens.push(suffixes[i]);
      return tokens;
    }

    // Special cases the affix split broke apart are merged back, longest first (spaCy's _special_matcher).
    function mergeSpecials(tokens) {
      var found = [];
      for (var i = 0; i < tokens.length; i++) {
        (byFirst.get(tokens[i]) || []).forEach(function (m) {
          var split = m[1];
          for (var j = 0; j < split.length; j++) if (tokens[i + j] !== split[j]) return;
          found.push({start: i, end: i + split.length, key: m[0]});
        });
      }
      if (!found.length) return tokens;
      found.sort(function (a, b) { return (b.end - b.start) - (a.end - a.start) || a.start - b.start; });
      var seen = new Set(), kept = [];
      found.forEach(function (f) {
        if (!seen.has(f.start) && !seen.has(f.end - 1)) kept.push(f);
        for (var k = f.start; k < f.end; k++) seen.add(k);
      });
      kept.sort(function (a, b) { return a.start - b.start; });
      var out = [], at = 0;
      kept.forEach(function (f) {
        out.push.apply(out, tokens.slice(at, f.start));
        out.push.apply(out, rules.get(f.key));
        at = f.end;
      });
      return out.concat(tokens.slice(at));
    }

    function encode(text) {
      var tokens = [], word = "";
      Array.from(text).forEach(function (ch) {
        if (space.has(ch)) { if (word) tokens.push.apply(tokens, mergeSpecials(span(word))); word = ""; }
        else word += ch;
      });
      if (word) tokens.push.apply(tokens, mergeSpecials(span(word)));
      return tokens;
    }
    var ids = vocabulary(itos);
    return {encode: encode, encodeIds: function (text) { return ids(encode(text)); }};
  }

  // ---- byte-pair pieces -----------------------------------------------------------------------------------
  var WORD_START = "\u2581";
  var PUNCTUATION = /[\p{P}!-\/:-@\[-`{-~]/u;  // Unicode punctuation or ASCII punctuation, as tokenizers' is_punc

  function pretokenize(text, punctuation) {
    var marked = text.split(" ").join(WORD_START);
    if (marked && marked[0] !== WORD_START) marked = WORD_START + marked;
    var words = [];
    marked.split(/(?=\u2581)/u).forEach(function (word) {
      if (!punctuation) { if (word) words.push(word); return; }
      var current = "";
      Array.from(word).forEach(function (ch) {
        if (PUNCTUATION.test(ch)) { if (current) words.push(current); words.push(ch); current = ""; }
        else current += ch;
      });
      if (current) words.push(current);
    });
    return words;
  }

  function bpeTokenizer(spec) {
    var ids = new Map(), ranks = new Map();
    spec.itos.forEach(function (piece, i) { ids.set(piece, i); });
    spec.merges.forEach(function (m, rank) { ranks.set(m[0] + " " + m[1], rank); });
    var punctuation = spec.pre_tokenizer === "metaspace+punctuation";
    function segment(word) {
      var symbols = Array.from(word).map(function (ch) { return ids.has(ch) ? ch : spec.unk; });
      while (symbols.length > 1) {
        var best = -1, bestRank = Infinity;
        for (var i = 0; i + 1 < symbols.length; i++) {
          var r = ranks.get(symbols[i] + " " + symbols[i + 1]);
          if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
        }
        if (best < 0) break;
        symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
      }
      return symbols;
    }
    function encode(text) {
      var pieces = [];
      pretokenize(text, punctuation).forEach(function (w) { pieces.push.apply(pieces, segment(w)); });
      return pieces;
    }
    function decode(tokenIds) {  // SubwordTokenizer.decode(ids, strip_specials=True)
      var pieces = [];
      for (var i = 0; i < tokenIds.length; i++) {
        var piece = spec.itos[tokenIds[i]];
        if (tokenIds[i] === EOS) break;
        if (SPECIALS.indexOf(piece) >= 0 && piece !== "<unk>") continue;
        pieces.push(piece);
      }
      return pieces.map(function (p, i) {
        var s = p.split(WORD_START).join(" ");
        return i === 0 && s[0] === " " ? s.slice(1) : s;
      }).join("");
    }
    function display(pieces) {  // SubwordTokenizer.display_pieces: "▁Schnee mobil" → "Schnee ·mobil"
      return pieces.map(function (p) {
        if (SPECIALS.indexOf(p) >= 0 || p === WORD_START) return p;
        return p[0] === WORD_START ? p.slice(1) : "\u00b7" + p;
      });
    }
    return {
      encode: encode,
      encodeIds: function (text) { return encode(text).map(function (p) { return ids.has(p) ? ids.get(p) : UNK; }); },
      decode: decode,
      display: display,
      itos: spec.itos
    };
  }

  // ---- words back to text (transformer_course.data.detokenize) -------------------------------------------
  var NO_SPACE_BEFORE = new Set([",", ".", "!", "?", ";", ":", "%", ")", "n't", "'s", "'re", "'m", "'ll", "'ve", "'d", "'"]);
  var NO_SPACE_AFTER = new Set(["("]);
  function isAlnum(ch) { return /^[\p{L}\p{N}]$/u.test(ch); }  // Python's str.isalnum on one character
  function lastChar(s) { var a = Array.from(s); return a.length ? a[a.length - 1] : ""; }
  function firstChar(s) { var a = Array.from(s); return a.length ? a[0] : ""; }

  function detokenize(tokens) {
    var out = [], glue = true, quotes = 0;
    tokens.forEach(function (token, i) {
      if (token === '"') {
        var opening = quotes % 2 === 0;
        quotes += 1;
        out.push(opening && !glue ? " " + token : token);
        glue = opening;
        return;
      }
      var prev = i > 0 ? tokens[i - 1] : "", next = i + 1 < tokens.length ? tokens[i + 1] : "";
      var inWordHyphen = token === "-" && isAlnum(lastChar(prev)) && isAlnum(firstChar(next));
      var space = !(glue || NO_SPACE_BEFORE.has(token.toLowerCase()) || inWordHyphen);
      out.push(space ? " " + token : token);
      glue = NO_SPACE_AFTER.has(token) || inWordHyphen;
    });
    return out.join("");
  }

  // The tokenizers of one exported model (manifest "tokenizer" entry): text → ids and pieces, ids → text, labels.
  function forModel(spec) {
    if (spec.source.kind === "bpe") {
      var bpe = bpeTokenizer(spec.source);
      return {
        kind: "bpe",
        source: function (text) { var p = bpe.encode(text); return {pieces: p, ids: bpe.encodeIds(text)}; },
        targetText: bpe.decode,
        sourceLabels: bpe.display,
        targetLabels: function (ids) { return bpe.display(ids.map(function (i) { return bpe.itos[i]; })); }
      };
    }
    var words = spacyTokenizer(spec.source, spec.src_itos), tgt = spec.target.tgt_itos;
    return {
      kind: "words",
      source: function (text) { var p = words.encode(text); return {pieces: p, ids: words.encodeIds(text)}; },
      targetText: function (ids) {
        var tokens = [];
        for (var i = 0; i < ids.length; i++) {
          if (ids[i] === EOS) break;
          if (ids[i] === 0 || ids[i] === 2) continue;
          tokens.push(tgt[ids[i]]);
        }
        return detokenize(tokens);
      },
      sourceLabels: function (pieces) { return pieces; },
      targetLabels: function (ids) { return ids.map(function (i) { return tgt[i]; }); }
    };
  }

  var api = {spacyTokenizer: spacyTokenizer, bpeTokenizer: bpeTokenizer, pretokenize: pretokenize,
             detokenize: detokenize, forModel: forModel};
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.tcTokenizers = api;
})(this);
