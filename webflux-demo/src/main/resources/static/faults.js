// The fault switches: each sends its change of the embedded mock's fault profile to /api/faults.
//
// The server holds the truth. Each switch sends only its own change (PATCH), which the server
// applies to the profile in force; the page shows the server's answers, skips answers older than
// one it has shown, and re-reads the profile once no change is in flight (and every second), so
// it ends up showing what the server has whatever order the answers come back in.

import { $, changeHeaders } from './page.js';

const SLOW_FIRST_TOKEN_MS = 6000;
const LOAD_PRESSURE_CAPACITY = 4;
const FAULT_SWITCHES = ['fault-slow', 'fault-stall', 'fault-drop', 'fault-omit', 'fault-errors', 'fault-context',
  'fault-load', 'fault-empty', 'fault-filter', 'fault-loop', 'fault-primary-down', 'fault-models-down',
  'fault-rate-limit'];
// the chat's model and every model of its provider, read from /api/guard's breaker tree
const models = { primary: 'mock-large', all: ['mock-large', 'mock-small'] };
let changesSent = 0;        // numbered from 1, in the order the user made them
let changesInFlight = 0;
let changeShown = 0;        // the newest change whose answer the page has shown

/** The models the model switches name: the chat's endpoint and every endpoint of its provider. */
export function setModels(primary, all) {
  models.primary = primary;
  models.all = all;
}

/** The partial profile one control stands for; null puts a field back to the server's reset value. */
function changeFor(id) {
  const on = (sw) => $(sw).checked;
  switch (id) {
    case 'fault-slow': return { firstTokenDelayMs: on(id) ? SLOW_FIRST_TOKEN_MS : null };
    case 'fault-stall': return { stallAfterTokens: on(id) ? 5 : null };
    case 'fault-drop': return { dropAfterTokens: on(id) ? 8 : null };
    case 'fault-omit': return { omitTerminal: on(id) };
    case 'fault-context': return { contextLimitTokens: on(id) ? 120 : null };
    case 'fault-load': return { loadPressureCapacity: on(id) ? LOAD_PRESSURE_CAPACITY : null };
    case 'fault-empty': return { emptyAnswer: on(id) };
    case 'fault-filter': return { finishReason: on(id) ? 'content_filter' : null };
    case 'fault-loop': return { loopingAnswer: on(id) };
    case 'fault-primary-down': return { failingModels: on(id) ? [models.primary] : null };
    case 'fault-models-down': return { failingModels: on(id) ? models.all.slice() : null };
    case 'fault-rate-limit': return { providerRateLimit: on(id) };
    case 'fault-errors': case 'fault-error-status': case 'fault-error-rate': {
      const status = Number($('fault-error-status').value);
      return {
        errorRate: on('fault-errors') ? Number($('fault-error-rate').value) : 0,
        errorStatus: status,
        retryAfterSeconds: status === 429 ? 1 : 0,
      };
    }
    default: return null;
  }
}

function showProfile(p) {
  $('fault-slow').checked = p.firstTokenDelayMs === SLOW_FIRST_TOKEN_MS;
  $('fault-stall').checked = p.stallAfterTokens !== null;
  $('fault-drop').checked = p.dropAfterTokens !== null;
  $('fault-omit').checked = p.omitTerminal;
  $('fault-errors').checked = p.errorRate > 0;
  $('fault-error-status').value = String(p.errorStatus);
  if (p.errorRate > 0) $('fault-error-rate').value = String(p.errorRate);
  $('fault-context').checked = p.contextLimitTokens !== null;
  $('fault-load').checked = p.loadPressureCapacity !== null && p.loadPressureCapacity !== undefined;
  $('fault-empty').checked = p.emptyAnswer === true;
  $('fault-filter').checked = p.finishReason === 'content_filter';
  $('fault-loop').checked = p.loopingAnswer === true;
  const down = p.failingModels || [];
  const everyModel = down.length > 0 && models.all.every((m) => down.includes(m));
  $('fault-models-down').checked = everyModel;
  $('fault-primary-down').checked = !everyModel && down.includes(models.primary);
  $('fault-rate-limit').checked = p.providerRateLimit === true;
  const active = FAULT_SWITCHES.filter((id) => $(id).checked).length;
  $('fault-status').textContent = active ? active + ' fault(s) active — applies to new requests' : 'the model behaves';
}

function faultApiRefused(response, json) {
  $('fault-status').textContent = json.message || ('HTTP ' + response.status);
  $('faults').querySelectorAll('input, select').forEach((i) => { i.disabled = response.status === 409; });
}

/** Sends one change (PATCH with a partial profile, or DELETE to reset). */
async function changeFaults(method, body) {
  const number = ++changesSent;
  changesInFlight++;
  let answer = null;
  try {
    const response = await fetch('/api/faults', {
      method,
      headers: changeHeaders(body ? { 'Content-Type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await response.json();
    if (!response.ok) faultApiRefused(response, json);
    else answer = json;
  } catch (e) {
    $('fault-status').textContent = 'fault API unreachable';
  } finally {
    changesInFlight--;
  }
  // an answer older than one shown, or while other changes are on their way, may be stale
  if (answer && number > changeShown && changesInFlight === 0) {
    changeShown = number;
    showProfile(answer);
  }
  if (changesInFlight === 0) rereadFaults();
}

/** Shows the server's profile unless a change was made while it was being read. */
export async function rereadFaults() {
  if (changesInFlight > 0) return;
  const mark = changesSent;
  try {
    const response = await fetch('/api/faults', { cache: 'no-store' });
    const json = await response.json();
    if (!response.ok) {
      faultApiRefused(response, json);
      return;
    }
    if (changesSent === mark && changesInFlight === 0) showProfile(json);
  } catch (e) {
    $('fault-status').textContent = 'fault API unreachable';
  }
}

/** Wires the fault switches and the reset button. */
export function initFaults() {
  $('faults').addEventListener('change', (e) => {
    const change = changeFor(e.target.id);
    if (change) changeFaults('PATCH', change);
  });
  $('fault-reset').addEventListener('click', () => changeFaults('DELETE'));
}
