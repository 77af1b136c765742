"""Text from visitors shown as text: every Markdown element of a page (st.markdown, st.caption, st.error,
st.warning, st.info, st.success, widget labels and help) renders Markdown, so what a visitor typed, a link
carried, a file was named or a vocabulary holds is escaped before it goes into one.

    st.warning(md(message))                         # an i18n Message: its template translated, its values escaped
    st.error(_("Model B: {why}").format(why=md(m))) # a page's own template around a message
    st.caption(_("Input: {text}").format(text=esc(typed)))
    st.markdown(_("The model writes {out}.").format(out=code(output)))   # as a code span, whatever it holds

Escaping is CommonMark's: a backslash before every ASCII punctuation character, so no link, image, emphasis,
HTML, LaTeX ($) or Streamlit directive (:red[...]) can form; GFM's autolinks, found after parsing, are broken by
a zero-width space (http\u200b://); the reader sees the characters themselves. Pure Python (no streamlit): tests use it directly.
"""

from __future__ import annotations

import re
import string

from i18n import Message

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")


# GFM's autolinks are found in the text after parsing (backslashes already gone): "http://", "www." and
# "name@host" become links whatever was escaped. A zero-width space inside each trigger keeps the text as it
# reads and leaves nothing to link.
_AUTOLINK = re.compile(r"(?i)(?<![a-z])(https?|ftp|mailto|file)(?=:)|(?<![a-z])(www)(?=\.)|(@)(?=\w)")
ZWSP = "\u200b"
# Control characters (a random model's continuation, a pasted terminal line) drawn as Unicode's pictures of them
# (␀ .. ␟, ␡): a browser draws most as nothing. Tabs and line breaks stay what they are.
_CONTROL_PICTURES = {cp: 0x2400 + cp for cp in range(32) if chr(cp) not in "\t\n\r"} | {0x7F: 0x2421}


def esc(text: object) -> str:
    """Plain text made safe for any Markdown element: every ASCII punctuation character backslash-escaped, a
    zero-width space inside what GFM would autolink (http://, www., name@host); line breaks kept as Markdown
    line breaks (no paragraph, heading or list can start inside the text); other control characters drawn as their
    pictures (U+2400 ..)."""
    unlinked = _AUTOLINK.sub(lambda m: m.group(0) + ZWSP, str(text).translate(_CONTROL_PICTURES))
    escaped = _PUNCTUATION.sub(r"\\\1", unlinked)
    return escaped.replace("\r", "").replace("\n", "  \n")


def md(message: object) -> str:
    """A message for a Markdown element, in the reader's language: a Message's template translated (its own
    Markdown kept), every value in it escaped; any other text (an exception's str, a token) escaped whole."""
    if isinstance(message, Message):
        return message.translated(escape=esc)
    return esc(message)


def code(text: object) -> str:
    """Text as an inline code span that nothing inside can close: fenced by one backtick more than its longest
    run of backticks, padded with spaces (CommonMark strips one space on each side)."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


__all__ = ["esc", "md", "code"]
