// Hermes dashboard: live updates over server-sent events (the server
// pushes the id of each session that changed; the page then fetches the
// server-rendered fragment it shows) and picking a fork point from the
// timeline. No framework, no build step.
(function () {
  "use strict";
  var body = document.body;
  var prefix = body.getAttribute("data-prefix") || "/dashboard";
  var live = body.getAttribute("data-live");

  // Fetch a fragment and swap it in; a fetch already running makes the
  // next one wait so bursts collapse into one request.
  function swapper(url, target) {
    var running = false, again = false;
    function run() {
      if (running) { again = true; return; }
      running = true;
      fetch(url(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
        .then(function (html) {
          var el = target();
          if (el) { el.innerHTML = html; el.dispatchEvent(new CustomEvent("swapped", { bubbles: true })); }
        })
        .catch(function () {})
        .then(function () { running = false; if (again) { again = false; run(); } });
    }
    return run;
  }

  function setState(text) {
    var s = document.getElementById("live-state");
    if (s) s.textContent = text;
  }

  if (live && window.EventSource) {
    var refresh;
    if (live === "list") {
      refresh = swapper(function () {
        var q = document.getElementById("rows").getAttribute("data-query");
        return prefix + "/rows" + (q ? "?" + q : "");
      }, function () { return document.getElementById("rows"); });
    } else {
      refresh = swapper(function () {
        return prefix + "/s/" + encodeURIComponent(live) + "?part=main";
      }, function () { return document.getElementById("live-main"); });
    }
    var es = new EventSource(prefix + "/live");
    // On each (re)connect, fetch once: what changed between the page's
    // render and the stream's start (a new chat's answer) is not missed.
    es.addEventListener("open", function () { setState("Live updates on."); refresh(); body.setAttribute("data-live-ready", "1"); });
    es.addEventListener("error", function () { setState("Live updates reconnecting…"); });
    es.addEventListener("session", function (e) {
      if (live === "list" || e.data === live) refresh();
    });
  }

  // Choosing a bar (click, or Enter on a focused bar) sets the fork point.
  document.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("[data-rev]") : null;
    var input = document.getElementById("fork-at");
    if (!a || !input) return;
    input.value = a.getAttribute("data-rev");
    var msg = document.getElementById("msg-" + input.value);
    document.querySelectorAll(".selected").forEach(function (el) { el.classList.remove("selected"); });
    a.classList.add("selected");
    if (msg) msg.classList.add("selected");
  });
})();
