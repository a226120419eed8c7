// The live policy: PUT /api/policy from the form, and the audit trail of its changes.

import { $, changeHeaders } from './page.js';

function fillPolicyForm(p) {
  $('policy-version').textContent = p.version;
  $('policy-first-token').value = p.firstTokenTimeoutMs == null ? '' : p.firstTokenTimeoutMs;
  $('policy-idle').value = p.idleTimeoutMs == null ? '' : p.idleTimeoutMs;
  $('policy-attempts').value = p.maxAttempts;
  const p0 = p.priorities.P0;
  $('policy-p0-first-token').value = p0.overridden && p0.firstTokenTimeoutMs != null ? p0.firstTokenTimeoutMs : '';
  const p2 = p.priorities.P2;
  $('policy-p2-attempts').value = p2.overridden ? p2.maxAttempts : '';
}

function renderAudit(p) {
  const list = $('policy-audit');
  list.textContent = '';
  $('policy-version').textContent = p.version;
  if (!p.audit.length) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'no change yet';
    list.appendChild(li);
    return;
  }
  for (const entry of p.audit) {
    const li = document.createElement('li');
    const when = new Date(entry.at).toLocaleTimeString();
    const what = entry.changes.length
      ? entry.changes.map((c) => c.setting + ': ' + c.before + ' → ' + c.after).join('; ')
      : 'no setting changed';
    li.textContent = 'v' + entry.version + ' ' + when + ' by ' + entry.actor + ' — ' + what;
    list.appendChild(li);
  }
}

export async function readPolicy(fill) {
  try {
    const response = await fetch('/api/policy', { cache: 'no-store' });
    if (!response.ok) return;
    const p = await response.json();
    if (fill) fillPolicyForm(p);
    renderAudit(p);
  } catch (e) {
    // the next poll tries again
  }
}

function wholeOrNull(id) {
  const v = $(id).value.trim();
  return v === '' ? null : Number(v);
}

/** Wires the policy form. */
export function initPolicy() {
  $('policy-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = { actor: $('policy-actor').value };
    const firstToken = wholeOrNull('policy-first-token');
    const idle = wholeOrNull('policy-idle');
    const attempts = wholeOrNull('policy-attempts');
    if (firstToken != null) body.firstTokenTimeoutMs = firstToken;
    if (idle != null) body.idleTimeoutMs = idle;
    if (attempts != null) body.maxAttempts = attempts;
    const p0 = wholeOrNull('policy-p0-first-token');
    const p2 = wholeOrNull('policy-p2-attempts');
    body.priorities = { P0: p0 == null ? null : { firstTokenTimeoutMs: p0 }, P2: p2 == null ? null : { maxAttempts: p2 } };
    try {
      const response = await fetch('/api/policy', {
        method: 'PUT', headers: changeHeaders({ 'Content-Type': 'application/json' }), body: JSON.stringify(body)
      });
      const json = await response.json();
      if (!response.ok) {
        $('policy-status').textContent = 'refused: ' + json.message;
        return;
      }
      $('policy-status').textContent = 'version ' + json.version + ' in force for new requests';
      fillPolicyForm(json);
      renderAudit(json);
    } catch (e) {
      $('policy-status').textContent = 'the server did not answer';
    }
  });
}
