// gatebot's dashboard script: live updates, keys, decisions without a reload.
// Every page works without it; it is the only script the pages may run.
"use strict";
(function () {
  const list = document.getElementById("pending");
  if (!list) return;
  const said = document.getElementById("said");
  let focused = null;

  function items() { return Array.from(list.querySelectorAll("article.item")); }

  function focus(item) {
    if (focused) focused.classList.remove("focused");
    focused = item;
    if (item) {
      item.classList.add("focused");
      item.scrollIntoView({ block: "nearest" });
    }
  }

  function move(step) {
    const all = items();
    if (!all.length) return;
    const at = all.indexOf(focused);
    focus(all[Math.min(all.length - 1, Math.max(0, at < 0 ? 0 : at + step))]);
  }

  function tell(lines, error) {
    said.textContent = lines.join(" ");
    said.classList.toggle("error", !!error);
  }

  // Fetches the list again (after an event or a decision), keeping the focus.
  let pending = null;
  function refresh() {
    if (pending) return;
    pending = setTimeout(async function () {
      pending = null;
      const query = list.dataset.query;
      const r = await fetch("/pending/list" + (query ? "?" + query : ""), { credentials: "same-origin" });
      if (!r.ok) return;
      const keep = focused && focused.dataset.id;
      const ticked = Array.from(list.querySelectorAll('input[name="id"]:checked')).map(function (c) { return c.value; });
      list.innerHTML = await r.text();
      ticked.forEach(function (id) {
        const box = list.querySelector('input[name="id"][value="' + CSS.escape(id) + '"]');
        if (box) box.checked = true;
      });
      const again = keep && list.querySelector('article.item[data-id="' + CSS.escape(keep) + '"]');
      focus(again || null);
      countdown();
      document.body.dataset.refreshed = String(Date.now());
    }, 50);
  }

  // Decisions are sent without leaving the page; the answer is said at the top.
  list.addEventListener("submit", async function (e) {
    const form = e.target.closest("form.decide");
    if (!form) return;
    e.preventDefault();
    const r = await fetch(form.action, {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
    let answer = {};
    try { answer = await r.json(); } catch (_) { answer = { error: "gatebot did not answer." }; }
    if (answer.go) { window.location.assign(answer.go); return; }
    if (answer.error) tell([answer.error], true); else tell(answer.said || [], false);
    refresh();
  });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (e.key === "j") move(1);
    else if (e.key === "k") move(-1);
    else if (e.key === "a" && focused) {
      const f = focused.querySelector('form.decide[data-verb="approve"]');
      if (f) f.requestSubmit();
    } else if (e.key === "e" && focused) {
      const edit = focused.querySelector("p.edit a");
      if (edit) window.location.assign(edit.href);
    } else if (e.key === "x" && focused) {
      const box = focused.querySelector('input[name="id"]');
      if (box) box.checked = !box.checked;
    } else if (e.key === "d" && focused) {
      const f = focused.querySelector('form.decide[data-verb="deny"], form.decide[data-verb="stop"], form.decide[data-verb="decline"]');
      const reason = f && f.querySelector('input[name="reason"]');
      if (reason) { e.preventDefault(); reason.focus(); } else if (f) f.requestSubmit();
    } else return;
  });

  // A time span as gatebot words it everywhere (words::span): "45 s", "3 min", "2 h 5 min".
  function span(ms) {
    const secs = Math.floor(ms / 1000);
    if (secs < 60) return secs + " s";
    const minutes = Math.floor((secs + 30) / 60);
    const days = Math.floor(minutes / 1440), hours = Math.floor(minutes / 60) % 24, mins = minutes % 60;
    if (days === 0 && hours === 0) return mins + " min";
    if (days === 0) return mins === 0 ? hours + " h" : hours + " h " + mins + " min";
    if (days === 1) return (24 + hours) + " h";
    return hours === 0 ? days + " days" : days + " days " + hours + " h";
  }

  function countdown() {
    const now = Date.now();
    list.querySelectorAll(".countdown[data-deadline]").forEach(function (c) {
      const left = Number(c.dataset.deadline) - now;
      c.textContent = left > 0 ? "expires in " + span(left) : "expired";
      c.classList.toggle("soon", left < 5 * 60 * 1000);
    });
  }
  countdown();
  setInterval(countdown, 1000);

  const events = new EventSource("/events");
  events.addEventListener("change", refresh);
  events.addEventListener("open", function () { document.body.dataset.live = "yes"; });
})();
