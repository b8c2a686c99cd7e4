// The dashboard page: reads /api/releases (the dashboard server asks the broker), renders a table,
// filters and sorts it in place. Everything from the answer goes in through textContent or an
// attribute, never as markup; links only for http(s) addresses. No dependencies, no build step.
"use strict";

(() => {
  const AUTO_REFRESH_MS = 60_000;
  const byId = (id) => document.getElementById(id);
  const el = {
    status: byId("status"),
    error: byId("error"),
    errorSentence: byId("error-sentence"),
    errorCode: byId("error-code"),
    truncated: byId("truncated"),
    search: byId("search"),
    hideEmpty: byId("hide-empty"),
    refresh: byId("refresh"),
    autoRefresh: byId("auto-refresh"),
    table: byId("releases"),
    tbody: document.querySelector("#releases tbody"),
    noMatch: byId("no-match"),
    sortButtons: document.querySelectorAll("thead button[data-sort]"),
  };
  const state = { answer: null, rows: [], sort: { key: "date", dir: "desc" }, timer: 0, loading: false };

  const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
  const UNITS = [["year", 365 * 864e5], ["month", 30 * 864e5], ["week", 7 * 864e5], ["day", 864e5], ["hour", 36e5], ["minute", 6e4]];

  function relativeTime(ms, now) {
    const diff = ms - now;
    if (Math.abs(diff) < 45_000) return "just now";
    for (const [unit, size] of UNITS) if (Math.abs(diff) >= size) return relative.format(Math.round(diff / size), unit);
    return relative.format(Math.round(diff / 6e4), "minute");
  }

  /** 2026-01-02 03:04:05 UTC */
  function exactTime(ms) {
    return new Date(ms).toISOString().replace("T", " ").replace(/\.\d{3}Z$/, " UTC");
  }

  function timeElement(iso, now) {
    const node = document.createElement("time");
    const ms = Date.parse(iso);
    node.dateTime = iso;
    if (Number.isNaN(ms)) {
      node.textContent = iso;
      return node;
    }
    node.textContent = relativeTime(ms, now);
    node.title = exactTime(ms);
    return node;
  }

  function isHttpUrl(value) {
    try {
      const url = new URL(value);
      return url.protocol === "https:" || url.protocol === "http:";
    } catch {
      return false;
    }
  }

  function cell(tag, className) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    return node;
  }

  function badge(kind, text) {
    const node = cell("span", `badge ${kind}`);
    node.textContent = text;
    return node;
  }

  /** One table row per repository, built once per answer; filtering and sorting only move rows. */
  function buildRow(entry, now) {
    const latest = entry.latest;
    const tr = document.createElement("tr");
    const repo = cell("th");
    repo.scope = "row";
    repo.textContent = entry.repo;
    const tag = cell("td", "tag");
    const name = cell("td", "name");
    const published = cell("td", "published");
    const marks = cell("td", "marks");
    if (!latest) {
      tr.className = "no-release";
      tag.textContent = "—";
      published.textContent = "—";
      marks.append(badge("none", "no release"));
    } else {
      if (isHttpUrl(latest.url)) {
        const link = document.createElement("a");
        link.href = latest.url;
        link.rel = "noopener noreferrer";
        link.textContent = latest.tag;
        link.title = `Release ${latest.tag} of ${entry.repo}`;
        tag.append(link);
      } else {
        tag.textContent = latest.tag;
      }
      name.textContent = latest.name;
      if (latest.published_at) published.append(timeElement(latest.published_at, now));
      else published.textContent = "unpublished";
      if (latest.draft) marks.append(badge("draft", "draft"));
      if (latest.prerelease) marks.append(badge("prerelease", "prerelease"));
    }
    tr.append(repo, tag, name, published, marks);
    const time = latest && latest.published_at ? Date.parse(latest.published_at) : NaN;
    return {
      tr,
      repo: entry.repo,
      hasRelease: Boolean(latest),
      // Published first, then drafts (no date yet), then repositories without a release.
      rank: latest ? (Number.isNaN(time) ? 1 : 0) : 2,
      time: Number.isNaN(time) ? 0 : time,
      haystack: `${entry.repo}\n${latest ? latest.tag : ""}`.toLowerCase(),
    };
  }

  function compare(a, b) {
    const { key, dir } = state.sort;
    const sign = dir === "asc" ? 1 : -1;
    const byRepo = a.repo < b.repo ? -1 : a.repo > b.repo ? 1 : 0;
    if (key === "repo") return sign * byRepo;
    return a.rank - b.rank || sign * (a.time - b.time) || byRepo;
  }

  function render() {
    performance.mark("tokensmith:render:start");
    const query = el.search.value.trim().toLowerCase();
    const hideEmpty = el.hideEmpty.checked;
    const visible = state.rows.filter((row) => (!hideEmpty || row.hasRelease) && (!query || row.haystack.includes(query)));
    visible.sort(compare);
    const fragment = document.createDocumentFragment();
    for (const row of visible) fragment.append(row.tr);
    el.tbody.replaceChildren(fragment);
    el.noMatch.hidden = visible.length > 0 || state.rows.length === 0;
    for (const button of el.sortButtons) {
      const th = button.closest("th");
      th.setAttribute("aria-sort", button.dataset.sort === state.sort.key ? (state.sort.dir === "asc" ? "ascending" : "descending") : "none");
    }
    renderStatus(visible.length);
    performance.measure("tokensmith:render", "tokensmith:render:start");
  }

  function renderStatus(shown) {
    const answer = state.answer;
    if (!answer) return;
    const total = answer.repos.length;
    const parts = [];
    const count = `${total} ${total === 1 ? "repository" : "repositories"}`;
    parts.push(shown === total ? count : `${shown} of ${count} shown`);
    const line = document.createDocumentFragment();
    line.append(`${parts.join("")} · generated `, timeElement(answer.generated_at, Date.now()));
    line.append(answer.cached ? " · from the broker's cache" : " · fresh crawl");
    // Past its lifetime, served while the broker refreshes it or waits out a rate limit.
    if (answer.stale === true) line.append(" · stale: the broker is refreshing it or waiting out GitHub's rate limit");
    el.status.replaceChildren(line);
  }

  function showError(body, status) {
    const sentence = body && typeof body.sentence === "string" ? body.sentence : `The dashboard answered HTTP ${status} without an explanation.`;
    el.errorSentence.textContent = sentence;
    el.errorCode.textContent = body && typeof body.error === "string" ? `HTTP ${status} · ${body.error}` : `HTTP ${status}`;
    el.error.hidden = false;
    if (!state.answer) el.status.textContent = "No releases to show.";
  }

  async function load() {
    if (state.loading) return;
    state.loading = true;
    el.refresh.disabled = true;
    el.table.setAttribute("aria-busy", "true");
    try {
      let response;
      try {
        response = await fetch("/api/releases", { cache: "no-store", headers: { accept: "application/json" } });
      } catch {
        showError({ error: "dashboard_unreachable", sentence: "The dashboard server did not answer. Is `tokensmith dashboard` still running?" }, 0);
        return;
      }
      let body = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      if (!response.ok || !body || !Array.isArray(body.repos)) {
        showError(body, response.status);
        return;
      }
      // Measured (performance.measure, read by `npm run bench -- dashboard`): rows built and shown.
      performance.mark("tokensmith:show:start");
      el.error.hidden = true;
      state.answer = body;
      const now = Date.now();
      state.rows = body.repos.map((entry) => buildRow(entry, now));
      el.truncated.hidden = !body.truncated;
      render();
      performance.measure("tokensmith:show", "tokensmith:show:start");
    } finally {
      state.loading = false;
      el.refresh.disabled = false;
      el.table.removeAttribute("aria-busy");
    }
  }

  el.search.addEventListener("input", render);
  el.hideEmpty.addEventListener("change", render);
  el.refresh.addEventListener("click", () => {
    load();
  });
  el.autoRefresh.addEventListener("change", () => {
    clearInterval(state.timer);
    if (el.autoRefresh.checked) state.timer = setInterval(load, AUTO_REFRESH_MS);
  });
  for (const button of el.sortButtons) {
    button.addEventListener("click", () => {
      const key = button.dataset.sort;
      // A new column starts in its natural order: names A→Z, dates newest first.
      if (state.sort.key === key) state.sort.dir = state.sort.dir === "asc" ? "desc" : "asc";
      else state.sort = { key, dir: key === "repo" ? "asc" : "desc" };
      render();
    });
  }
  // "/" jumps to the search box, as on GitHub; Escape clears it.
  document.addEventListener("keydown", (event) => {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement;
    if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      el.search.focus();
    } else if (event.key === "Escape" && event.target === el.search && el.search.value) {
      el.search.value = "";
      render();
    }
  });

  load();
})();
