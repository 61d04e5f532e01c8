// Keyboard submit for a form marked data-keyboard-submit (the research form):
// Ctrl+Enter or ⌘+Enter in its question box, Enter in any one-line field.
// A plain Enter in the question box still adds a line. A file of its own:
// the page's Content-Security-Policy runs no inline script.
(function () {
  "use strict";
  const ONE_LINE = new Set(["INPUT", "SELECT"]);  // a <select> does not submit on Enter by itself

  function submitsOnEnter(event) {
    const field = event.target;
    if (field.tagName === "TEXTAREA") return event.ctrlKey || event.metaKey;
    return ONE_LINE.has(field.tagName);
  }

  for (const form of document.querySelectorAll("form[data-keyboard-submit]")) {
    form.addEventListener("keydown", function (event) {
      // isComposing: this Enter picks a word in an input method (Chinese, Japanese), it sends nothing
      if (event.key !== "Enter" || event.isComposing || !submitsOnEnter(event)) return;
      event.preventDefault();
      form.requestSubmit();  // as the button would: the browser checks required fields first
    });
  }
})();
