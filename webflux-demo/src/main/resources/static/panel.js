// The live panel: polls /api/guard and shows the breaker and its tree, the lanes, the load
// governor, the budgets, the recent answers and the counters.

import { answering, clientChosen } from './chat.js';
import { renderChart } from './chart.js';
import { setModels } from './faults.js';
import { renderLoad } from './load-panel.js';
import { $, seconds } from './page.js';

export function showLastSource(source) {
  const b = $('last-source');
  b.textContent = source || '—';
  b.dataset.source = source || '';
  b.className = 'badge ' + (source ? 'source-' + source : 'source-none');
}

/** The line under the breaker's badge: when the next request may probe, what a trip would cost. */
export function breakerWaitText(b) {
  const state = b.state.replace('_', ' ');
  if (b.state === 'OPEN') {
    if (b.retryInMs == null) return state;
    return b.retryInMs > 0 ? 'OPEN — probe allowed in ' + seconds(b.retryInMs) : 'OPEN — next request probes';
  }
  if (b.state === 'HALF_OPEN') return 'HALF OPEN — probing; a failed probe re-opens it for ' + seconds(b.nextOpenWaitMs);
  if (b.state === 'CLOSED') {
    // longer than the first wait with the most jitter can add: a re-open continues the doubling
    const w = b.openWaitBackoff;
    const streak = w && b.nextOpenWaitMs > w.initialMs * (1 + (w.jitter || 0));
    return 'a trip would open it for ' + seconds(b.nextOpenWaitMs) + (streak ? ' (it re-opened recently)' : '');
  }
  return state + ' — set by an operator';
}

function renderBreaker(b) {
  const state = $('breaker-state');
  state.textContent = b.state.replace('_', ' ');
  state.dataset.state = b.state;
  state.className = 'badge state-' + b.state;
  $('breaker-wait').textContent = breakerWaitText(b);
  $('breaker-wait').dataset.retryInMs = b.retryInMs == null ? '' : String(b.retryInMs);
  const w = b.openWaitBackoff;
  if (w) {
    $('breaker-backoff').textContent = seconds(w.initialMs) + ', ×' + w.multiplier + ' per re-open, up to '
      + seconds(w.maxMs) + (w.jitter ? ', + up to ' + Math.round(w.jitter * 100) + ' %' : '');
  }
  const pct = Math.round(b.failureRate * 100);
  $('breaker-rate').textContent = pct + ' %';
  const bar = $('breaker-rate-bar');
  bar.style.width = Math.min(100, pct) + '%';
  bar.style.background = b.failureRate >= b.failureRateThreshold ? 'var(--bad)'
    : b.failureRate > 0 ? 'var(--warn)' : 'var(--ok)';
  $('breaker-threshold').style.left = Math.round(b.failureRateThreshold * 100) + '%';
  $('breaker-calls').textContent = b.calls + ' (min ' + b.minimumCalls + ')';
  $('breaker-stalls').textContent = b.stalls + ' / ' + b.incomplete;
  $('breaker-rejected').textContent = b.rejected;
}

function renderLanes(lanes) {
  const box = $('lanes');
  for (const [name, lane] of Object.entries(lanes)) {
    let row = box.querySelector('[data-lane="' + name + '"]');
    if (!row) {
      row = document.createElement('div');
      row.className = 'lane';
      row.dataset.lane = name;
      row.innerHTML = '<span class="lane-name"></span><div class="lane-bar"><div class="lane-own"></div>' +
        '<div class="lane-borrowed"></div></div><span class="lane-nums"></span>';
      row.querySelector('.lane-name').textContent = name;
      box.appendChild(row);
    }
    const cap = Math.max(1, lane.capacity);
    const own = Math.min(100, (lane.inFlight / cap) * 100);
    const borrowed = Math.min(100 - own, (lane.borrowed / cap) * 100);
    row.querySelector('.lane-own').style.width = own + '%';
    const b = row.querySelector('.lane-borrowed');
    b.style.left = own + '%';
    b.style.width = borrowed + '%';
    row.querySelector('.lane-nums').textContent =
      (lane.inFlight + lane.borrowed) + ' / ' + lane.capacity + (lane.queued ? ' · ' + lane.queued + ' q' : '');
    row.title = lane.inFlight + ' on own permits, ' + lane.borrowed + ' borrowed, ' + lane.queued + ' queued';
  }
}

function renderCounters(c, mock) {
  const plural = (n, word) => '<b>' + n + '</b> ' + word + (n === 1 ? '' : 's');
  const parts = [plural(c.requests, 'request'), plural(c.attempts - c.requests, 'retry attempt'),
    plural(c.tokens, 'chunk')];
  const outcomes = Object.entries(c.outcomes).filter(([, n]) => n > 0).map(([k, n]) => k.toLowerCase() + ' ' + n);
  const sources = Object.entries(c.sources).filter(([, n]) => n > 0).map(([k, n]) => k.toLowerCase() + ' ' + n);
  let html = parts.join(' · ');
  if (outcomes.length) html += '<br>outcomes: ' + outcomes.join(', ');
  // an attempt judged INVALID may end in a retried or fallback answer: count those too
  const invalidAttempts = (c.attemptOutcomes || {}).INVALID || 0;
  if (invalidAttempts) html += '<br><span class="invalid-count">invalid answers from the model: ' + invalidAttempts + '</span>';
  if (sources.length) html += '<br>sources: ' + sources.join(', ');
  const clients = Object.entries(c.clients || {}).filter(([, n]) => n > 0).map(([k, n]) => k + ' ' + n);
  if (clients.length) html += '<br>clients: ' + clients.join(', ');
  if (mock) html += '<br>the mock saw ' + mock.requests + ' call' + (mock.requests === 1 ? '' : 's') + ', '
    + mock.cancelled + ' abandoned by the guard or the client';
  $('counters').innerHTML = html;
}

