// Rates and ETAs that move: a counter sampled as it grows (bytes sent, files finished), its rate
// over the last seconds measured up to now, so a stall slows the rate and lengthens the ETA
// instead of freezing the last estimate ("about 300 ms left" for six seconds).

import { fmtBytes, fmtDuration } from "../dom.js";

const WINDOW_S = 8;

/** A counter's moving rate: add(value) when it changes; rate() per second; eta(total) seconds. */
export function movingRate(windowS = WINDOW_S, clock = () => performance.now() / 1000) {
  const samples = []; // [t, value], oldest first; one sample older than the window anchors it
  const add = (value) => {
    const t = clock();
    if (samples.length && samples[samples.length - 1][1] === value) return;
    samples.push([t, value]);
    while (samples.length > 2 && samples[1][0] < t - windowS) samples.shift();
  };
  const rate = () => {
    if (samples.length < 2) return null;
    const now = clock();
    const [t0, v0] = samples[0];
    const v1 = samples[samples.length - 1][1];
    return now > t0 ? (v1 - v0) / (now - t0) : null;
  };
  const eta = (total) => {
    const r = rate();
    const done = samples.length ? samples[samples.length - 1][1] : 0;
    if (!r || r <= 0 || done >= total) return null;
    return (total - done) / r;
  };
  return { add, rate, eta };
}

/** "3.3 files/s", "12 MB/s". */
export function fmtRate(perSecond, unit) {
  if (perSecond === null || perSecond === undefined) return null;
  if (unit === "bytes") return `${fmtBytes(perSecond)}/s`;
  return `${perSecond.toFixed(perSecond < 10 ? 1 : 0)} ${unit}/s`;
}

/** "about 7 s left", "about 3 min left"; under a second is "almost done". */
export function fmtEta(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return null;
  if (seconds < 1) return "almost done";
  return `about ${seconds < 60 ? `${Math.ceil(seconds)} s` : fmtDuration(seconds)} left`;
}
