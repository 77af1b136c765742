// The lecture pack's input check and tokenizers in the browser: text -> symbols -> ids, with the app's warnings
// (removed characters, unknown symbols, cuts; model/text/inputs.check_text).
//   const text = await PackText.open(spec.tokenizer)   // {source, target}: vocabularies
// A vocabulary's symbols come from its tokenizer.json (model/text/tokenizer_json.py), run here by tokenizers.js
// (@huggingface/tokenizers, vendored, imported from a blob: URL) and in the app by the Python `tokenizers` library: one
// description of the normalization and punctuation rules, two runtimes.
const PackText = (function () {
  "use strict";
  let library = null;
  function load() {  // the tokenizers.js module, once per page
    if (!library) {
      const code = new Blob([document.getElementById("tokenizers-js").textContent], {type: "text/javascript"});
      library = import(URL.createObjectURL(code));
    }
    return library;
  }
  // One side's vocabulary: symbols(text) (what the input check names), contentIds(text) (the ids of the text itself),
  // prefix (ids put in front: BART's <s>), after (ids after </s>: mBART's language code), token(i), detokenize(tokens).
  // This project's (model/text/tokenizer.Vocab) or someone else's token list (ListVocab: its specials wherever the list
  // has them, <s> in front when prepend_bos): symbols are the description's, looked up whole
  function Vocab(spec, Tokenizer) {
    const ids = new Map(spec.tokens.map((t, i) => [t, i])), unk = spec.unk_id;
    const specials = new Set([spec.pad_id, spec.bos_id, spec.eos_id, unk].map(i => spec.tokens[i]));
    const described = new Tokenizer(spec.json, {unk_token: spec.tokens[unk]});
    const symbols = text => described.tokenize(text);
    return {
      unk, eos: spec.eos_id, bos: spec.bos_id, prefix: spec.prepend_bos ? [spec.bos_id] : [], after: [], symbols,
      contentIds: text => symbols(text).map(s => (ids.has(s) ? ids.get(s) : unk)),
      token: i => spec.tokens[i >= 0 && i < spec.tokens.length ? i : unk],
      detokenize: tokens => tokens.filter(s => !specials.has(s)).join(spec.level === "char" ? "" : " "),
    };
  }
  // A Hugging Face folder's (model/checkpoints/formats/hf_tokenizers.py): pieces from the folder's tokenizer as a
  // tokenizer.json (hf_descriptions.py), their ids + offset (the sentencepiece <unk> -> unk_id); the input check
  // names whitespace-separated words, as the app's does for these vocabularies.
  function PieceVocab(spec, Tokenizer) {
    const described = new Tokenizer(spec.json, {}), added = new Set(Object.keys(spec.added)), byToken = new Map();
    spec.tokens.forEach((t, i) => { if (!byToken.has(t)) byToken.set(t, i); });
    const pieces = text => described.encode(text, {add_special_tokens: false}), m = spec.marian;
    const side = {unk: spec.unk_id, eos: spec.eos_id, bos: spec.bos_id, prefix: spec.prefix, after: spec.after_eos,
      symbols: text => text.split(" ").filter(Boolean),
      contentIds: text => pieces(text).ids.map(p => (p === spec.spm_unk ? spec.unk_id : p + spec.offset)),
      token: i => (i >= 0 && i < spec.tokens.length ? spec.tokens[i] : `<id ${i}>`),
      detokenize: tokens => {
        const ids = tokens.filter(t => !added.has(t) && !t.startsWith("<id ")).map(t => byToken.get(t) - spec.offset)
          .filter(i => i !== undefined);
        const options = {skip_special_tokens: false, clean_up_tokenization_spaces: false};
        return ids.length ? described.decode(ids, options).trim() : "";
      }};
    if (!m) return side;
    // marian_tokenizer.MarianVocab: a leading ">>xx<<" is one token; pieces -> vocab.json ids; detokenized by
    // sentencepiece's decode_pieces as MarianVocab.detokenize calls it: the target model's pieces with "▁" as a space
    // (the first one dropped), a piece that model lacks (vocab.json is shared by both sides) as it is spelled
    const ids = new Map(Object.entries(m.ids)), specials = new Set(m.specials);
    side.contentIds = text => {
      const end = text.startsWith(">>") ? text.indexOf("<<") : -1, code = end === -1 ? [] : [text.slice(0, end + 2)];
      const rest = pieces(end === -1 ? text : text.slice(end + 2)).tokens;
      return [...code, ...rest].map(p => (ids.has(p) ? ids.get(p) : spec.unk_id));
    };
    side.detokenize = tokens => {
      const text = tokens.filter(t => !specials.has(t))
        .map(t => (described.token_to_id(t) === undefined ? t : t.replaceAll("▁", " "))).join("");
      return (text.startsWith(" ") ? text.slice(1) : text).trim();
    };
    return side;
  }
  // model/text/tokenizer.clean_text's classes of characters, as the app's Python reads them (clean_classes: code point
  // ranges), not as this browser's Unicode version does: a newer emoji the app drops is dropped here too
  let classes = {space: [], dropped: []}, limits = null;  // and check_text's numbers (inputs.check_limits)
  const within = (cp, r) => {  // r: [first, last, first, last, ...], sorted
    let lo = 0, hi = r.length / 2 - 1;
    while (lo <= hi) {
      const m = (lo + hi) >> 1;
      if (cp < r[2 * m]) hi = m - 1; else if (cp > r[2 * m + 1]) lo = m + 1; else return true;
    }
    return false;
  };
  async function open(spec) {
    const {Tokenizer} = await load(), make = side => (side.level === "subword" ? PieceVocab : Vocab)(side, Tokenizer);
    [classes, limits] = [spec.clean, spec.limits];
    return {source: make(spec.source), target: make(spec.target)};
  }
  const isSpace = ch => within(ch.codePointAt(0), classes.space);
  function cleanText(text) {  // model.tokenizer.clean_text
    let kept = "";
    for (const ch of text) kept += isSpace(ch) ? " " : (within(ch.codePointAt(0), classes.dropped) ? "" : ch);
    return kept.split(" ").filter(Boolean).join(" ");
  }
  // {text, errors, warnings, ids}: model/text/inputs.check_text (ids: what prepare_source puts before </s>);
  // messages in the pack's language, from the templates in `words`
  function checkText(text, vocab, maxTokens, words) {
    const fill = (t, v) => t.replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
    const cleaned = cleanText(text), errors = [], warnings = [];
    let dropped = 0;
    for (const ch of text) if (!isSpace(ch) && !cleaned.includes(ch)) dropped++;
    if (dropped) warnings.push(fill(dropped === 1 ? words.removed_one : words.removed_many, {n: dropped}));
    const symbols = vocab.symbols(cleaned);
    if (!symbols.length) return {text: cleaned, errors: [words.empty], warnings, ids: []};
    const unknown = [...new Set(symbols.filter(s => vocab.contentIds(s).every(i => i === vocab.unk)))];
    const quote = list => {
      const shown = list.slice(0, limits.quoted).map(s => (s.trim() ? `“${s}”` : words.a_space)).join(", ");
      return list.length > limits.quoted ? fill(words.and_more, {shown, n: list.length - limits.quoted}) : shown;
    };
    if (unknown.length && unknown.length === new Set(symbols).size) {
      errors.push(fill(words.none_known, {symbols: quote(unknown)}));
    } else if (unknown.length) {
      warnings.push(fill(words.unknown, {symbols: quote(unknown)}));
    }
    const ids = vocab.contentIds(cleaned), room = maxTokens - (vocab.prefix.length ? 1 : 0) - vocab.after.length;
    if (ids.length > room) {
      const kept = vocab.detokenize(ids.slice(0, room).map(vocab.token));
      warnings.push(fill(words.cut, {n: ids.length, room, kept: Array.from(kept).slice(-limits.kept).join(""),
        dropped: ids.length - room}));
    }
    // ids: before </s> (model/text/inputs.prepare_source); content: every id of the text (prepare_sequence cuts them)
    return {text: cleaned, errors, warnings, ids: [...vocab.prefix, ...ids.slice(0, room)], content: ids};
  }

  return {open, checkText, cleanText, within};
})();
