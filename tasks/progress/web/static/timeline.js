// A run's live timeline, fed by its event stream (/runs/{task}/{run}/events).
// Every tab and every reload replays the stream from its first event, so all
// viewers of a run see the same state. Text from events is set with
// textContent only: nothing from a run is ever parsed as HTML.
(function () {
  "use strict";
  const root = document.getElementById("timeline");
  if (!root) return;
  const steps = document.getElementById("steps");
  const gates = document.getElementById("gates");
  const overall = document.getElementById("overall");
  const status = document.getElementById("run-status");
  const rows = new Map();

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
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

  function describe(metadata) {
    if (!metadata) return "";
    if (metadata.provider) {
      return metadata.query_id + " · " + metadata.provider + ": " +
        (metadata.failed ? "failed (in the error log)" : metadata.items + " results");
    }
    return Object.entries(metadata)
      .filter(([, v]) => v !== null && typeof v !== "object")
      .map(([k, v]) => k + " " + v).join(" · ");
  }

  function gate(metadata) {
    const li = el("li", metadata.outcome, "gate " + metadata.gate + ": " + metadata.outcome + " — " + metadata.reason);
    li.dataset.gate = metadata.gate;
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
    const detail = describe(metadata);
    if (detail) li.querySelector(".detail").textContent = detail;
    if (payload.chunk) {
      let pre = li.querySelector("pre.stream");
      if (!pre) { pre = el("pre", "stream"); li.append(pre); }
      pre.textContent += payload.chunk;
    }
    if (event.status === "error") li.querySelector(".detail").textContent = String(payload.error);
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
    document.getElementById("report-link").hidden = false;
    return true;
  }

  const source = new EventSource(root.dataset.events);
  source.onmessage = function (message) {
    const event = JSON.parse(message.data);
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