/**
 * The budgets: one row per tenant seen and per provider key, a bar per limit (what is left of its
 * capacity; red when in debt), the store's mode, throttled waits, refusals and the mock's 429s.
 */
function renderBudgets(b) {
  const card = $('budgets-card');
  card.hidden = !b;
  if (!b) return;
  const mode = $('budget-mode');
  mode.textContent = b.storeMode || '—';
  mode.dataset.mode = b.storeMode || '';
  const rows = [];
  for (const t of b.tenants) rows.push({ kind: 'tenant', name: t.id, limits: t.limits });
  for (const p of b.providers) rows.push({ kind: 'key', name: p.key, limits: p.limits });
  const box = $('budgets');
  box.replaceChildren();
  for (const row of rows) {
    for (const l of row.limits) {
      if (!l.capacity) continue;
      const line = document.createElement('div');
      line.className = 'budget';
      line.dataset.budget = row.kind + ':' + row.name + ':' + l.limit;
      const left = Math.max(0, Math.min(100, (l.remaining / l.capacity) * 100));
      const label = document.createElement('span');
      label.className = 'budget-name';
      label.textContent = row.kind + ' ' + row.name + ' · ' + l.limit;
      const bar = document.createElement('div');
      bar.className = 'meter budget-bar';
      const fill = document.createElement('div');
      fill.className = 'meter-fill';
      fill.style.width = left + '%';
      fill.style.background = l.remaining < 0 ? 'var(--bad)' : left < 20 ? 'var(--warn)' : 'var(--ok)';
      bar.appendChild(fill);
      const nums = document.createElement('span');
      nums.className = 'budget-nums';
      nums.textContent = l.remaining + ' / ' + l.capacity + ' per ' + l.per;
      line.append(label, bar, nums);
      box.appendChild(line);
    }
  }
  if (!box.children.length) box.textContent = 'no budget used yet';
  $('budget-throttled').textContent = b.throttled + (b.throttled ? ' (' + seconds(b.throttledMs) + ' in all)' : '');
  $('budget-429s').textContent = b.provider429s == null ? '—' : b.provider429s;
  $('budget-tenant-refusals').textContent = b.refusals.tenant;
  $('budget-provider-refusals').textContent = b.refusals.provider;
}

/** One node's counts: calls in its window, the share that failed, and the calls it refused. */
function treeCounts(node) {
  return node.level.toLowerCase() + ', ' + node.calls + ' call' + (node.calls === 1 ? '' : 's')
    + (node.calls ? ', ' + Math.round(node.failureRate * 100) + ' % failed' : '')
    + (node.rejectedCalls ? ', ' + node.rejectedCalls + ' refused' : '');
}

/**
 * The breaker tree as a nested list: each node's name, state badge and counts, then its children;
 * the breaker the chat's calls end at (the policy's endpoint) is marked.
 */
function treeItem(node, asked) {
  const li = document.createElement('li');
  li.dataset.breaker = node.breaker;
  li.dataset.level = node.level;
  li.dataset.state = node.state;
  const name = document.createElement('span');
  name.className = 'tree-name';
  name.textContent = node.name + (node.breaker === asked ? ' ◀' : '');
  const badge = document.createElement('span');
  badge.className = 'badge state-' + node.state;
  badge.dataset.state = node.state;
  badge.textContent = node.state.replace('_', ' ');
  const counts = document.createElement('span');
  counts.className = 'tree-counts muted';
  counts.textContent = ' ' + treeCounts(node);
  li.append(name, ' ', badge, counts);
  if (node.children && node.children.length) {
    const ul = document.createElement('ul');
    node.children.forEach(child => ul.append(treeItem(child, asked)));
    li.append(ul);
  }
  return li;
}

/** The model names the model switches send: the chat's endpoint and every endpoint of its provider. */
function learnModels(tree, asked) {
  for (const provider of tree.children || []) {
    const endpoints = provider.children || [];
    const primary = endpoints.find((e) => e.breaker === asked);
    if (primary) {
      setModels(primary.name, endpoints.map((e) => e.name));
      $('primary-model-name').textContent = '(' + primary.name + ')';
    }
  }
}

function renderTree(tree, asked) {
  const section = $('breaker-tree-card');
  section.hidden = !tree;
  if (!tree) return;
  learnModels(tree, asked);
  const list = $('breaker-tree');
  list.replaceChildren(treeItem(tree, asked));
}

export async function refreshGuard() {
  try {
    const response = await fetch('/api/guard', { cache: 'no-store' });
    if (!response.ok) return;
    const s = await response.json();
    $('upstream').textContent = s.upstream;
    if (!clientChosen() && s.client && s.client.default) $('client').value = s.client.default;
    $('mock-address').hidden = !(s.mock && s.mock.baseUrl);
    $('mock-url').textContent = s.mock && s.mock.baseUrl ? s.mock.baseUrl : '';
    renderBreaker(s.breaker);
    renderTree(s.breakerTree, s.breaker.name);
    renderLanes(s.lanes);
    renderLoad(s.load);
    renderBudgets(s.budgets);
    renderChart(s.recent);
    renderCounters(s.counters, s.mock);
    const last = s.recent[s.recent.length - 1];
    if (last && !answering()) showLastSource(last.source);
  } catch (e) {
    // the next poll tries again
  }
}
