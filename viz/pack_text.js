// The lecture pack's input check and tokenizers in the browser: text -> symbols -> ids, with the app's warnings (removed
// characters, unknown symbols, cuts; model/text/inputs.check_text).
//   const text = await PackText.open(spec.tokenizer)   // {source, target}: vocabularies
// A vocabulary's symbols come from its tokenizer.json (model/text/tokenizer_json.py), run here by tokenizers.js
// (@huggingface/tokenizers, vendored; the page holds the module as text and imports it from a blob: URL) and in the
// app by the Python `tokenizers` library: one description of the normalization and punctuation rules, two runtimes.
const PackText = (function () {
  "use strict";
  const SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"];
  let library = null;
  function load() {  // the tokenizers.js module, once per page
    if (!library) {
      const code = new Blob([document.getElementById("tokenizers-js").textContent], {type: "text/javascript"});
      library = import(URL.createObjectURL(code));
    }
    return library;
  }
  function Vocab(spec, Tokenizer) {
    const ids = new Map(spec.tokens.map((t, i) => [t, i]));
    const described = new Tokenizer(spec.json, {unk_token: "<unk>"});
    return {
      tokens: spec.tokens, level: spec.level, unk: 3, eos: 2, bos: 1, split: text => described.tokenize(text),
      ids: symbols => symbols.map(s => (ids.has(s) ? ids.get(s) : 3)),
      token: i => (i >= 0 && i < spec.tokens.length ? spec.tokens[i] : "<unk>"),
      detokenize: symbols => symbols.filter(s => !SPECIALS.includes(s)).join(spec.level === "char" ? "" : " "),
    };
  }
  async function open(spec) {
    const {Tokenizer} = await load();
    return {source: Vocab(spec.source, Tokenizer), target: Vocab(spec.target, Tokenizer)};
  }
  const isSpace = ch => /[\s\x1c-\x1f\x85]/u.test(ch);
  function cleanText(text) {  // model.tokenizer.clean_text
    let kept = "";
    for (const ch of text) kept += isSpace(ch) ? " " : (/\p{C}/u.test(ch) ? "" : ch);
    return kept.split(" ").filter(Boolean).join(" ");
  }
  // {text, errors, warnings, ids, tokens}: messages in the pack's language, from the templates in `words`
  function checkText(text, vocab, maxTokens, words) {
    const fill = (t, v) => t.replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
    const cleaned = cleanText(text), errors = [], warnings = [];
    let dropped = 0;
    for (const ch of text) if (!isSpace(ch) && !cleaned.includes(ch)) dropped++;
    if (dropped) warnings.push(fill(dropped === 1 ? words.removed_one : words.removed_many, {n: dropped}));
    const symbols = vocab.split(cleaned);
    if (!symbols.length) return {text: cleaned, errors: [words.empty], warnings, ids: []};
    const unknown = [...new Set(symbols.filter(s => vocab.ids(vocab.split(s)).every(i => i === vocab.unk)))];
    const quote = list => {
      const shown = list.slice(0, 12).map(s => (s.trim() ? `“${s}”` : words.a_space)).join(", ");
      return list.length > 12 ? fill(words.and_more, {shown, n: list.length - 12}) : shown;
    };
    if (unknown.length && unknown.length === new Set(symbols).size) {
      errors.push(fill(words.none_known, {symbols: quote(unknown)}));
    } else if (unknown.length) {
      warnings.push(fill(words.unknown, {symbols: quote(unknown)}));
    }
    const ids = vocab.ids(symbols);
    if (ids.length > maxTokens) {
      const kept = vocab.detokenize(ids.slice(0, maxTokens).map(vocab.token));
      warnings.push(fill(words.cut, {n: ids.length, room: maxTokens, kept: Array.from(kept).slice(-40).join(""),
        dropped: ids.length - maxTokens}));
    }
    return {text: cleaned, errors, warnings, ids: ids.slice(0, maxTokens)};
  }

  return {open, checkText, cleanText};
})();
