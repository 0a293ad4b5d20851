// Long code lines wrap at spaces only. CSS alone cannot ask for that: a browser may also break a pre-wrap line after
// a hyphen, a slash or a bar ("[--" / "quiet]", "NAME|" / "PATH"), and between two highlighted spans. So every
// run of non-space characters that holds such a character is put, whole, in one span that does not wrap
// (.gca-token in css/extra.css); a line then breaks only at its spaces, and a token wider than the page scrolls.
// The text itself is unchanged, so the copy button copies the lines exactly as written.
(function () {
  "use strict";

  function keepTokensWhole(code) {
    const pieces = []; // [text node, offset of its first character in the block's text]
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let text = "";
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      pieces.push([node, text.length]);
      text += node.data;
    }
    const tokens = [];
    for (const match of text.matchAll(/\S{2,}/g)) {
      if (/[^\w]/.test(match[0])) tokens.push([match.index, match.index + match[0].length]);
    }
    // from the last token back: wrapping one splits nodes after the earlier tokens' positions only
    let piece = pieces.length - 1;
    function position(offset, atEnd) {
      while (piece > 0 && (pieces[piece][1] > offset || (atEnd && pieces[piece][1] === offset))) piece -= 1;
      return [pieces[piece][0], offset - pieces[piece][1]];
    }
    for (let i = tokens.length - 1; i >= 0; i -= 1) {
      const [start, end] = tokens[i];
      const range = document.createRange();
      range.setEnd(...position(end, true));
      range.setStart(...position(start, false));
      const span = document.createElement("span");
      span.className = "gca-token";
      span.appendChild(range.extractContents());
      range.insertNode(span);
    }
  }

  function run() {
    for (const code of document.querySelectorAll(".md-typeset pre > code")) {
      if (!code.dataset.gcaWrapped) {
        code.dataset.gcaWrapped = "1";
        keepTokensWhole(code);
      }
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
