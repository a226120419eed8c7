// The chat: sends the conversation to POST /api/chat and streams the answer into a bubble, with its
// source, model, client and time to first token (or its error) underneath.

import { $ } from './page.js';
import { readEvents } from './sse.js';

const conversation = [];           // the conversation sent with each request
let current = null;                // { controller, el } of the answer streaming now
let clientPicked = false;          // once the user picks a client, the server's default no longer applies
// what the rest of the page does when an answer names its source, and after each answer
const hooks = { showSource: () => {}, afterAnswer: () => {} };

/** @return whether an answer is streaming now */
export function answering() {
  return current !== null;
}

/** @return whether the user picked a client (the server's default then no longer applies) */
export function clientChosen() {
  return clientPicked;
}

function bubble(role, text) {
  $('hint')?.remove();
  const el = document.createElement('div');
  el.className = 'msg ' + role;
  const body = document.createElement('div');
  body.className = 'text';
  body.textContent = text;
  el.appendChild(body);
  $('messages').appendChild(el);
  scrollDown();
  return el;
}

function scrollDown() {
  const box = $('messages');
  box.scrollTop = box.scrollHeight;
}

function addMeta(el, parts) {
  const meta = document.createElement('div');
  meta.className = 'meta';
  for (const part of parts) meta.appendChild(part);
  el.appendChild(meta);
  scrollDown();
}

function badge(text, cls, attrs) {
  const b = document.createElement('span');
  b.className = 'badge ' + cls;
  b.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) b.setAttribute(k, v);
  return b;
}

function note(text) {
  const s = document.createElement('span');
  s.textContent = text;
  return s;
}

function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').disabled = !busy;
}

const CLIENT_NAMES = { 'library': 'library client', 'spring-ai': 'Spring AI ChatClient' };

/** The load level when the question was asked: its rules decided whether the model was asked first. */
function loadBadge(load) {
  return badge('load ' + load.level, 'load-label level-' + load.level, {
    'data-level': load.level,
    title: 'the load governor\'s level when this question was asked; its rule for the priority: '
      + load.action.toLowerCase().replace(/_/g, '-'),
  });
}

/** Why the model's own answer is not the one shown (a fallback, the cache, a canned reply). */
function why(text) {
  const s = document.createElement('span');
  s.className = 'why';
  s.textContent = 'why: ' + text;
  return s;
}

/** The badge that says which client asked the model for an answer. */
function clientBadge(client) {
  return badge('via ' + (CLIENT_NAMES[client] || client), 'client-label', { 'data-client': client });
}

async function send(prompt) {
  const priority = $('priority').value;
  const client = $('client').value;
  const tenant = $('tenant').value.trim() || undefined;
  conversation.push({ role: 'user', content: prompt });
  bubble('user', prompt);
  const el = bubble('assistant', '');
  el.classList.add('streaming');
  const text = el.querySelector('.text');
  const controller = new AbortController();
  current = { controller, el };
  setBusy(true);
  const started = performance.now();
  let firstTokenAt = null;
  let answer = '';
  let ended = false;
  try {
    const response = await fetch('/api/chat', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Accept': 'text/event-stream' },
      body: JSON.stringify({ messages: conversation, priority, client, tenant }),
      signal: controller.signal,
    });
    if (!response.ok) {
      const err = await response.json().catch(() => ({ error: 'http_' + response.status, message: response.statusText }));
      conversation.pop();
      const wait = response.headers.get('Retry-After');
      addMeta(el, [badge('refused: ' + err.error, 'outcome-error', { 'data-error': err.error }),
        note(err.message + (wait ? ' · retry in ' + wait + ' s' : ''))]);
      ended = true;
      return;
    }
    for await (const ev of readEvents(response)) {
      const data = JSON.parse(ev.data);
      if (ev.event === 'meta') {
        el.dataset.requestId = data.requestId;
        el.dataset.client = data.client;
      } else if (ev.event === 'token') {
        if (firstTokenAt === null) firstTokenAt = performance.now();
        answer += data.text;
        text.textContent = answer;
        scrollDown();
      } else if (ev.event === 'done') {
        ended = true;
        conversation.push({ role: 'assistant', content: answer });
        const ttft = firstTokenAt === null ? '—' : Math.round(firstTokenAt - started) + ' ms to first token';
        addMeta(el, [
          badge(data.source, 'source-label source-' + data.source, { 'data-source': data.source }),
          ...(data.model ? [badge(data.model, 'model-label', { 'data-model': data.model, title: 'the model that answered' })] : []),
          clientBadge(el.dataset.client),
          ...(data.load ? [loadBadge(data.load)] : []),
          note((data.finishReason || 'no finish reason') + ' · ' + data.tokens + ' chunks · ' + ttft),
          ...(data.why ? [why(data.why)] : []),
        ]);
        hooks.showSource(data.source);
      } else if (ev.event === 'error') {
        ended = true;
        conversation.pop();
        addMeta(el, [
          badge('error: ' + data.type, 'error-label outcome-error', { 'data-error': data.type }),
          clientBadge(el.dataset.client),
          note(data.message + (data.partial ? ' (answer cut: partial)' : '')),
        ]);
        if (!answer) text.textContent = '';
      }
    }
    if (!ended) {
      conversation.pop();
      addMeta(el, [badge('connection ended', 'outcome-error')]);
    }
  } catch (e) {
    conversation.pop();
    if (e.name === 'AbortError') {
      addMeta(el, [badge('stopped', 'grey'), note('the guard cancelled the upstream call')]);
    } else {
      addMeta(el, [badge('network error', 'outcome-error'), note(String(e.message || e))]);
    }
  } finally {
    el.classList.remove('streaming');
    current = null;
    setBusy(false);
    hooks.afterAnswer();
  }
}

/**
 * Wires the composer, stop and new-chat controls; `showSource` hears each answer's source,
 * `afterAnswer` runs when an answer ended in any way.
 */
export function initChat({ showSource, afterAnswer }) {
  hooks.showSource = showSource;
  hooks.afterAnswer = afterAnswer;
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const prompt = $('prompt').value.trim();
    if (!prompt || current) return;
    $('prompt').value = '';
    send(prompt);
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => current && current.controller.abort());
  $('client').addEventListener('change', () => { clientPicked = true; });
  $('new-chat').addEventListener('click', () => {
    if (current) current.controller.abort();
    conversation.length = 0;
    $('messages').replaceChildren();
  });
}
