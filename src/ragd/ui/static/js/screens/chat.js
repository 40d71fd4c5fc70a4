// Chat through ragd's own OpenAI-compatible proxy (POST /v1/chat/completions, stream: true).
//
// The model is rag/<the dataset's collection>: ragd retrieves, the upstream LLM answers, and the
// chunk with finish_reason carries rag_sources (and OpenAI annotations). Tokens are shown as they
// arrive, in a live log; [n] markers become buttons that show source n and link to its chunk.

import { ApiError, api, stream } from "../api.js";
import { chunkHref, pageLabel, searchable } from "../capabilities.js";
import { field, h, replace } from "../dom.js";
import { pageButton } from "../page_view.js";

const CHAT = "/v1/chat/completions";
// [1], [1, 2], [1][2] — not [1](url) links nor [^1] footnotes (as ragd reads them, docs/chat.md)
const MARKER = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?!\()/g;

export async function render(main, ctx) {
  const { signal } = ctx;
  // the service key may also chat over collections outside datasets (Open WebUI's, the CLI's)
  const { caps, datasets: readable, collections: raw } = await searchable(ctx);
  replace(main, h("h1", {}, "Chat"));
  const enabled = caps && typeof caps.chat === "boolean" ? caps.chat : await chatRouteAnswers(signal);
  if (!enabled) {
    main.append(notConfigured(ctx.session));
    return;
  }
  const datasets = [
    ...readable.filter((d) => d.collection_name),
    ...raw.map((c) => ({ id: `collection:${c.name}`, name: `${c.name} (collection)`, collection_name: c.name, raw: true })),
  ];
  if (!datasets.length) {
    main.append(h("p", {}, "There is no dataset to chat with yet. ", h("a", { href: "#/datasets" }, "Create one and upload files"), "."));
    return;
  }
  new ChatScreen(main, ctx, datasets, caps).draw();
}

/** Whether the proxy is served: a body it must refuse (422) tells without calling the upstream. */
async function chatRouteAnswers(signal) {
  try {
    await api("POST", CHAT, { json: {}, signal });
    return true;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return err.status !== 404;
  }
}

function notConfigured(session) {
  return h(
    "section",
    { class: "card chat-off", "aria-labelledby": "chat-off-title" },
    h("h2", { id: "chat-off-title" }, "Chat is not enabled on this server"),
    h("p", {}, "ragd answers chat through an OpenAI-compatible LLM (Ollama, vLLM, LiteLLM, OpenAI…). Point it at one and restart ragd:"),
    h("pre", { class: "config" }, "RAGD_LLM__BASE_URL=http://localhost:11434/v1\nRAGD_LLM__MODEL=llama3.1\nRAGD_LLM__API_KEY=…            # when the endpoint needs one\nRAGD_CHAT__ENABLED=true         # the default"),
    h("p", { class: "muted" }, "Then restart ragd (", h("code", {}, "ragd serve"), ")."),
    // a link the user can open: the settings in effect (the service key's System screen), not a file path
    session && session.service
      ? h("p", { class: "muted" }, "The chat's other settings (", h("code", {}, "RAGD_CHAT__…"), ") and their values in effect are on ", h("a", { href: "#/system" }, "the System screen"), ", under “chat”.")
      : h("p", { class: "muted" }, "The chat's other settings (", h("code", {}, "RAGD_CHAT__…"), ") are described in ragd's documentation (chat.md); whoever runs this server sets them."),
  );
}

class ChatScreen {
  constructor(main, ctx, datasets, caps) {
    this.main = main;
    this.ctx = ctx;
    this.datasets = datasets;
    this.caps = caps;
    this.history = []; // [{role, content}] as sent to the proxy
    this.controller = null;
    ctx.signal.addEventListener("abort", () => this.stop());
  }

