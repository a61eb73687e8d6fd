// tailor's dashboard: three read-only pages drawn from the manager's JSON
// (/api/overview, /api/workload/NS/NAME, /api/cluster). No framework: the
// pages are tables and uPlot charts, rebuilt on each refresh.
"use strict";

(function () {
  const main = document.getElementById("main");
  const updated = document.getElementById("updated");
  // Exposed for the browser tests: what the last render drew.
  window.tailor = { charts: [], page: "", rendered: 0 };

  // ---- formatting ---------------------------------------------------
  function cores(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    if (Math.abs(v) < 1) return Math.round(v * 1000) + "m";
    return (Math.round(v * 100) / 100).toString();
  }
  function bytes(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const gi = 1024 * 1024 * 1024, mi = 1024 * 1024;
    if (Math.abs(v) >= gi) return (Math.round((v / gi) * 100) / 100) + "Gi";
    return Math.round(v / mi) + "Mi";
  }
  function saved(before, now) {
    if (!before) return "";
    const pct = Math.round(((before - now) / before) * 100);
    return pct === 0 ? "0%" : (pct > 0 ? pct + "% less" : -pct + "% more");
  }
  // money is a monthly amount in the prices' currency.
  function money(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    return v.toFixed(2);
  }
  function costs(before, now) { return money(before) + " → " + money(now); }
  // pricesNote says what the costs are at: the example prices until the
  // manager is given real ones.
  function pricesNote(b) {
    if (!b || !b.default) return "";
    const at = b.default.cpuCoreHour + " a CPU core-hour and " + b.default.memoryGiBHour + " a GiB-hour of requests";
    const nodes = Object.keys(b.nodes || {}).length;
    const own = nodes === 0 ? "" : nodes === 1 ? "; 1 node at its own" : "; " + nodes + " nodes at their own";
    if (b.example) return "At example prices (" + at + own + "), not anyone's real price: give the manager yours with --price-cpu-core-hour and --price-memory-gib-hour (Helm: dashboard.prices).";
    return "At " + at + own + ", a 730-hour month.";
  }
  function when(unix) {
    return new Date(unix * 1000).toLocaleTimeString();
  }

  // ---- DOM helpers ---------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function table(caption, head, rows, foot, testid) {
    const t = el("table", { "data-testid": testid },
      el("caption", {}, caption),
      el("thead", {}, el("tr", {}, head.map(h => el("th", { scope: "col", class: h.num ? "num" : null }, h.label || h)))),
      el("tbody", {}, rows));
    if (foot) t.append(el("tfoot", {}, foot));
    return t;
  }
  function td(v, num, testid) { return el("td", { class: num ? "num" : null, "data-testid": testid }, v); }
  // status says what holds a policy back in words, not only by colour.
  function status(s) {
    if (s.blocked) return el("span", {}, el("span", { class: "status-warn" }, "Blocked: " + s.blocked), el("br"), el("small", {}, s.blockedMessage));
    if (s.ready && s.ready.startsWith("False")) return el("span", {}, el("span", { class: "status-bad" }, s.ready.replace(/^False /, "")), el("br"), el("small", {}, s.readyMessage));
    if (s.ready) return el("span", { class: "status-ok", title: s.readyMessage }, "Ready");
    return el("span", { class: "note" }, "not synced yet");
  }

  async function get(path) {
    const r = await fetch(path, { headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
    return r.json();
  }

  // ---- overview ------------------------------------------------------
  function overview(d) {
    const rows = d.policies.map(p => el("tr", { "data-policy": p.namespace + "/" + p.name },
      el("th", { scope: "row" }, el("a", { href: "/workload/" + encodeURIComponent(p.namespace) + "/" + encodeURIComponent(p.name) }, p.namespace + "/" + p.name)),
      td(p.mode), td(p.target),
      td(p.observed ? p.pods : "–", true, "pods"),
      td(p.observed ? cores(p.cpuBefore) + " → " + cores(p.cpuNow) : "–", true, "cpu"),
      td(p.observed && p.beforeKnown ? saved(p.cpuBefore, p.cpuNow) : "", true),
      td(p.observed ? bytes(p.memoryBefore) + " → " + bytes(p.memoryNow) : "–", true, "memory"),
      td(p.observed && p.beforeKnown ? saved(p.memoryBefore, p.memoryNow) : "", true),
      td(p.observed ? costs(p.costBefore, p.costNow) : "–", true, "cost"),
      td((p.resizesAtLeast ? "≥" : "") + p.resizesHour + " / " + (p.resizesAtLeast ? "≥" : "") + p.resizesDay, true, "resizes"),
      el("td", {}, status(p))));
    const t = d.totals;
    const foot = el("tr", {}, el("td", {}, "All policies"), td(""), td(""), td(t.pods, true),
      td(cores(t.cpuBefore) + " → " + cores(t.cpuNow), true, "total-cpu"), td(saved(t.cpuBefore, t.cpuNow), true),
      td(bytes(t.memoryBefore) + " → " + bytes(t.memoryNow), true, "total-memory"), td(saved(t.memoryBefore, t.memoryNow), true),
      td(costs(t.costBefore, t.costNow), true, "total-cost"),
      td(t.resizesHour + " / " + t.resizesDay, true), td(""));
    return [
      el("h1", {}, "Policies"),
      el("div", { class: "cards" },
        el("div", { class: "card" }, el("div", {}, "CPU requested, before tailor → now"), el("div", { class: "big" }, cores(t.cpuBefore) + " → " + cores(t.cpuNow) + " cores")),
        el("div", { class: "card" }, el("div", {}, "Memory requested, before tailor → now"), el("div", { class: "big" }, bytes(t.memoryBefore) + " → " + bytes(t.memoryNow))),
        el("div", { class: "card", "data-testid": "cost" }, el("div", {}, "Requests' cost a month, before tailor → now"), el("div", { class: "big" }, costs(t.costBefore, t.costNow)),
          el("div", {}, "frees " + money(t.costBefore - t.costNow) + " a month"))),
      el("p", { class: "note", "data-testid": "prices" }, pricesNote(d.prices)),
      d.policies.length === 0 ? el("p", {}, "No TailorPolicy in the cluster yet.") :
        table("Each policy's pods: requests as their workload's template has them (before) and now, and what they cost a month, before → now; resizes sent in the last hour and day.",
          ["Policy", "Mode", "Target", { label: "Pods", num: true }, { label: "CPU before → now", num: true }, { label: "CPU change", num: true },
            { label: "Memory before → now", num: true }, { label: "Memory change", num: true }, { label: "Cost/month", num: true },
            { label: "Resizes 1h / 24h", num: true }, "Status"],
          rows, foot, "policies"),
      (d.namespaces || []).length === 0 ? null :
        table("Per namespace: its policies' pods, their requests before tailor and now, what they cost a month and what that frees.",
          ["Namespace", { label: "Policies", num: true }, { label: "Pods", num: true }, { label: "CPU before → now", num: true },
            { label: "Memory before → now", num: true }, { label: "Cost/month before → now", num: true }, { label: "Freed a month", num: true }],
          d.namespaces.map(n => el("tr", { "data-namespace": n.namespace },
            el("th", { scope: "row" }, n.namespace), td(n.policies, true), td(n.pods, true),
            td(cores(n.cpuBefore) + " → " + cores(n.cpuNow), true), td(bytes(n.memoryBefore) + " → " + bytes(n.memoryNow), true),
            td(costs(n.costBefore, n.costNow), true, "cost"), td(money(n.costBefore - n.costNow), true, "freed"))),
          null, "namespaces"),
    ];
  }

  // ---- workload ------------------------------------------------------
  // Each figure is told apart by its dash as well as its colour.
  const STYLES = {
    usage: { stroke: "#0969da", width: 2 },
    request: { stroke: "#1a7f37", width: 2, dash: [8, 4] },
    limit: { stroke: "#cf222e", width: 2, dash: [2, 3] },
    target: { stroke: "#8250df", width: 2, dash: [10, 3, 2, 3] },
    lower: { stroke: "#9a6700", width: 1, dash: [4, 4], points: { show: false } },
    upper: { stroke: "#9a6700", width: 1, dash: [12, 4], points: { show: false } },
  };
  const RESULT_LETTER = { Done: "D", InProgress: "P", Deferred: "F", Infeasible: "I", Error: "E", Refused: "R", Evicted: "X" };

  // markLabel is a mark's letter: its result, then c when the node's room
  // cut it and r when it restarts a container.
  function markLabel(m) {
    return (RESULT_LETTER[m.result] || "?") + (m.capped ? "c" : "") + (m.restarts ? "r" : "");
  }
  function resultText(m) {
    return m.result + (m.capped ? ", cut to the node's room" : "") + (m.restarts ? ", restarts a container" : "");
  }

  function markPlugin(marks) {
    return {
      hooks: {
        draw: [u => {
          const ctx = u.ctx;
          ctx.save();
          ctx.font = "bold " + Math.round(11 * devicePixelRatio) + "px sans-serif";
          ctx.textAlign = "center";
          for (const m of marks) {
            const x = Math.round(u.valToPos(m.time, "x", true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
            ctx.strokeStyle = m.result === "Done" ? "#57606a" : "#cf222e";
            ctx.setLineDash(m.result === "Done" ? [] : [3, 3]);
            ctx.lineWidth = devicePixelRatio;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.fillStyle = ctx.strokeStyle;
            ctx.fillText(markLabel(m), x, u.bbox.top - 3 * devicePixelRatio);
          }
          ctx.restore();
        }],
      },
    };
  }

  // chart returns the figure for one container's resource, and a function
  // that draws its plot once every figure is in the page (a plot's width is
  // its figure's, which depends on how many share the row).
  function chart(title, s, marks, rec, resource) {
    const cpu = resource === "cpu";
    const fmt = cpu ? cores : bytes;
    const cols = cpu ? ["cpuUsage", "cpuRequest", "cpuLimit", "cpuTarget"] : ["memoryUsage", "memoryRequest", "memoryLimit", "memoryTarget"];
    const names = ["usage (largest pod)", "request", "limit", "target"];
    const data = [s.time];
    const series = [{}];
    cols.forEach((c, i) => {
      if (!s[c].some(v => v !== null)) return; // a figure the container never had (no limit)
      data.push(s[c]);
      series.push(Object.assign({ label: names[i], value: (u, v) => fmt(v), spanGaps: false }, STYLES[["usage", "request", "limit", "target"][i]]));
    });
    const lo = rec && (rec.lowerBound || {})[resource];
    const up = rec && (rec.upperBound || {})[resource];
    for (const [label, q, style] of [["lower bound (now)", lo, STYLES.lower], ["upper bound (now)", up, STYLES.upper]]) {
      if (!q) continue;
      const v = parseQuantity(q, cpu);
      data.push(s.time.map(() => v));
      series.push(Object.assign({ label, value: (u, x) => fmt(x) }, style));
    }
    const fig = el("figure", { class: "chart", "data-container": s.container, "data-resource": resource,
      "data-series": series.length - 1, "data-marks": marks.length, "data-points": s.time.length },
      el("figcaption", {}, title));
    const draw = () => {
      const width = Math.max(300, fig.clientWidth - 16);
      const u = new uPlot({
        width, height: 260, series, plugins: [markPlugin(marks)],
        scales: { x: { time: true } },
        axes: [{}, { values: (u, vals) => vals.map(fmt), size: 70 }],
      }, data, fig);
      window.tailor.charts.push({ container: s.container, resource, series: series.length - 1, marks: marks.length, plot: u });
    };
    return [fig, draw];
  }

  // parseQuantity reads a Kubernetes quantity as cores or bytes.
  function parseQuantity(q, cpu) {
    const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(q);
    if (!m) return null;
    const n = parseFloat(m[1]);
    const mult = { "": 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 }[m[2]];
    return mult === undefined ? null : n * mult;
  }

  function workload(d) {
    const s = d.summary;
    const out = [
      el("h1", {}, "Policy " + s.namespace + "/" + s.name),
      el("p", {}, "Mode ", el("strong", {}, s.mode), s.target ? ", target " + s.target : "", ", ", s.pods, " pods. ", status(s)),
      el("p", { "data-testid": "cost" }, "Requests' cost a month, before tailor → now: ", el("strong", {}, costs(s.costBefore, s.costNow)), ". ",
        el("span", { class: "note" }, pricesNote(d.prices))),
    ];
    const recs = {};
    for (const r of d.recommendations || []) recs[r.containerName] = r;
    const charts = el("div", { class: "charts" });
    out.push(el("h2", {}, "Usage, requests and limits"),
      el("p", { class: "note" }, "Lines: usage solid, request dashed, limit dotted, target dash-dot, bounds thin dashes. Resize marks: D done, P in progress, F deferred, I infeasible, E error, R refused, X evicted; then c when the node's room cut it, r when it restarts a container."),
      charts);
    if (d.series.length === 0) charts.append(el("p", {}, "No figures yet: the manager records a point each sync once it has synced this policy."));
    const marks = d.marks;
    const draws = [];
    for (const se of d.series) {
      for (const [title, resource] of [[se.container + ": CPU (cores)", "cpu"], [se.container + ": memory", "memory"]]) {
        const [fig, draw] = chart(title, se, marks, recs[se.container], resource);
        charts.append(fig);
        draws.push(draw);
      }
    }
    // Plots size themselves to their figures, so they are drawn once the
    // page holds every figure.
    queueMicrotask(() => {
      draws.forEach(draw => draw());
      window.tailor.rendered++;
    });
    out.push(el("h2", {}, "Resizes"),
      marks.length === 0 ? el("p", {}, "No resize since the manager started.") :
        table("Resizes sent by this manager, oldest first, with how each ended.", ["Time", "Pod", "Result", "Change"],
          marks.map(m => el("tr", {}, td(when(m.time)), td(m.pod), td(resultText(m)), td(m.change))), null, "marks"));
    out.push(el("h2", {}, "Recommendation"),
      table("Per container: target, lower and upper bound.", ["Container", "Target", "Lower bound", "Upper bound"],
        (d.recommendations || []).map(r => el("tr", {}, td(r.containerName),
          td(fmtList(r.target)), td(fmtList(r.lowerBound)), td(fmtList(r.upperBound)))), null, "recommendation"));
    if ((d.nodeClasses || []).length > 0) {
      out.push(el("p", { class: "note" }, "Sized per class of node: each pod is resized to its node's class's target; the recommendation above is the largest of them."),
        table("Per class of node: its pods, and each container's target.", ["Class", { label: "Pods", num: true }, "Container", "Target"],
          d.nodeClasses.flatMap(c => (c.containerRecommendations || []).map(r => el("tr", {}, td(c.class), td(String(c.pods || 0), true),
            td(r.containerName), td(fmtList(r.target))))), null, "node-classes"));
    }
    out.push(el("h2", {}, "Pods"),
      table("Requests now and before tailor (the template's), what they cost a month at the pod's node's prices, and each pod's last resize.",
        ["Pod", "Node", { label: "CPU before → now", num: true }, { label: "Memory before → now", num: true }, { label: "Cost/month before → now", num: true }, "Last resize", "Result"],
        d.pods.map(p => el("tr", {}, td(p.name), td(p.node), td(cores(p.cpuBefore) + " → " + cores(p.cpuRequest), true),
          td(bytes(p.memoryBefore) + " → " + bytes(p.memoryRequest), true), td(costs(p.costBefore, p.costNow), true),
          td(p.lastResize || ""), td(p.result ? p.result + (p.message ? ": " + p.message : "") : ""))),
        null, "pods"));
    out.push(el("h2", {}, "Conditions"),
      table("The policy's status conditions.", ["Type", "Status", "Reason", "Message"],
        (d.conditions || []).map(c => el("tr", {}, td(c.type), td(c.status), td(c.reason), td(c.message))), null, "conditions"));
    out.push(el("h2", {}, "Recent events"),
      d.eventsError ? el("p", { class: "status-bad" }, "Events could not be read: " + d.eventsError) : null,
      table("Events of the policy and of the resizes it made, newest first.", ["Time", "Type", "Reason", "Object", "Note"],
        d.events.map(e => el("tr", {}, td(new Date(e.time).toLocaleString()), td(e.type), td(e.reason), td(e.object), td(e.note + (e.count > 1 ? " (×" + e.count + ")" : "")))),
        null, "events"));
    return out;
  }
  function fmtList(l) {
    if (!l) return "";
    return Object.entries(l).map(([k, v]) => k + " " + v).join(", ");
  }

  // ---- cluster -------------------------------------------------------
  function cluster(d) {
    const rows = d.nodes.map(n => el("tr", { "data-node": n.name },
      el("th", { scope: "row" }, n.name),
      td(n.pods + " (" + n.managed + " by tailor)", true),
      td(cores(n.cpuAllocatable), true),
      td(cores(n.cpuBefore) + " → " + cores(n.cpuRequested), true, "cpu"),
      el("td", {}, el("meter", { min: 0, max: n.cpuAllocatable, value: n.cpuRequested, "aria-label": "CPU requested now of allocatable" })),
      td(bytes(n.memoryAllocatable), true),
      td(bytes(n.memoryBefore) + " → " + bytes(n.memoryRequested), true, "memory"),
      el("td", {}, el("meter", { min: 0, max: n.memoryAllocatable, value: n.memoryRequested, "aria-label": "Memory requested now of allocatable" }))));
    return [
      el("h1", {}, "Nodes"),
      el("p", { "data-testid": "freed" }, "tailor's changes free " + (Math.round(d.cpuNodesFreed * 100) / 100) + " nodes' worth of CPU and " +
        (Math.round(d.memoryNodesFreed * 100) / 100) + " of memory (at the mean node's allocatable; negative where it asks for more)."),
      table("Per node: allocatable, and what its pods request before tailor (each managed pod at its template's requests) and now.",
        ["Node", { label: "Pods", num: true }, { label: "CPU allocatable", num: true }, { label: "CPU requested before → now", num: true }, "Now / allocatable",
          { label: "Memory allocatable", num: true }, { label: "Memory requested before → now", num: true }, "Now / allocatable"],
        rows, null, "nodes"),
    ];
  }

  // ---- routing -------------------------------------------------------
  async function render() {
    const path = location.pathname;
    let page, api;
    const m = /^\/workload\/([^/]+)\/([^/]+)$/.exec(path);
    if (m) { page = "workload"; api = "/api/workload/" + m[1] + "/" + m[2]; }
    else if (path === "/cluster") { page = "cluster"; api = "/api/cluster"; }
    else { page = "overview"; api = "/api/overview"; }
    for (const a of document.querySelectorAll("nav a")) {
      if (a.dataset.page === page) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    try {
      const d = await get(api);
      for (const c of window.tailor.charts) c.plot.destroy();
      window.tailor.charts = [];
      window.tailor.page = page;
      main.replaceChildren(...({ overview, workload, cluster })[page](d).filter(x => x !== null && x !== undefined));
      document.title = "tailor – " + (main.querySelector("h1") || {}).textContent;
      if (page !== "workload") window.tailor.rendered++;
      updated.textContent = "Updated " + new Date().toLocaleTimeString();
    } catch (e) {
      main.replaceChildren(el("p", { class: "status-bad", role: "alert" }, String(e.message || e)));
    }
  }
  document.getElementById("refresh").addEventListener("click", render);
  render();
  setInterval(render, 15000);
})();
