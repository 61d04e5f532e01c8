// A run's live timeline, fed by its event stream (/runs/{task}/{run}/events).
// Every tab and every reload replays the stream from its first event, so all
// viewers of a run see the same state. Text from events is set with
// textContent only: nothing from a run is ever parsed as HTML.
//
// Events carry the stages' own numbers under their field names
// (flows/run_view.py); what a person reads is said here, in words, and no
// server path is shown (the report is a link to its task page instead).
(function () {
  "use strict";
  const root = document.getElementById("timeline");
  if (!root) return;
  const steps = document.getElementById("steps");
  const gates = document.getElementById("gates");
  const overall = document.getElementById("overall");
  const status = document.getElementById("run-status");
  const taskPage = "/tasks/" + encodeURIComponent(root.dataset.task);
  const rows = new Map();
  let firstAt = null;  // the run's first event's time: a finished run says how long it took

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function counted(n, one, many) {
    return n + " " + (n === 1 ? one : (many || one + "s"));
  }

  function row(event) {
    let li = rows.get(event.stepType);
    if (!li) {
      li = el("li");
      li.dataset.step = event.stepType;
      li.append(el("span", "dot"), el("span", "label", event.label || event.stepType), el("progress"),
                el("span", "state"), el("div", "detail"));
      li.querySelector("progress").max = 1;
      li.querySelector("progress").value = 0;
      rows.set(event.stepType, li);
      steps.append(li);
    }
    return li;
  }

  // -- a step's numbers in words ---------------------------------------------

  function searchCall(m) {
    const found = m.failed ? "failed (in the error log)" : "found " + counted(m.items, "result");
    return "search " + m.done + " of " + m.total + ": " + m.provider + " " + found;
  }

  function planned(m) {
    const by = m.planner === "llm" ? " written by the language model" : " from the question's keywords";
    const why = m.fallback_reason ? " (the language model was not used: " + m.fallback_reason + ")" : "";
    return counted(m.queries, "query", "queries") + by + why;
  }

  function indexed(m) {
    // each provider that prepares says "library <folder>: 79 documents (…)": the count, not the folder
    return Object.entries(m).map(function ([name, summary]) {
      const documents = /: (\d+ documents?)/.exec(String(summary));
      return name + ": " + (documents ? documents[1] : "ready");
    }).join(" · ");
  }

  function searched(m) {
    const parts = [counted(m.searches, "search", "searches")];
    if (m.resumed) parts.push(m.resumed + " done by an earlier run");
    if (m.failed) parts.push(counted(m.failed, "failed search", "failed searches") + " (in the error log)");
    return parts.join(", ");
  }

  function consolidated(m) {
    const parts = [counted(m.new_sources, "new source"), m.sources + " in all"];
    if (m.failed_logged) parts.push(counted(m.failed_logged, "failed result") + " logged");
    return parts.join(", ");
  }

  function grouped(m) {
    return "the kept sources come from " + counted(m.publishers, "publisher");
  }

  // numbers a step reports that have no words of their own: "14 new sources"
  function anyNumbers(m) {
    return Object.entries(m)
      .filter(([, v]) => typeof v === "number")
      .map(([k, v]) => v + " " + k.replace(/_/g, " ")).join(" · ");
  }

  const WORDS = {plan: planned, index: indexed, deep_search: searched, consolidate: consolidated, filter: grouped};

  function describe(stepType, m) {
    if (!m) return "";
    if (m.provider) return searchCall(m);
    if (stepType === "deep_search" && m.searches === undefined) return "";  // a page's share, said by the bar
    return (WORDS[stepType] || anyNumbers)(m);
  }

  function reportReady(detail) {
    const link = el("a", null, "open it on the task page");
    link.href = taskPage;
    detail.replaceChildren("the report is written: ", link);
  }

  // -- the gates ---------------------------------------------------------------

  const CHECKS = {search_completeness: "enough candidates found", filter_sufficiency: "enough sources kept",
                  output_check: "the selection's numbers agree"};
  const OUTCOMES = {pass: "yes", warn: "yes, with a warning", fallback: "not yet", abort: "no, the run stops"};

  function gate(m) {
    const check = CHECKS[m.gate] || m.gate.replace(/_/g, " ");
    const li = el("li", m.outcome, check + ": " + (OUTCOMES[m.outcome] || m.outcome) + " — " + m.reason);
    li.dataset.gate = m.gate;
    gates.append(li);
  }

  function step(event) {
    const payload = event.payload || {};
    const metadata = payload.metadata;
    if (metadata && metadata.gate) { gate(metadata); return; }
    const li = row(event);
    li.className = event.status;
    li.querySelector(".state").textContent = event.status;
    const bar = li.querySelector("progress");
    if (event.status === "complete") bar.value = 1;
    else if (metadata && metadata.total) bar.value = metadata.done / metadata.total;
    else if (event.status === "start") bar.removeAttribute("value");  // running, share unknown
    const detail = li.querySelector(".detail");
    if (event.stepType === "reporting" && event.status === "complete") reportReady(detail);
    else if (describe(event.stepType, metadata)) detail.textContent = describe(event.stepType, metadata);
    if (payload.chunk) {
      let pre = li.querySelector("pre.stream");
      if (!pre) { pre = el("pre", "stream"); li.append(pre); }
      pre.textContent += payload.chunk;
    }
    if (event.status === "error") detail.textContent = String(payload.error);
  }

  // -- the run as a whole ------------------------------------------------------

  function took(from, to) {
    const seconds = (Date.parse(to) - Date.parse(from)) / 1000;
    if (!(seconds >= 0)) return "";
    if (seconds < 60) return seconds.toFixed(1) + " s";
    return Math.floor(seconds / 60) + " min " + Math.round(seconds % 60) + " s";
  }

  // The run's last line: complete (or failed), how long it took and when it ended, and the report.
  function ended(event, done) {
    const when = event.ts ? new Date(event.ts).toLocaleString() : "";
    const time = firstAt && event.ts ? " in " + took(firstAt, event.ts) : "";
    document.getElementById("run-end").textContent =
      (done ? "Complete" : "Failed") + time + (when ? ", at " + when : "") + ".";
    const link = document.querySelector("#report-link a");
    if (!done) link.textContent = "Open the task";
    document.getElementById("report-link").hidden = false;
  }

  function pipeline(event) {
    const payload = event.payload || {};
    if (event.status === "start") {
      status.textContent = "running";
      const plan = payload.metadata && payload.metadata.plan;
      if (plan) document.getElementById("plan").textContent = plan.join("\n");
      return false;
    }
    const done = event.status === "complete";
    status.textContent = done ? "complete" : "failed: " + String(payload.error);
    status.className = "status " + (done ? "complete" : "failed");
    root.dataset.final = done ? "complete" : "failed";
    ended(event, done);
    return true;
  }

  const source = new EventSource(root.dataset.events);
  source.onmessage = function (message) {
    const event = JSON.parse(message.data);
    if (firstAt === null) firstAt = event.ts || null;
    overall.value = event.progress;
    if (event.stepType === "pipeline") {
      if (pipeline(event)) source.close();  // the run's last event: stop, do not reconnect
    } else {
      step(event);
    }
  };
  source.onerror = function () {
    if (!root.dataset.final) status.textContent = "reconnecting…";
  };
})();