  draw() {
    const preferred = this.ctx.query.get("dataset");
    this.dataset = h(
      "select",
      { name: "dataset" },
      this.datasets.map((d) => h("option", { value: d.id, selected: d.id === preferred }, d.name)),
    );
    this.topK = h("input", { type: "number", name: "top_k", min: 0, max: 50, step: 1, placeholder: "server default", inputmode: "numeric" });
    this.minScore = h("input", { type: "number", name: "min_score", min: 0, max: 1, step: 0.05, placeholder: "server default", inputmode: "decimal" });
    this.tools = h("input", { type: "checkbox", name: "tools" });
    this.log = h("div", { class: "chat-log", role: "log", "aria-live": "polite", "aria-label": "Conversation", tabindex: "0" });
    this.empty = h("p", { class: "muted chat-empty" }, "Ask a question about the chosen dataset: answers cite their sources as [1], [2]…");
    this.log.append(this.empty);
    this.input = h("textarea", { name: "message", rows: 3, required: true, placeholder: "Ask something… (Enter sends, Shift+Enter for a new line)" });
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.form.requestSubmit();
      }
    });
    this.send = h("button", { type: "submit", class: "primary" }, "Send");
    this.stopButton = h("button", { type: "button", disabled: true, onclick: () => this.stop() }, "Stop");
    const newChat = h("button", { type: "button", onclick: () => this.reset() }, "New chat");
    this.form = h(
      "form",
      { class: "chat-form", "aria-label": "New message" },
      field("Message", this.input),
      h("div", { class: "actions" }, this.send, this.stopButton, newChat),
    );
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.ask();
    });
    const settings = h(
      "details",
      { class: "chat-settings" },
      h("summary", {}, "Retrieval settings"),
      h(
        "div",
        { class: "knob-grid" },
        field("Sources (top k)", this.topK, "0 turns retrieval off"),
        field("Min relevance", this.minScore, "sources below it are not given to the model"),
        h("div", { class: "field" }, h("label", { class: "check" }, this.tools, " Let the model read whole documents"), h("small", { class: "hint" }, "tools: the answer then arrives at once, not token by token")),
      ),
    );
    const model = this.caps && this.caps.chat_model ? h("p", { class: "muted" }, "Answered by ", h("code", {}, String(this.caps.chat_model)), ".") : null;
    this.main.append(
      h("div", { class: "chat-top card" }, field(this.datasets.some((d) => d.raw) ? "Dataset or collection" : "Dataset", this.dataset), settings, model),
      h("section", { class: "chat card", "aria-label": "Chat" }, this.log, this.form),
    );
  }

  reset() {
    this.stop();
    this.history = [];
    replace(this.log, this.empty);
    this.input.focus();
  }

  stop() {
    if (this.controller) this.controller.abort();
  }

  busy(on) {
    this.send.disabled = on;
    this.stopButton.disabled = !on;
    this.dataset.disabled = on;
  }

  body() {
    const chosen = this.datasets.find((d) => d.id === this.dataset.value);
    const body = { model: `rag/${chosen.collection_name}`, messages: this.history, stream: true, rag_enable_tools: this.tools.checked };
    if (this.topK.value !== "") body.rag_top_k = Number(this.topK.value);
    if (this.minScore.value !== "") body.rag_min_score = Number(this.minScore.value);
    return { body, datasetId: chosen.raw ? null : chosen.id };
  }

  async ask() {
    const text = this.input.value.trim();
    if (!text || this.controller) return;
    if (this.empty.isConnected) this.empty.remove();
    this.input.value = "";
    this.history.push({ role: "user", content: text });
    this.log.append(h("div", { class: "msg user" }, h("span", { class: "who" }, "You"), h("p", { class: "msg-text" }, text)));
    const answer = new Answer(this.log);
    const { body, datasetId } = this.body();
    this.controller = new AbortController();
    this.busy(true);
    try {
      await stream("POST", CHAT, (event) => answer.onEvent(event), { json: body, signal: this.controller.signal });
      if (this.controller.signal.aborted) answer.stopped();
    } catch (err) {
      if (this.controller.signal.aborted) answer.stopped();
      else if (err instanceof ApiError && err.status === 404 && !answer.text) answer.fail(err, true);
      else answer.fail(err, false);
    } finally {
      this.controller = null;
      this.busy(false);
    }
    answer.finish(datasetId);
    if (answer.text) this.history.push({ role: "assistant", content: answer.text });
    else this.history.pop(); // nothing came back: the question is not part of the conversation
    if (!this.ctx.signal.aborted) this.input.focus();
  }
}

/** One assistant turn: streamed text, then the text with its citations and the sources. */
class Answer {
  constructor(log) {
    this.text = "";
    this.sources = null;
    this.annotations = null;
    this.textEl = h("p", { class: "msg-text" });
    this.note = h("p", { class: "msg-note muted", hidden: true });
    this.el = h("div", { class: "msg assistant", "aria-busy": "true" }, h("span", { class: "who" }, "Assistant"), this.textEl, this.note);
    this.el.append(h("span", { class: "typing muted" }, "…"));
    log.append(this.el);
    this.log = log;
  }

  onEvent({ data }) {
    if (!data || typeof data !== "object") return; // "[DONE]"
    if (data.error) {
      this.fail(new ApiError(502, data.error.code, data.error.message || "the answer broke off"), false);
      return;
    }
    if (Array.isArray(data.rag_sources)) this.sources = data.rag_sources;
    const choice = data.choices && data.choices[0];
    if (!choice) return;
    const delta = choice.delta || {};
    if (Array.isArray(delta.annotations)) this.annotations = delta.annotations;
    if (typeof delta.content === "string" && delta.content) {
      this.text += delta.content;
      this.textEl.append(delta.content);
      this.log.scrollTop = this.log.scrollHeight;
    }
  }

