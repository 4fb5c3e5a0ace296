// The search box's completion: as the user types, the POIs whose name or
// symbol starts with the text, from the console's /search/complete
// endpoint (at most 10, JSON). Arrow keys move through them, Enter opens
// the one selected (or searches the text: the form works without this
// script), Escape closes the list.
"use strict";
(function () {
  const form = document.getElementById("search");
  const input = document.getElementById("search-q");
  const list = document.getElementById("search-suggestions");
  if (!form || !input || !list) return;
  const endpoint = form.getAttribute("action") + "/complete";
  let timer = 0, seq = 0, selected = -1;

  function close() {
    list.hidden = true;
    list.replaceChildren();
    selected = -1;
    input.setAttribute("aria-expanded", "false");
  }

  function select(i) {
    const items = list.querySelectorAll("li");
    items.forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
    selected = i;
  }

  function show(matches) {
    list.replaceChildren();
    for (const m of matches) {
      const li = document.createElement("li");
      li.setAttribute("role", "option");
      const a = document.createElement("a");
      a.href = m.url;
      a.className = "suggestion";
      a.textContent = m.label;
      const loc = document.createElement("span");
      loc.className = "loc";
      loc.textContent = m.location + (m.repository ? " · " + m.repository : "");
      a.appendChild(loc);
      li.appendChild(a);
      list.appendChild(li);
    }
    list.hidden = matches.length === 0;
    input.setAttribute("aria-expanded", String(matches.length > 0));
    selected = -1;
  }

  async function complete() {
    const q = input.value.trim();
    const mine = ++seq;
    if (q === "") { close(); return; }
    try {
      const resp = await fetch(endpoint + "?" + new URLSearchParams({ q: q }), { headers: { Accept: "application/json" } });
      if (!resp.ok) { if (mine === seq) close(); return; }
      const body = await resp.json();
      if (mine === seq) show(body.matches || []);
    } catch (e) {
      if (mine === seq) close();
    }
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(complete, 120);
  });
  input.addEventListener("keydown", (ev) => {
    const n = list.querySelectorAll("li").length;
    if (ev.key === "ArrowDown" && n > 0) { ev.preventDefault(); select((selected + 1) % n); }
    else if (ev.key === "ArrowUp" && n > 0) { ev.preventDefault(); select((selected - 1 + n) % n); }
    else if (ev.key === "Escape") { close(); }
    else if (ev.key === "Enter" && selected >= 0) {
      ev.preventDefault();
      window.location.href = list.querySelectorAll("li a")[selected].href;
    }
  });
  document.addEventListener("click", (ev) => { if (!form.contains(ev.target)) close(); });
})();
