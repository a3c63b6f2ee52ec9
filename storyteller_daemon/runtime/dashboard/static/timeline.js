// The live timeline: new decisions arrive as server-sent events and are added at the top.
// Every piece of text is set with textContent, never parsed as HTML: players write it.
"use strict";
(function () {
  const list = document.getElementById("timeline");
  const state = document.getElementById("live-state");
  if (!list || !state || !window.EventSource) return;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function when(iso) {
    return String(iso).replace("T", " ").slice(0, 19);
  }

  function render(e) {
    const item = el("li", "entry fresh " + e.kind + " outcome-" + e.outcome);
    item.dataset.run = String(e.id);
    const head = el("div", "entry-head");
    const link = el("a", null, "#" + e.id);
    link.href = "/runs/" + encodeURIComponent(e.id);
    head.append(link, el("time", null, when(e.started_at)), el("span", "who", e.storyteller.name));
    let kind = e.kind + " · " + e.trigger.label;
    if (e.trigger.room_id !== null) kind += " · room " + e.trigger.room_id;
    head.append(el("span", "kind", kind), el("span", "badge", e.outcome));
    item.append(head);
    const events = el("ul", "events");
    for (const ev of e.events || []) {
      const line = el("li");
      line.append(el("span", "event-text", ev.text || ev.label));
      if (ev.decision) {
        line.append(document.createTextNode(" → "), el("b", null, ev.decision));
        if (ev.reason) line.append(document.createTextNode(": "), el("span", "reason", ev.reason));
      }
      events.append(line);
    }
    item.append(events);
    if (e.reason) item.append(el("p", "reason", "Interested: " + e.reason));
    if (e.calls && e.calls.length) {
      const calls = el("p", "calls");
      for (const c of e.calls) calls.append(el("span", "call" + (c.ok ? "" : " failed"), c.name));
      item.append(calls);
    }
    if (e.progs && e.progs.length) {
      const progs = el("p", "progs");
      for (const p of e.progs) progs.append(el("span", "prog" + (p.ok ? "" : " failed"), "prog " + p.prog));
      item.append(progs);
    }
    return item;
  }

  const source = new EventSource(state.dataset.stream);
  source.onopen = function () { state.textContent = "Live: new decisions appear at the top."; };
  source.onerror = function () { state.textContent = "Live: reconnecting…"; };
  source.addEventListener("run", function (message) {
    const entry = JSON.parse(message.data);
    if (list.querySelector('[data-run="' + entry.id + '"]')) return;
    const empty = list.querySelector(".empty");
    if (empty) empty.remove();
    list.prepend(render(entry));
  });
})();