  stopped() {
    this.say("Stopped.");
  }

  fail(err, off) {
    const message = err instanceof ApiError ? err.describe() : String(err.message || err);
    this.note.classList.add("error");
    this.note.setAttribute("role", "alert");
    this.say(off ? `Chat is not available: ${message}` : message);
  }

  say(message) {
    this.note.hidden = false;
    this.note.textContent = message;
  }

  finish(datasetId) {
    this.el.removeAttribute("aria-busy");
    const typing = this.el.querySelector(".typing");
    if (typing) typing.remove();
    const sources = this.sourceList();
    const byNumber = new Map(sources.map((s) => [Number(s.index), s]));
    const panel = h("div", { class: "source-panel", hidden: true, tabindex: "-1" });
    const show = (n, button) => this.showSource(byNumber.get(n), panel, button, datasetId);
    replace(this.textEl, withCitations(this.text, byNumber, show));
    if (!sources.length) return;
    const list = h(
      "ol",
      { class: "source-list" },
      sources.map((s) =>
        h(
          "li",
          { value: s.index, class: s.cited ? "cited" : null },
          h("button", { type: "button", class: "link", onclick: (e) => show(Number(s.index), e.currentTarget) }, sourceTitle(s)),
          s.cited === false ? h("span", { class: "muted" }, " (not cited)") : null,
        ),
      ),
    );
    this.el.append(panel, h("details", { class: "sources" }, h("summary", {}, `Sources (${sources.length})`), list));
  }

  /** rag_sources; without them, what the annotations say (title and url only). */
  sourceList() {
    if (this.sources) return this.sources;
    if (!this.annotations) return [];
    const seen = new Map();
    for (const a of this.annotations) {
      const cite = a && a.url_citation;
      if (!cite) continue;
      const marker = this.text.slice(cite.start_index, cite.end_index).replace(/[[\]]/g, "");
      const n = Number.parseInt(marker, 10);
      if (Number.isFinite(n) && !seen.has(n)) seen.set(n, { index: n, source: cite.title, url: cite.url, cited: true });
    }
    return [...seen.values()];
  }

  showSource(source, panel, button, datasetId) {
    if (!source) return;
    const same = !panel.hidden && panel.dataset.index === String(source.index);
    for (const b of this.el.querySelectorAll("button.cite[aria-expanded='true']")) b.setAttribute("aria-expanded", "false");
    if (same) {
      panel.hidden = true;
      return;
    }
    panel.dataset.index = String(source.index);
    const fileId = source.file_id;
    const href = fileId && datasetId ? chunkHref(datasetId, fileId, source.chunk_id) : source.url && /^https?:/i.test(source.url) ? source.url : null;
    const where = [pageLabel(source.page), Array.isArray(source.headers) && source.headers.length ? source.headers.join(" › ") : null].filter(Boolean).join(" · ");
    replace(
      panel,
      h("h3", {}, `[${source.index}] `, sourceTitle(source)),
      where ? h("p", { class: "muted" }, where) : null,
      source.snippet ? h("blockquote", { class: "snippet" }, source.snippet) : null,
      h(
        "div",
        { class: "actions" },
        source.page_image ? pageButton(source.page_image, sourceTitle(source)) : null,
        href ? h("a", { href, class: "open-chunk" }, fileId ? "Open the source chunk" : "Open the page") : null,
        h("button", { type: "button", class: "small", onclick: () => (panel.hidden = true) }, "Close"),
      ),
    );
    panel.hidden = false;
    if (button && button.classList.contains("cite")) button.setAttribute("aria-expanded", "true");
    panel.focus({ preventScroll: false });
  }
}

function sourceTitle(s) {
  return s.source || s.path || s.file_id || `source ${s.index}`;
}

/** The answer's text with each [n] of a known source as a button. */
function withCitations(text, byNumber, show) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(MARKER)) {
    const numbers = m[1].split(",").map((x) => Number(x.trim()));
    if (!numbers.some((n) => byNumber.has(n))) continue;
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push("[");
    numbers.forEach((n, i) => {
      if (i) out.push(", ");
      const source = byNumber.get(n);
      if (!source) {
        out.push(String(n));
        return;
      }
      out.push(
        h(
          "button",
          { type: "button", class: "cite", "aria-expanded": "false", "aria-label": `Source ${n}: ${sourceTitle(source)}`, onclick: (e) => show(n, e.currentTarget) },
          String(n),
        ),
      );
    });
    out.push("]");
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

