// The shell: who is signed in, the hash router, the navigation, the theme.
//
// Routes are "#/name/…"; each screen is a module exporting render(main, ctx) where
// ctx = {session, params, query, signal, navigate, refreshSession}. `signal` aborts when the
// user leaves the screen (screens stop their streams and timers on it).

import { api, ApiError, setUnauthorizedHandler } from "./api.js";
import { h, replace, toast } from "./dom.js";

const ROUTES = [
  { pattern: /^\/signin$/, screen: "signin", title: "Sign in", public: true },
  { pattern: /^\/datasets$/, screen: "datasets", title: "Datasets", nav: "Datasets" },
  { pattern: /^\/datasets\/([^/]+)$/, screen: "dataset", title: "Dataset", names: ["id"] },
  { pattern: /^\/datasets\/([^/]+)\/files\/([^/]+)$/, screen: "chunks", title: "Chunks", names: ["id", "fileId"] },
  { pattern: /^\/jobs$/, screen: "jobs", title: "Jobs", nav: "Jobs" },
  { pattern: /^\/jobs\/([^/]+)$/, screen: "jobs", title: "Job", names: ["jobId"] },
  { pattern: /^\/sandbox$/, screen: "sandbox", title: "Retrieval sandbox", nav: "Sandbox" },
  { pattern: /^\/chat$/, screen: "chat", title: "Chat", nav: "Chat" },
  { pattern: /^\/keys$/, screen: "keys", title: "Keys", nav: "Keys", admin: true },
  { pattern: /^\/audit$/, screen: "audit", title: "Audit trail", nav: "Audit", admin: true },
  { pattern: /^\/system$/, screen: "system", title: "System", nav: "System" },
];

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
let session = null;
let current = null; // {controller}

const HOME = "/datasets";

function parseHash() {
  const raw = location.hash.replace(/^#/, "");
  const [given, search = ""] = raw.split("?");
  // "/ui/", "/ui/#" and "/ui/#/" are the home screen
  const path = given === "" || given === "/" ? HOME : given;
  return { path, query: new URLSearchParams(search) };
}

export function navigate(path) {
  if (location.hash === `#${path}`) route();
  else location.hash = path;
}

async function loadSession() {
  try {
    session = await api("GET", "/ui/session", { allow401: true });
  } catch (err) {
    session = null;
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
  }
  drawChrome();
  return session;
}

function drawChrome() {
  replace(nav);
  replace(who);
  nav.hidden = !session;
  document.querySelector(".menu-toggle").hidden = !session;
  if (!session) return;
  const list = h("ul");
  for (const r of ROUTES) {
    if (!r.nav || (r.admin && !session.can_admin)) continue;
    const path = `/${r.screen}`;
    list.append(h("li", {}, h("a", { href: `#${path}`, "data-nav": r.screen }, r.nav)));
  }
  nav.append(list);
  const label = session.service
    ? session.open
      ? "open service, no key"
      : "service key"
    : `${session.tenant_name || session.tenant_id} · ${session.role}`;
  who.append(h("span", { class: "who-label" }, label));
  if (!session.open) {
    who.append(
      h(
        "button",
        {
          type: "button",
          class: "link",
          onclick: async () => {
            await api("DELETE", "/ui/session");
            session = null;
            drawChrome();
            navigate("/signin");
          },
        },
        "Sign out",
      ),
    );
  }
  markNav();
}

function markNav() {
  const { path } = parseHash();
  const top = path.split("/")[1];
  for (const a of nav.querySelectorAll("a")) {
    if (a.dataset.nav === top) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

async function route() {
  if (current) current.controller.abort();
  const controller = new AbortController();
  current = { controller };
  const { path, query } = parseHash();
  if (location.hash === "#/") history.replaceState(null, "", `#${HOME}`);
  const match = ROUTES.map((r) => ({ r, m: r.pattern.exec(path) })).find((x) => x.m);
  if (!match) {
    replace(main, h("h1", {}, "Not found"), h("p", {}, "No such page. "), h("a", { href: `#${HOME}` }, "Go to datasets"));
    return;
  }
  const { r, m } = match;
  if (!r.public && !session) {
    navigate("/signin");
    return;
  }
  if (r.public && session && r.screen === "signin") {
    navigate("/datasets");
    return;
  }
  const params = {};
  (r.names || []).forEach((name, i) => {
    params[name] = decodeURIComponent(m[i + 1]);
  });
  document.title = `${r.title} · ragd`;
  markNav();
  nav.classList.remove("open");
  document.querySelector(".menu-toggle").setAttribute("aria-expanded", "false");
  replace(main, h("p", { class: "loading" }, "Loading…"));
  try {
    const module = await import(`./screens/${r.screen}.js`);
    if (controller.signal.aborted) return;
    replace(main);
    await module.render(main, { session, params, query, signal: controller.signal, navigate, refreshSession: loadSession });
    if (!controller.signal.aborted) {
      const heading = main.querySelector("h1");
      if (heading) {
        heading.setAttribute("tabindex", "-1");
        // a new screen takes focus (screen readers announce it), unless the user is busy in one
        const active = document.activeElement;
        if (!active || active === document.body || nav.contains(active) || !main.contains(active)) heading.focus({ preventScroll: true });
      }
    }
  } catch (err) {
    if (controller.signal.aborted || (err && err.name === "AbortError")) return;
    const message = err instanceof ApiError ? err.describe() : String(err && err.message ? err.message : err);
    replace(main, h("h1", {}, r.title), h("p", { class: "error", role: "alert" }, message));
  }
}

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function setupTheme() {
  // the choice is not a secret: kept in localStorage; default follows the system
  let saved = null;
  try {
    saved = localStorage.getItem("ragd-theme");
  } catch {
    saved = null;
  }
  applyTheme(saved);
  const button = document.getElementById("theme");
  const label = () => {
    const dark = (document.documentElement.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light")) === "dark";
    button.textContent = dark ? "Light mode" : "Dark mode";
    button.setAttribute("aria-pressed", String(dark));
  };
  button.addEventListener("click", () => {
    const dark = (document.documentElement.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light")) === "dark";
    const next = dark ? "light" : "dark";
    applyTheme(next);
    try {
      localStorage.setItem("ragd-theme", next);
    } catch {
      // private mode: the choice lasts this page
    }
    label();
  });
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", label);
  label();
}

function setupMenu() {
  const toggle = document.querySelector(".menu-toggle");
  toggle.addEventListener("click", () => {
    const open = !nav.classList.contains("open");
    nav.classList.toggle("open", open);
    toggle.setAttribute("aria-expanded", String(open));
  });
}

setUnauthorizedHandler(() => {
  if (!session) return;
  session = null;
  drawChrome();
  toast("Your key is no longer valid: sign in again.", "error");
  navigate("/signin");
});

setupTheme();
setupMenu();
window.addEventListener("hashchange", route);
loadSession()
  .then(route)
  .catch((err) => replace(main, h("h1", {}, "ragd"), h("p", { class: "error", role: "alert" }, `The server did not answer: ${err.message}`)));
