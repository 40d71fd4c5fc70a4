// The Sources tab: the dataset's folder, web and S3 sources with their last sync and schedule;
// admins add one (a first sync starts at once), sync now (the job's progress shown live), set,
// pause or resume its schedule (docs/knowledge-bases.md#schedules) and remove.

import { api, ApiError } from "../api.js";
import { confirmDialog, dataTable, field, fmtDuration, fmtTime, h, toast } from "../dom.js";
import { followJob, jobSummary } from "./jobs.js";
import { jobWord } from "./status.js";
import { parseRoles as splitList } from "./form.js";

const KINDS = [
  ["folder", "Folder on the server"],
  ["web", "Website (crawl)"],
  ["s3", "S3 bucket"],
];

function describe(err) {
  return err instanceof ApiError ? err.describe() : String((err && err.message) || err);
}

/** A source's config in a line: the path, URL or bucket, and the knobs that were set. */
export function configSummary(s) {
  const c = s.config || {};
  if (s.kind === "folder") return [c.path, c.ignore && c.ignore.length ? `ignore ${c.ignore.join(", ")}` : null];
  if (s.kind === "web") {
    const knobs = [
      c.max_pages ? `≤ ${c.max_pages} pages` : null,
      c.max_depth !== undefined ? `depth ${c.max_depth}` : null,
      c.path_prefix ? `under ${c.path_prefix}` : null,
      c.delay_s !== undefined ? `${c.delay_s} s apart` : null,
      c.render ? "rendered (JavaScript)" : null,
    ].filter(Boolean);
    return [c.url, knobs.join(" · ") || null];
  }
  if (s.kind === "s3") return [`s3://${c.bucket}/${c.prefix || ""}`, null];
  return [JSON.stringify(c), null];
}

/** A source's schedule in a few words: "every 1.0 h", "cron 0 3 * * * (Europe/Berlin)", or null. */
export function scheduleSummary(s) {
  const sc = s.schedule;
  if (!sc) return null;
  if (sc.cron) return `cron ${sc.cron} (${sc.timezone || "UTC"})`;
  return `every ${fmtDuration(sc.interval_s)}`;
}

function scheduleCell(s) {
  const summary = scheduleSummary(s);
  if (!summary) return h("span", { class: "muted" }, "by hand");
  const next = s.paused
    ? h("span", { class: "badge badge-disabled" }, "paused")
    : h("small", {}, `next ${fmtTime(s.next_run_at)}`);
  const last = s.last_run_at ? h("small", { class: "muted" }, `last run ${fmtTime(s.last_run_at, { relative: true })}`) : null;
  return h("div", { class: "source-schedule" }, h("span", { class: "mono" }, summary), next, last);
}

