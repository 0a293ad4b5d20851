// Long code lines wrap at spaces only, and a wrapped line never reads as a new one. CSS alone cannot ask for that:
// a browser may also break a pre-wrap line after a hyphen, a slash or a bar ("[--" / "quiet]", "NAME|" / "PATH"),
// and between two highlighted spans; and the rest of a wrapped line would start at the left edge, where a command
// starts — the end of a trailing "# comment" there reads as a command. So this script
// * puts every line of a block in a .gca-line span whose continuation lines hang 4 columns right of the line's own
//   indentation (css/extra.css), so a wrapped part never starts where a line does;
// * puts every run of non-space characters that holds such a character, whole, in a .gca-token span that does not
//   wrap; a line then breaks only at its spaces, and a token wider than the page scrolls.
// A highlighted comment (.c1: "# …" in bash and Python) is kept in one piece beside its code, or moved whole, "#"
// first, onto the next (indented) line; one longer than the page wraps under its own text (css/extra.css).
// The text itself is unchanged — the spans are inline-level and the newlines stay between them — so the copy button
// (which copies the block's innerText) copies the lines exactly as written.
(function () {
  "use strict";

  // Wraps each [start, end) range of code's text (ranges in order, none overlapping) in an element made by make().
  function wrapRanges(code, ranges, make) {
    const pieces = []; // [text node, offset of its first character in the block's text]
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let text = "";
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      pieces.push([node, text.length]);
      text += node.data;
    }
    if (pieces.length === 0) return;
    // from the last range back: wrapping one splits nodes after the earlier ranges' positions only
    let piece = pieces.length - 1;
    function position(offset, atEnd) {
      while (piece > 0 && (pieces[piece][1] > offset || (atEnd && pieces[piece][1] === offset))) piece -= 1;
      return [pieces[piece][0], offset - pieces[piece][1]];
    }
    for (let i = ranges.length - 1; i >= 0; i -= 1) {
      const [start, end] = ranges[i];
      const range = document.createRange();
      range.setEnd(...position(end, true));
      range.setStart(...position(start, false));
      const span = make(text.slice(start, end));
      span.appendChild(range.extractContents());
      range.insertNode(span);
    }
  }

  function blockText(code) {
    return code.textContent;
  }

  // Each non-empty line, without its newline: the newlines stay as text between the spans.
  function hangLines(code) {
    const ranges = [];
    for (const match of blockText(code).matchAll(/[^\n]+/g)) ranges.push([match.index, match.index + match[0].length]);
    wrapRanges(code, ranges, (line) => {
      const span = document.createElement("span");
      span.className = "gca-line";
      span.style.setProperty("--gca-indent", String(line.length - line.trimStart().length));
      return span;
    });
  }

  function keepTokensWhole(code) {
    const ranges = [];
    for (const match of blockText(code).matchAll(/\S{2,}/g)) {
      if (/[^\w]/.test(match[0])) ranges.push([match.index, match.index + match[0].length]);
    }
    wrapRanges(code, ranges, () => {
      const span = document.createElement("span");
      span.className = "gca-token";
      return span;
    });
  }

  function run() {
    for (const code of document.querySelectorAll(".md-typeset pre > code")) {
      if (!code.dataset.gcaWrapped) {
        code.dataset.gcaWrapped = "1";
        hangLines(code);
        keepTokensWhole(code);
      }
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
