// The lecture pack's input check and this project's vocabularies (model/text/tokenizer.py, model/text/inputs.check_text)
// in the browser: text -> symbols -> ids, with the app's warnings (removed characters, unknown symbols, cuts).
const PackText = (function () {
  "use strict";
  const SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"];
  // -- this project's Vocab (model/tokenizer.py) and the app's input check (model/inputs.check_text) ---------
  function Vocab(spec) {
    const ids = new Map(spec.tokens.map((t, i) => [t, i]));
    const split = text => {
      text = text.normalize("NFC");
      if (spec.lowercase) text = text.toLowerCase();
      return spec.level === "char" ? Array.from(text) : text.split(/\s+/).filter(Boolean);
    };
    return {
      tokens: spec.tokens, level: spec.level, unk: 3, eos: 2, bos: 1, split,
      ids: symbols => symbols.map(s => (ids.has(s) ? ids.get(s) : 3)),
      token: i => (i >= 0 && i < spec.tokens.length ? spec.tokens[i] : "<unk>"),
      detokenize: symbols => symbols.filter(s => !SPECIALS.includes(s)).join(spec.level === "char" ? "" : " "),
    };
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

  return {Vocab, checkText, cleanText};
})();
