// The Files tab: every file with its status (and its job item's stage while in progress), chunks,
// size, error code and hint; enable/disable, re-index, delete; live while jobs run.

import { api, ApiError, stream } from "../api.js";
import { chunkHref } from "../capabilities.js";
import { badge, confirmDialog, dataTable, field, fmtBytes, fmtNumber, fmtTime, h, toast } from "../dom.js";
import { errorHelp, isFinished, splitHint } from "./jobs.js";

const IN_PROGRESS = new Set(["queued", "indexing"]);

function describe(err) {
  return err instanceof ApiError ? err.describe() : String((err && err.message) || err);
}

function errorCell(f) {
  if (!f.error) return "–";
  const [message] = splitHint(f.error.message || ""); // its hint once, long ones behind "More"
  return h(
    "div",
    { class: "file-error" },
    h("code", { class: "error-code" }, f.error.code),
    message ? h("span", { class: "error-message" }, message) : null,
    errorHelp(f.error).hint,
  );
}

export function filesPanel(ctx, dataset, { onChange }) {
  const { session, signal } = ctx;
  const id = dataset.id;
  const base = `/api/v1/datasets/${encodeURIComponent(id)}`;
  const writer = session.can_write;
  const active = new Set(); // this dataset's jobs still queued or running
  let stages = {}; // file id → its item's stage in an active job
  let shownState = "";
  let timer = null;
  let files = [];

  const statusCell = (f) => {
    const stage = IN_PROGRESS.has(f.status) ? stages[f.id] : null;
    return h("span", { class: "status-cell" }, badge(f.status), stage && stage !== f.status ? h("small", { class: "stage" }, stage) : null);
  };

  const toggle = (f) => {
    if (f.status === "failed" && !f.chunks) {
      // nothing of it was indexed: it is not in search, whatever its switch says
      return h("span", { class: "muted not-in-search", title: "This file failed: none of it is searchable. Fix it and re-index or upload it again." }, "not in search");
    }
    if (!writer) return f.enabled ? "yes" : "no";
    const box = h("input", { type: "checkbox", checked: f.enabled, "aria-label": `In search: ${f.name}` });
    box.addEventListener("change", async () => {
      box.disabled = true;
      try {
        const updated = await api("PATCH", `${base}/files/${encodeURIComponent(f.id)}`, { json: { enabled: box.checked } });
        f.enabled = updated.enabled;
        toast(`“${f.name}” ${updated.enabled ? "is back in search" : "is out of search"}.`, "ok");
      } catch (err) {
        box.checked = f.enabled;
        toast(describe(err), "error");
      } finally {
        box.disabled = false;
      }
    });
    return h("label", { class: "switch" }, box, h("span", { "aria-hidden": "true" }, "In search"));
  };

  const reindex = async (f) => {
    try {
      const { job } = await api("POST", f ? `${base}/files/${encodeURIComponent(f.id)}/reindex` : `${base}/reindex`);
      active.add(job.id);
      toast(f ? `Re-indexing “${f.name}”.` : `Re-indexing ${fmtNumber(job.total)} files.`, "ok");
      schedule(200);
    } catch (err) {
      toast(describe(err), "error");
    }
  };

  const remove = async (f) => {
    if (!(await confirmDialog(`Delete “${f.name}” and its ${fmtNumber(f.chunks)} chunks?`))) return;
    try {
      await api("DELETE", `${base}/files/${encodeURIComponent(f.id)}`);
      toast(`Deleted “${f.name}”.`, "ok");
    } catch (err) {
      toast(describe(err), "error");
    }
    refresh();
  };

  const columns = [
    {
      key: "name",
      label: "Name",
      render: (f) => h("a", { href: chunkHref(id, f.id), class: "file-link" }, f.name),
      sort: (f) => f.name.toLowerCase(),
    },
    { key: "status", label: "Status", render: statusCell },
    { key: "chunks", label: "Chunks", render: (f) => fmtNumber(f.chunks) },
    { key: "size", label: "Size", render: (f) => fmtBytes(f.size) },
    { key: "updated_at", label: "Updated", render: (f) => fmtTime(f.updated_at, { relative: true }) },
    { key: "error", label: "Error", render: errorCell, sort: (f) => (f.error ? f.error.code : "") },
    { key: "enabled", label: "Enabled", render: toggle },
    writer
      ? {
          key: "actions",
          label: "Actions",
          sortable: false,
          render: (f) =>
            h(
              "div",
              { class: "row-actions" },
              h("button", { type: "button", class: "small", "aria-label": `Re-index ${f.name}`, onclick: () => reindex(f) }, "Re-index"),
              h("button", { type: "button", class: "small danger", "aria-label": `Delete ${f.name}`, onclick: () => remove(f) }, "Delete"),
            ),
        }
      : null,
  ].filter(Boolean);

  const table = dataTable(columns, [], { caption: "Files", empty: "No files yet: upload some, or add a source." });
  table.classList.add("files-table");
  const filter = h("input", { type: "search", name: "file-filter", autocomplete: "off", placeholder: "Name, status, error code…" });
  filter.addEventListener("input", () => table.setFilter(filter.value.trim()));
  const status = h("p", { class: "muted count", role: "status", "aria-live": "polite" });
  const el = h(
    "div",
    { class: "files-panel" },
    h(
      "div",
      { class: "toolbar" },
      h("div", { class: "grow" }, field("Filter files", filter)),
      status,
      writer ? h("button", { type: "button", onclick: () => reindex(null) }, "Re-index all") : null,
    ),
    h("div", { class: "table-wrap" }, table),
  );

  async function readStages() {
    const next = {};
    for (const jobId of [...active]) {
      try {
        const job = await api("GET", `/api/v1/jobs/${encodeURIComponent(jobId)}`, { signal });
        if (isFinished(job)) active.delete(jobId);
        for (const item of job.items || []) if (item.file_id) next[item.file_id] = item.stage;
      } catch {
        active.delete(jobId);
      }
    }
    stages = next;
  }

  async function refresh() {
    if (signal.aborted) return;
    try {
      const [listed] = await Promise.all([api("GET", `${base}/files`, { signal }), readStages()]);
      files = listed.files || [];
    } catch (err) {
      if (signal.aborted) return;
      status.textContent = describe(err);
      return;
    }
    const state = JSON.stringify([files, stages]);
    if (state !== shownState) {
      const countsChanged = shownState !== "";
      shownState = state;
      table.setRows(files);
      if (countsChanged && onChange) onChange();
    }
    const busy = files.filter((f) => IN_PROGRESS.has(f.status)).length;
    const failed = files.filter((f) => f.status === "failed").length;
    status.textContent = [
      `${fmtNumber(files.length)} ${files.length === 1 ? "file" : "files"}`,
      busy ? `${fmtNumber(busy)} in progress` : null,
      failed ? `${fmtNumber(failed)} failed` : null,
    ]
      .filter(Boolean)
      .join(" · ");
    if (busy) schedule(2000); // the event stream says sooner; this is the safety net
  }

  function schedule(ms = 600) {
    if (timer || signal.aborted) return;
    timer = setTimeout(() => {
      timer = null;
      refresh();
    }, ms);
  }
  signal.addEventListener("abort", () => clearTimeout(timer));

  /** Follow this dataset's jobs over SSE until the screen closes; reconnects after a drop. */
  async function live() {
    while (!signal.aborted) {
      try {
        await stream(
          "GET",
          "/api/v1/events",
          ({ event, data }) => {
            if (event !== "job" || !data || data.dataset_id !== id) return;
            if (isFinished(data)) active.delete(data.id);
            else active.add(data.id);
            schedule();
          },
          { signal },
        );
      } catch {
        // dropped: try again shortly
      }
      if (signal.aborted) return;
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  }

  return { el, refresh, live, track: (jobId) => (active.add(jobId), schedule(200)) };
}