/** The form that sets one source's schedule: an interval in minutes, or cron with a time zone. */
function scheduleForm(onSave, onClear) {
  const how = h("select", { name: "how" }, h("option", { value: "interval" }, "Every … minutes"), h("option", { value: "cron" }, "Cron expression"));
  const minutes = h("input", { type: "number", name: "minutes", min: 1, step: "1", value: "60", inputmode: "numeric" });
  const cron = h("input", { type: "text", name: "cron", autocomplete: "off", placeholder: "0 3 * * *" });
  const zone = h("input", { type: "text", name: "timezone", autocomplete: "off", value: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" });
  const title = h("h3", {}, "Schedule");
  const error = h("p", { class: "error", role: "alert" });
  const intervalRow = h("div", { class: "form-row wrap" }, field("Minutes", minutes, "Between two syncs."));
  const cronRow = h("div", { class: "form-row wrap" }, field("Cron", cron, "minute hour day month weekday"), field("Time zone", zone, "An IANA name: Europe/Berlin."));
  const show = () => {
    intervalRow.hidden = how.value !== "interval";
    cronRow.hidden = how.value !== "cron";
  };
  how.addEventListener("change", show);
  const save = h("button", { type: "submit", class: "primary" }, "Save schedule");
  const clearBtn = h("button", { type: "button" }, "No schedule");
  const cancel = h("button", { type: "button" }, "Cancel");
  const form = h("form", { class: "card schedule-form", hidden: true }, title, field("Runs", how), intervalRow, cronRow, error, h("div", { class: "actions" }, save, clearBtn, cancel));
  let target = null;
  const run = async (work) => {
    error.textContent = "";
    save.disabled = clearBtn.disabled = true;
    try {
      await work(target);
      form.hidden = true;
    } catch (err) {
      error.textContent = describe(err);
    } finally {
      save.disabled = clearBtn.disabled = false;
    }
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const body = how.value === "cron" ? { cron: cron.value.trim(), timezone: zone.value.trim() || "UTC" } : { interval_s: Number(minutes.value) * 60 };
    run((s) => onSave(s, body));
  });
  clearBtn.addEventListener("click", () => run((s) => onClear(s)));
  cancel.addEventListener("click", () => (form.hidden = true));
  const open = (s) => {
    target = s;
    title.textContent = `Schedule of ${configSummary(s)[0]}`;
    const sc = s.schedule || {};
    how.value = sc.cron ? "cron" : "interval";
    if (sc.cron) {
      cron.value = sc.cron;
      zone.value = sc.timezone || "UTC";
    } else if (sc.interval_s) minutes.value = String(Math.max(1, Math.round(sc.interval_s / 60)));
    error.textContent = "";
    show();
    form.hidden = false;
    (how.value === "cron" ? cron : minutes).focus();
  };
  show();
  return { form, open };
}

function kindFields() {
  const text = (name, attrs = {}) => h("input", { type: "text", name, autocomplete: "off", ...attrs });
  const num = (name, attrs = {}) => h("input", { type: "number", name, inputmode: "numeric", ...attrs });
  return {
    folder: {
      controls: { path: text("path", { required: true, placeholder: "/srv/docs" }), ignore: text("ignore", { placeholder: "*.tmp, drafts/" }) },
      labels: { path: ["Folder path", "A folder on the server, watched for changes."], ignore: ["Ignore", "Comma-separated patterns."] },
      read: (c) => ({ path: c.path.value.trim(), ...(c.ignore.value.trim() ? { ignore: splitList(c.ignore.value) } : {}) }),
    },
    web: {
      controls: {
        url: h("input", { type: "url", name: "url", required: true, placeholder: "https://example.com/docs/" }),
        max_pages: num("max_pages", { min: 1, placeholder: "500" }),
        max_depth: num("max_depth", { min: 0, max: 20, placeholder: "3" }),
        path_prefix: text("path_prefix", { placeholder: "/docs/" }),
        delay_s: num("delay_s", { min: 0, max: 60, step: "0.1", placeholder: "0.5" }),
        render: h("input", { type: "checkbox", name: "render" }),
      },
      labels: {
        url: ["Start URL", "Same site only; robots.txt is respected."],
        max_pages: ["Max pages"],
        max_depth: ["Max depth"],
        path_prefix: ["Path prefix", "Default: the start URL's folder."],
        delay_s: ["Delay (s)", "Between two requests."],
        render: ["Render JavaScript", "For sites whose text is written by scripts: each page is loaded in headless Chromium (slower; the server needs ragd[render])."],
      },
      read: (c) => {
        const out = { url: c.url.value.trim() };
        for (const k of ["max_pages", "max_depth", "delay_s"]) if (c[k].value !== "") out[k] = Number(c[k].value);
        if (c.path_prefix.value.trim()) out.path_prefix = c.path_prefix.value.trim();
        if (c.render.checked) out.render = true;
        return out;
      },
    },
    s3: {
      controls: { bucket: text("bucket", { required: true }), prefix: text("prefix", { placeholder: "team/" }) },
      labels: { bucket: ["Bucket", "It must be one the operator allowed."], prefix: ["Prefix"] },
      read: (c) => ({ bucket: c.bucket.value.trim(), ...(c.prefix.value.trim() ? { prefix: c.prefix.value.trim() } : {}) }),
    },
  };
}

export function sourcesPanel(ctx, dataset, { onChange }) {
  const { session, signal } = ctx;
  const base = `/api/v1/datasets/${encodeURIComponent(dataset.id)}/sources`;
  const admin = session.can_admin;
  const progress = h("div", { class: "source-jobs", role: "status", "aria-live": "polite" });
  let loaded = false;

  const watch = (label, job) => {
    const bar = h("progress", { max: 1, "aria-label": `${label}: progress` });
    const text = h("span", {}, `${label}: queued`);
    const line = h("div", { class: "source-job" }, text, bar);
    progress.prepend(line);
    followJob(
      job.id,
      (j) => {
        if (j.total) {
          bar.max = j.total;
          bar.value = (j.done || 0) + (j.failed || 0);
        }
        text.textContent = `${label}: ${jobWord(j.status)} · ${jobSummary(j)}`;
        onChange();
      },
      signal,
    )
      .then(() => refresh())
      .catch(() => {});
  };

  const sync = async (s) => {
    try {
      const { job } = await api("POST", `${base}/${encodeURIComponent(s.id)}/sync`);
      watch(`Sync of ${configSummary(s)[0]}`, job);
    } catch (err) {
      toast(describe(err), "error");
    }
  };

  const enable = async (s) => {
    try {
      await api("POST", `${base}/${encodeURIComponent(s.id)}/enable`);
      toast("Enabled: a grant covers it again.", "ok");
    } catch (err) {
      toast(describe(err), "error");
    }
    refresh();
  };

  const scheduleUrl = (s, verb) => `${base}/${encodeURIComponent(s.id)}/${verb}`;
  const schedule = scheduleForm(
    async (s, body) => {
      await api("PUT", scheduleUrl(s, "schedule"), { json: body });
      toast("Schedule saved.", "ok");
      refresh();
    },
    async (s) => {
      await api("DELETE", scheduleUrl(s, "schedule"));
      toast("Schedule removed: it syncs by hand only.", "ok");
      refresh();
    },
  );
  const pauseOrResume = async (s) => {
    try {
      await api("POST", scheduleUrl(s, s.paused ? "resume" : "pause"));
      toast(s.paused ? "Resumed: it runs from the next slot." : "Paused: the schedule is kept.", "ok");
    } catch (err) {
      toast(describe(err), "error");
    }
    refresh();
  };

  const remove = async (s) => {
    if (!(await confirmDialog(`Remove the source ${configSummary(s)[0]} and the files it brought in?`, { confirm: "Remove" }))) return;
    try {
      const out = await api("DELETE", `${base}/${encodeURIComponent(s.id)}`);
      toast(`Removed, with ${out.files_deleted ?? 0} files.`, "ok");
    } catch (err) {
      toast(describe(err), "error");
    }
    refresh();
    onChange();
  };

  const columns = [
    { key: "kind", label: "Kind", render: (s) => h("span", { class: "badge" }, s.kind) },
    {
      key: "config",
      label: "Config",
      render: (s) => {
        const [main, more] = configSummary(s);
        return h("div", { class: "source-config" }, h("span", { class: "mono" }, main), more ? h("small", { class: "muted" }, more) : null);
      },
      sort: (s) => configSummary(s).join(" "),
    },
    { key: "last_synced_at", label: "Last sync", render: (s) => fmtTime(s.last_synced_at, { relative: true }) },
    { key: "last_error", label: "Last error", render: (s) => (s.last_error ? h("span", { class: "error" }, s.last_error) : "–") },
    { key: "schedule", label: "Schedule", render: scheduleCell, sort: (s) => (s.schedule && !s.paused ? s.next_run_at || 0 : Infinity) },
    {
      // disabled: no grant of the tenant covers it any more (docs/knowledge-bases.md#source-grants)
      key: "disabled",
      label: "State",
      render: (s) =>
        s.disabled
          ? h("div", { class: "source-state" }, h("span", { class: "badge badge-disabled" }, "disabled"), h("small", { class: "error" }, s.disabled_reason || ""))
          : h("span", { class: "badge" }, "live"),
      sort: (s) => (s.disabled ? 1 : 0),
    },
    admin
      ? {
          key: "actions",
          label: "Actions",
          sortable: false,
          render: (s) =>
            h(
              "div",
              { class: "row-actions" },
              s.disabled
                ? h("button", { type: "button", class: "small", "aria-label": `Enable ${configSummary(s)[0]}`, onclick: () => enable(s) }, "Enable")
                : h("button", { type: "button", class: "small", "aria-label": `Sync ${configSummary(s)[0]} now`, onclick: () => sync(s) }, "Sync now"),
              h("button", { type: "button", class: "small", "aria-label": `Schedule ${configSummary(s)[0]}`, onclick: () => schedule.open(s) }, "Schedule"),
              s.schedule
                ? h(
                    "button",
                    { type: "button", class: "small", "aria-label": `${s.paused ? "Resume" : "Pause"} ${configSummary(s)[0]}`, onclick: () => pauseOrResume(s) },
                    s.paused ? "Resume" : "Pause",
                  )
                : null,
              h("button", { type: "button", class: "small danger", "aria-label": `Remove ${configSummary(s)[0]}`, onclick: () => remove(s) }, "Remove"),
            ),
        }
      : null,
  ].filter(Boolean);
  const table = dataTable(columns, [], { caption: "Sources", empty: "No sources: files come only from uploads." });

  async function refresh() {
    try {
      const listed = await api("GET", base, { signal });
      table.setRows(listed.sources || []);
      loaded = true;
    } catch (err) {
      if (!signal.aborted) toast(describe(err), "error");
    }
  }

  const el = h(
    "div",
    { class: "sources-panel" },
    progress,
    h("div", { class: "table-wrap" }, table),
    admin ? schedule.form : null,
    admin ? addForm() : h("p", { class: "muted" }, "Only the tenant's admins add or change sources."),
  );

  function addForm() {
    const kinds = kindFields();
    const kind = h("select", { name: "kind" }, KINDS.map(([v, label]) => h("option", { value: v }, label)));
    const groups = {};
    for (const [key, spec] of Object.entries(kinds)) {
      groups[key] = h(
        "div",
        { class: "form-row wrap", "data-kind": key },
        Object.entries(spec.controls).map(([name, control]) => field(spec.labels[name][0], control, spec.labels[name][1])),
      );
    }
    const error = h("p", { class: "error", role: "alert" });
    const show = () => {
      for (const [key, group] of Object.entries(groups)) {
        group.hidden = key !== kind.value;
        for (const c of group.querySelectorAll("input")) c.disabled = key !== kind.value;
      }
    };
    kind.addEventListener("change", show);
    const submit = h("button", { type: "submit", class: "primary" }, "Add source");
    const form = h("form", { class: "card source-form" }, h("h3", {}, "Add a source"), field("Kind", kind), Object.values(groups), error, h("div", { class: "actions" }, submit));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      error.textContent = "";
      submit.disabled = true;
      try {
        const config = kinds[kind.value].read(kinds[kind.value].controls);
        const { source, job } = await api("POST", base, { json: { kind: kind.value, config } });
        form.reset();
        show();
        toast("Source added: its first sync has started.", "ok");
        await refresh();
        watch(`First sync of ${configSummary(source)[0]}`, job);
      } catch (err) {
        error.textContent = describe(err);
      } finally {
        submit.disabled = false;
      }
    });
    show();
    return form;
  }

  return { el, refresh, shown: () => (loaded ? null : refresh()) };
}
