// agui-replay view: the page's behaviour. The data (events, the state operations and message
// growth computed by agui_replay's own client Session) is embedded as JSON in #agui-data.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("agui-data").textContent);
  var events = data.events;
  var total = events.length;
  var stateOps = data.stateOps; // [[eventIndex, [ops...]], ...] in event order
  var opsAt = {};
  stateOps.forEach(function (pair) { opsAt[pair[0]] = pair[1]; });
  var problemsAt = {};
  data.errors.forEach(function (pair) {
    var key = pair[0] === null || pair[0] === undefined ? total - 1 : pair[0];
    (problemsAt[key] = problemsAt[key] || []).push(pair[1]);
  });
  var current = -1;

  function $(id) { return document.getElementById(id); }
  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }
  function clone(value) { return value === undefined ? null : JSON.parse(JSON.stringify(value)); }

  // --- state: replay the operations up to an event, with checkpoints -----------------------
  function tokens(pointer) {
    if (pointer === "") return [];
    return pointer.slice(1).split("/").map(function (t) {
      return t.replace(/~1/g, "/").replace(/~0/g, "~");
    });
  }
  function applyOps(doc, ops) {
    ops.forEach(function (op) {
      var path = tokens(op.path);
      if (path.length === 0) {
        doc = op.op === "remove" ? null : clone(op.value);
        return;
      }
      var parent = doc;
      for (var i = 0; i < path.length - 1; i++) parent = parent[path[i]];
      var last = path[path.length - 1];
      if (Array.isArray(parent)) {
        var at = last === "-" ? parent.length : Number(last);
        if (op.op === "add") parent.splice(at, 0, clone(op.value));
        else if (op.op === "remove") parent.splice(at, 1);
        else parent[at] = clone(op.value);
      } else if (op.op === "remove") {
        delete parent[last];
      } else {
        parent[last] = clone(op.value);
      }
    });
    return doc;
  }
  var checkpoints = [[-1, clone(data.initialState)]];
  function stateAt(n) {
    var best = checkpoints[0];
    checkpoints.forEach(function (cp) { if (cp[0] <= n && cp[0] > best[0]) best = cp; });
    var doc = clone(best[1]);
    var applied = 0;
    for (var k = 0; k < stateOps.length; k++) {
      var i = stateOps[k][0];
      if (i <= best[0]) continue;
      if (i > n) break;
      doc = applyOps(doc, stateOps[k][1]);
      if (++applied % 64 === 0) checkpoints.push([i, clone(doc)]);
    }
    return doc;
  }

  // --- rendering JSON with changed paths marked ----------------------------------------------
  function pointerJoin(base, key) {
    return base + "/" + String(key).replace(/~/g, "~0").replace(/\//g, "~1");
  }
  function renderJSON(value, path, changed, pad) {
    var mark = changed[path] ? ' class="chg" data-changed="1"' : "";
    var open = '<span data-path="' + esc(path) + '"' + mark + ">";
    var inner;
    if (value === null || typeof value !== "object") {
      var cls = typeof value === "string" ? "str" : typeof value === "number" ? "num" : "lit";
      inner = '<span class="' + cls + '">' + esc(JSON.stringify(value)) + "</span>";
    } else if (Array.isArray(value)) {
      if (value.length === 0) inner = "[]";
      else {
        inner = "[\n" + value.map(function (item, i) {
          return pad + "  " + renderJSON(item, pointerJoin(path, i), changed, pad + "  ");
        }).join(",\n") + "\n" + pad + "]";
      }
    } else {
      var keys = Object.keys(value);
      if (keys.length === 0) inner = "{}";
      else {
        inner = "{\n" + keys.map(function (key) {
          return pad + '  <span class="key">' + esc(JSON.stringify(key)) + "</span>: " +
            renderJSON(value[key], pointerJoin(path, key), changed, pad + "  ");
        }).join(",\n") + "\n" + pad + "}";
      }
    }
    return open + inner + "</span>";
  }

  // --- chat ----------------------------------------------------------------------------------
  function lengthAt(marks, n) {
    var length = 0;
    for (var i = 0; i < marks.length && marks[i][0] <= n; i++) length = marks[i][1];
    return length;
  }
  function growsAfter(marks, n) {
    return marks.length > 0 && marks[marks.length - 1][0] > n;
  }
  function textOf(content) {
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content.map(function (p) { return p && p.text ? p.text : "[" + (p && p.type) + "]"; }).join("");
    }
    return content === undefined || content === null ? "" : JSON.stringify(content);
  }
  var entriesByKey = {};
  data.messages.forEach(function (entry) { entriesByKey[entry.key] = entry; });
  // The messages the client Session held after event n, in its order (data.messageOrder lists
  // them at each event where the list changed, so a MESSAGES_SNAPSHOT replaces the list).
  function heldAt(n) {
    var held = [];
    var order = data.messageOrder || [];
    for (var i = 0; i < order.length && order[i][0] <= n; i++) held = order[i][1];
    return held.map(function (key) { return entriesByKey[key]; });
  }
  function renderChat(n) {
    var event = events[n] || {};
    var touched = event.messageId || null;
    var touchedCall = event.toolCallId || null;
    var parts = [];
    heldAt(n).forEach(function (entry) {
      if (!entry) return;
      var m = entry.message;
      var role = m.role || "assistant";
      var streaming = growsAfter(entry.marks, n);
      var text = textOf(m.content);
      if (typeof m.content === "string") text = text.slice(0, lengthAt(entry.marks, n));
      var calls = (m.toolCalls || []).filter(function (call) {
        var rec = entry.calls[call.id];
        return !rec || rec.first <= n;
      }).map(function (call) {
        var rec = entry.calls[call.id];
        var args = (call["function"] && call["function"].arguments) || "";
        if (rec) {
          args = args.slice(0, lengthAt(rec.marks, n));
          if (growsAfter(rec.marks, n)) streaming = true;
        }
        if (call.id === touchedCall) touched = m.id;
        return '<div class="call"><span class="muted">call</span> <b>' + esc(call["function"] ? call["function"].name : "?") +
          "</b>(" + esc(args) + ') <span class="muted">' + esc(call.id) + "</span></div>";
      }).join("");
      if (role === "tool" && m.toolCallId === touchedCall) touched = m.id;
      var who = esc(role) + ' <span>' + esc(m.id) + "</span>" +
        (role === "tool" && m.toolCallId ? " <span>→ " + esc(m.toolCallId) + "</span>" : "") +
        (streaming ? ' <span class="streaming">streaming…</span>' : "");
      var body = text ? '<div class="text">' + esc(text) + "</div>" : "";
      parts.push('<div class="msg ' + esc(role) + (m.id === touched ? " touched" : "") +
        '" data-id="' + esc(m.id) + '"><div class="who">' + who + "</div>" + body + calls + "</div>");
    });
    $("chat").innerHTML = parts.length ? parts.join("") : '<p class="empty">no messages yet</p>';
    var hit = $("chat").querySelector(".touched");
    if (hit && hit.scrollIntoView) hit.scrollIntoView({ block: "nearest" });
  }

  // --- timeline ------------------------------------------------------------------------------
  function family(type) {
    var head = String(type).split("_")[0];
    return ["RUN", "STATE", "TOOL", "TEXT", "REASONING", "STEP"].indexOf(head) >= 0 ? head : "OTHER";
  }
  function buildTimeline() {
    var runStarts = {};
    data.runs.forEach(function (run) { runStarts[run.start] = run; });
    var html = [];
    for (var i = 0; i < total; i++) {
      var run = runStarts[i];
      if (run && data.runs.length > 1) {
        html.push('<li class="run">run ' + run.index + (run.name ? " · " + esc(run.name) : "") +
          (run.runId ? ' <span class="muted">' + esc(run.runId) + "</span>" : "") + "</li>");
      }
      var type = events[i].type;
      html.push('<li class="ev t-' + family(type) + (problemsAt[i] ? " bad" : "") +
        '" data-i="' + i + '"><span class="idx">#' + i + '</span><span class="body">' +
        '<span class="type">' + esc(type) + '</span><span class="sum">' + esc(data.summaries[i]) +
        "</span></span></li>");
    }
    $("timeline").innerHTML = html.join("") || '<li class="empty">no events</li>';
    $("timeline").addEventListener("click", function (e) {
      var li = e.target.closest ? e.target.closest("li.ev") : null;
      if (li) select(Number(li.getAttribute("data-i")), true);
    });
    var selectRun = $("run-select");
    selectRun.innerHTML = data.runs.map(function (run) {
      return '<option value="' + run.start + '">run ' + run.index + " (#" + run.start + "–#" +
        Math.max(run.start, run.end - 1) + ")</option>";
    }).join("");
    selectRun.addEventListener("change", function () { select(Number(selectRun.value), true); });
    $("filter").addEventListener("input", function () {
      var needle = this.value.toLowerCase();
      var rows = $("timeline").querySelectorAll("li.ev");
      for (var r = 0; r < rows.length; r++) {
        rows[r].style.display = !needle || rows[r].textContent.toLowerCase().indexOf(needle) >= 0 ? "" : "none";
      }
    });
  }

  // --- selection -----------------------------------------------------------------------------
  function select(n, updateHash) {
    if (total === 0) return;
    n = Math.max(0, Math.min(total - 1, n));
    current = n;
    document.body.setAttribute("data-event", String(n));
    var rows = $("timeline").querySelectorAll("li.ev");
    for (var r = 0; r < rows.length; r++) {
      var i = Number(rows[r].getAttribute("data-i"));
      rows[r].classList.toggle("selected", i === n);
      rows[r].classList.toggle("after", i > n);
    }
    var row = $("timeline").querySelector('li.ev[data-i="' + n + '"]');
    if (row && row.scrollIntoView) row.scrollIntoView({ block: "nearest" });
    $("position").textContent = "#" + n + " / " + (total - 1);
    $("state-at").textContent = "after #" + n;
    $("chat-at").textContent = "after #" + n;
    var line = data.lines && data.lines[n] ? " · line " + data.lines[n] : "";
    $("event-at").textContent = "#" + n + " " + events[n].type + line;

    var changed = {};
    var removed = [];
    (opsAt[n] || []).forEach(function (op) {
      if (op.op === "remove") removed.push(op.path || "/");
      else changed[op.path] = true;
    });
    $("state-view").innerHTML = renderJSON(stateAt(n), "", changed, "");
    $("state-view").setAttribute("data-event", String(n));
    $("state-removed").innerHTML = removed.map(function (p) {
      return '<div class="rm" title="removed by this event">' + esc(p) + "</div>";
    }).join("");
    var first = $("state-view").querySelector(".chg");
    if (first && first.scrollIntoView) first.scrollIntoView({ block: "nearest" });
    $("event-view").textContent = JSON.stringify(events[n], null, 2);
    $("event-problems").innerHTML = (problemsAt[n] || []).map(function (p) {
      return '<div class="problem">⚠ ' + esc(p) + "</div>";
    }).join("");
    renderChat(n);
    var selectRun = $("run-select");
    data.runs.forEach(function (run) { if (run.start <= n && n < run.end) selectRun.value = String(run.start); });
    if (updateHash) {
      try { history.replaceState(null, "", "#event=" + n); } catch (err) { /* file: URLs may refuse */ }
    }
  }
  function fromHash() {
    var match = /(?:^#|&)event=(-?\d+)/.exec(location.hash);
    if (!match) return null;
    var n = Number(match[1]);
    return n < 0 ? total + n : n;
  }

  // --- start ---------------------------------------------------------------------------------
  $("file-name").textContent = data.file;
  $("file-facts").textContent = data.kind + " · " + data.runs.length + " run(s) · " + total +
    " event(s) · agui-replay " + data.version;
  var badge = $("validity");
  var problems = data.errors.length;
  badge.textContent = data.valid && !problems ? "✓ valid stream" : "⚠ " + problems + " problem(s)";
  badge.className = "badge " + (data.valid && !problems ? "ok" : "bad");
  badge.title = data.errors.map(function (p) { return "#" + p[0] + ": " + p[1]; }).join("\n");
  buildTimeline();
  $("prev").addEventListener("click", function () { select(current - 1, true); });
  $("next").addEventListener("click", function () { select(current + 1, true); });
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "INPUT") return;
    var to = { ArrowDown: current + 1, j: current + 1, ArrowUp: current - 1, k: current - 1,
      Home: 0, End: total - 1 }[e.key];
    if (to !== undefined) { e.preventDefault(); select(to, true); }
  });
  window.addEventListener("hashchange", function () {
    var n = fromHash();
    if (n !== null && n !== current) select(n, false);
  });
  var start = fromHash();
  if (start === null) start = data.selected === null || data.selected === undefined ? total - 1 : data.selected;
  if (total === 0) {
    $("state-view").innerHTML = renderJSON(data.initialState, "", {}, "");
    $("chat").innerHTML = '<p class="empty">no events</p>';
  } else {
    select(start, false);
  }
})();
