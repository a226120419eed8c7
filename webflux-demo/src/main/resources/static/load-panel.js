// The load governor's card: its level, score and signals, and the offered load with the forecast.
//
// The page keeps the last LOAD_SAMPLES readings of the offered load (one per poll) and draws them
// with the governor's forecast after the last one; 1.0 (capacity) is the dashed line.

import { $ } from './page.js';

const LOAD_SAMPLES = 60;
const loadHistory = [];

/** @return the chart's top, as a share of capacity: 1.5, or more so the highest value fits */
export function loadScaleTop(values) {
  const finite = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
  return Math.max(1.5, ...finite.map((v) => Math.ceil(v * 1.1 * 2) / 2));
}

/** @return SVG points "x,y ..." for values at one slot per step from slot `from`, on a plot w x h topped at `top` */
export function loadPoints(values, from, slots, top, w, h) {
  const step = w / Math.max(1, slots - 1);
  return values.map((v, i) => {
    const y = h - (Math.min(Math.max(v, 0), top) / top) * (h - 14);
    return (Math.round((from + i) * step * 10) / 10) + ',' + (Math.round(y * 10) / 10);
  }).join(' ');
}

function fixed(v, digits) {
  return typeof v === 'number' ? v.toFixed(digits) : '—';
}

/** The level again in the chat's head, where the answers it decides appear (the card may be below the fold). */
function renderChatLevel(level, title) {
  const badge = $('chat-load');
  badge.textContent = 'load ' + (level || 'off');
  badge.dataset.level = level || '';
  badge.className = 'badge level-' + (level || 'NONE');
  if (title) badge.title = title;
}

export function renderLoad(load) {
  const level = $('load-level');
  if (!load) {
    level.textContent = 'off';
    level.dataset.level = '';
    level.className = 'badge level-NONE';
    renderChatLevel(null);
    return;
  }
  level.textContent = load.level;
  level.dataset.level = load.level;
  level.className = 'badge level-' + load.level;
  level.title = load.lastChange ? 'last change: ' + load.lastChange.from + ' → ' + load.lastChange.to
    + ' (' + load.lastChange.reason.toLowerCase() + ': ' + load.lastChange.detail + ')' : 'no change yet';
  renderChatLevel(load.level, 'load ' + load.level + ' now (' + level.title
    + '): it decides whether a question goes to the model or to the fallbacks first');
  $('load-score').textContent = fixed(load.score, 0);
  $('load-load').textContent = fixed(load.load, 2);
  $('load-peak').textContent = fixed(load.forecastPeak, 2);
  $('load-mode').textContent = load.mode === 'COLD_START' ? 'cold start' : 'forecast';
  $('load-subscores').textContent = Object.entries(load.subScores || {})
    .map(([k, v]) => k + ' ' + fixed(v, 0)).join(' · ') || '—';
  loadHistory.push(typeof load.load === 'number' ? load.load : 0);
  if (loadHistory.length > LOAD_SAMPLES) loadHistory.shift();
  // the forecast is in requests per second; the load is that rate over capacity
  const capacity = load.capacity;
  const forecast = capacity > 0 ? (load.forecast || []).map((r) => (typeof r === 'number' ? r / capacity : 0)) : [];
  const slots = LOAD_SAMPLES + forecast.length;
  const top = loadScaleTop(loadHistory.concat(forecast));
  const w = 360;
  const h = 84;
  $('load-line').setAttribute('points', loadPoints(loadHistory, LOAD_SAMPLES - loadHistory.length, slots, top, w, h));
  const last = loadHistory[loadHistory.length - 1];
  $('load-forecast').setAttribute('points', forecast.length
    ? loadPoints([last].concat(forecast), LOAD_SAMPLES - 1, slots, top, w, h) : '');
  const y = h - (1 / top) * (h - 14);
  $('load-capacity').setAttribute('y1', String(y));
  $('load-capacity').setAttribute('y2', String(y));
  $('load-scale').textContent = 'load · capacity = 1 · top ' + top.toFixed(1) + ' · dashed: forecast';
}
