// The chart of the recent answers' times to first token: one bar per answer, coloured by outcome.

import { $ } from './page.js';

const OUTCOME_COLOURS = {
  SUCCESS: '#2f9e44', STALLED: '#e8890c', INCOMPLETE: '#e8890c', FAILURE: '#e03131', CLIENT_ERROR: '#e03131',
  INVALID: '#c2255c', CANCELLED: '#98a0b0', REJECTED: '#98a0b0',
};

// The chart's scale: the 90th percentile of the visible times, or twice it when the slowest is
// further out, and never below a second. One slow answer among quick ones is then clipped (drawn
// full height, marked with a break) instead of flattening every other bar.
const CHART_FLOOR_MS = 1000;
const CHART_PERCENTILE = 0.9;
const CHART_OUTLIER_FACTOR = 2;

/** @return {top, clipped}: the time drawn full height, and how many values are above it */
export function chartScale(ttfts) {
  const values = ttfts.filter((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0).sort((x, y) => x - y);
  if (values.length === 0) return { top: CHART_FLOOR_MS, clipped: 0 };
  const percentile = values[Math.ceil(CHART_PERCENTILE * values.length) - 1];   // nearest rank
  const slowest = values[values.length - 1];
  const top = Math.max(CHART_FLOOR_MS, Math.min(slowest, CHART_OUTLIER_FACTOR * percentile));
  return { top, clipped: values.filter((v) => v > top).length };
}

/** @return {height, clipped}: a bar's height in pixels (at least 3) on a plot `plot` pixels tall */
export function barHeight(ttft, top, plot) {
  if (typeof ttft !== 'number') return { height: 3, clipped: false };
  return { height: Math.max(3, (Math.min(ttft, top) / top) * plot), clipped: ttft > top };
}

export function renderChart(recent) {
  const canvas = $('chart');
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * ratio)) {
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
  }
  const g = canvas.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);
  const top = 14;
  const bottom = h - 4;
  const slots = 40;
  const visible = recent.slice(-slots);
  const scale = chartScale(visible.map((r) => r.timeToFirstTokenMs));
  canvas.dataset.scaleMs = String(scale.top);
  canvas.dataset.clipped = String(scale.clipped);
  g.fillStyle = '#6b7385';
  g.font = '10px system-ui, sans-serif';
  g.fillText('time to first token · full height ' + Math.round(scale.top) + ' ms'
    + (scale.clipped ? ' · ' + scale.clipped + ' slower, clipped' : ''), 4, 10);
  g.strokeStyle = '#e3e6ec';
  g.beginPath();
  g.moveTo(0, bottom + 0.5);
  g.lineTo(w, bottom + 0.5);
  g.stroke();
  const slot = w / slots;
  const barW = Math.max(3, slot - 3);
  visible.forEach((r, i) => {
    const x = i * slot + (slot - barW) / 2;
    const colour = OUTCOME_COLOURS[r.outcome] || '#98a0b0';
    const bar = barHeight(r.timeToFirstTokenMs, scale.top, bottom - top);
    g.fillStyle = colour;
    g.fillRect(x, bottom - bar.height, barW, bar.height);
    if (bar.clipped) {
      // a break across the top: this bar goes on beyond the scale
      g.strokeStyle = '#fff';
      g.lineWidth = 2;
      g.beginPath();
      g.moveTo(x - 1, bottom - bar.height + 7);
      g.lineTo(x + barW + 1, bottom - bar.height + 3);
      g.moveTo(x - 1, bottom - bar.height + 11);
      g.lineTo(x + barW + 1, bottom - bar.height + 7);
      g.stroke();
      g.lineWidth = 1;
    }
    if (r.source !== 'REALTIME') {
      g.strokeStyle = '#c25e00';
      g.lineWidth = 2;
      g.beginPath();
      g.arc(x + barW / 2, bottom - bar.height - 5, 3, 0, Math.PI * 2);
      g.stroke();
      g.lineWidth = 1;
    }
  });
}
