// The demo page: streams POST /api/chat (server-sent events read from fetch, since EventSource
// cannot POST), drives /api/faults and /api/policy, and polls /api/guard for the live panel. No build step.
(function () {
  'use strict';

  const $ = (id) => document.getElementById(id);

  // The access token the demo printed at start in the page's address (#token=...). Changes (fault
  // switches, live policy) send it; a question needs none. Kept for this tab, and taken out of the
  // address bar so a shared link or screenshot does not carry it.
  const TOKEN_KEY = 'aiguard-demo-token';
  const accessToken = (() => {
    const found = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
    if (found) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(found[1]));
      window.history.replaceState(null, '', window.location.pathname + window.location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY) || '';
  })();

  /** @return the headers of a change, with the access token when the page has one */
  function changeHeaders(headers) {
    return accessToken ? Object.assign({ 'X-Demo-Token': accessToken }, headers) : headers;
  }
  const history = [];                // the conversation sent with each request
  let current = null;                // { controller, bubble } of the answer streaming now

  // ---------------------------------------------------------------- server-sent events over fetch

  /** Yields {event, data} for each event of a text/event-stream response body (WHATWG rules). */
  async function* readEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      // normalise line ends, but keep a trailing \r: its \n may be in the next chunk
      const keep = buffer.endsWith('\r') ? '\r' : '';
      buffer = buffer.slice(0, buffer.length - keep.length).replace(/\r\n?/g, '\n') + keep;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const parsed = parseEvent(block);
        if (parsed) yield parsed;
      }
    }
  }

  function parseEvent(block) {
    let event = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    return data.length ? { event, data: data.join('\n') } : null;
  }

  // ---------------------------------------------------------------- chat

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
  let clientChosen = false;          // once the user picks a client, the server's default no longer applies

  /** The badge that says which client asked the model for an answer. */
  function clientBadge(client) {
    return badge('via ' + (CLIENT_NAMES[client] || client), 'client-label', { 'data-client': client });
  }

  async function send(prompt) {
    const priority = $('priority').value;
    const client = $('client').value;
    const tenant = $('tenant').value.trim() || undefined;
    history.push({ role: 'user', content: prompt });
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
        body: JSON.stringify({ messages: history, priority, client, tenant }),
        signal: controller.signal,
      });
      if (!response.ok) {
        const err = await response.json().catch(() => ({ error: 'http_' + response.status, message: response.statusText }));
        history.pop();
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
          history.push({ role: 'assistant', content: answer });
          const ttft = firstTokenAt === null ? '—' : Math.round(firstTokenAt - started) + ' ms to first token';
          addMeta(el, [
            badge(data.source, 'source-label source-' + data.source, { 'data-source': data.source }),
            ...(data.model ? [badge(data.model, 'model-label', { 'data-model': data.model, title: 'the model that answered' })] : []),
            clientBadge(el.dataset.client),
            note((data.finishReason || 'no finish reason') + ' · ' + data.tokens + ' tokens · ' + ttft),
          ]);
          showLastSource(data.source);
        } else if (ev.event === 'error') {
          ended = true;
          history.pop();
          addMeta(el, [
            badge('error: ' + data.type, 'error-label outcome-error', { 'data-error': data.type }),
            clientBadge(el.dataset.client),
            note(data.message + (data.partial ? ' (answer cut: partial)' : '')),
          ]);
          if (!answer) text.textContent = '';
        }
      }
      if (!ended) {
        history.pop();
        addMeta(el, [badge('connection ended', 'outcome-error')]);
      }
    } catch (e) {
      history.pop();
      if (e.name === 'AbortError') {
        addMeta(el, [badge('stopped', 'grey'), note('the guard cancelled the upstream call')]);
      } else {
        addMeta(el, [badge('network error', 'outcome-error'), note(String(e.message || e))]);
      }
    } finally {
      el.classList.remove('streaming');
      current = null;
      setBusy(false);
      refreshGuard();
    }
  }

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
  $('client').addEventListener('change', () => { clientChosen = true; });
  $('new-chat').addEventListener('click', () => {
    if (current) current.controller.abort();
    history.length = 0;
    $('messages').replaceChildren();
  });

  // ---------------------------------------------------------------- faults
  // The server holds the truth. Each switch sends only its own change (PATCH), which the server
  // applies to the profile in force; the page shows the server's answers, skips answers older than
  // one it has shown, and re-reads the profile once no change is in flight (and every second), so
  // it ends up showing what the server has whatever order the answers come back in.

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
  async function rereadFaults() {
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

  $('faults').addEventListener('change', (e) => {
    const change = changeFor(e.target.id);
    if (change) changeFaults('PATCH', change);
  });
  $('fault-reset').addEventListener('click', () => changeFaults('DELETE'));

  // ---------------------------------------------------------------- live panel

  function showLastSource(source) {
    const b = $('last-source');
    b.textContent = source || '—';
    b.dataset.source = source || '';
    b.className = 'badge ' + (source ? 'source-' + source : 'source-none');
  }

  /** Whole seconds, rounded up: a wait never reads "0 s" while the breaker still refuses. */
  function seconds(ms) {
    return Math.ceil(ms / 1000) + ' s';
  }

  /** The line under the breaker's badge: when the next request may probe, what a trip would cost. */
  function breakerWaitText(b) {
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
  function chartScale(ttfts) {
    const values = ttfts.filter((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0).sort((x, y) => x - y);
    if (values.length === 0) return { top: CHART_FLOOR_MS, clipped: 0 };
    const percentile = values[Math.ceil(CHART_PERCENTILE * values.length) - 1];   // nearest rank
    const slowest = values[values.length - 1];
    const top = Math.max(CHART_FLOOR_MS, Math.min(slowest, CHART_OUTLIER_FACTOR * percentile));
    return { top, clipped: values.filter((v) => v > top).length };
  }

  /** @return {height, clipped}: a bar's height in pixels (at least 3) on a plot `plot` pixels tall */
  function barHeight(ttft, top, plot) {
    if (typeof ttft !== 'number') return { height: 3, clipped: false };
    return { height: Math.max(3, (Math.min(ttft, top) / top) * plot), clipped: ttft > top };
  }

  function renderChart(recent) {
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

  // ---------------------------------------------------------------- load governor
  // The page keeps the last LOAD_SAMPLES readings of the offered load (one per poll) and draws them
  // with the governor's forecast after the last one; 1.0 (capacity) is the dashed line.

  const LOAD_SAMPLES = 60;
  const loadHistory = [];

  /** @return the chart's top, as a share of capacity: 1.5, or more so the highest value fits */
  function loadScaleTop(values) {
    const finite = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
    return Math.max(1.5, ...finite.map((v) => Math.ceil(v * 1.1 * 2) / 2));
  }

  /** @return SVG points "x,y ..." for values at one slot per step from slot `from`, on a plot w x h topped at `top` */
  function loadPoints(values, from, slots, top, w, h) {
    const step = w / Math.max(1, slots - 1);
    return values.map((v, i) => {
      const y = h - (Math.min(Math.max(v, 0), top) / top) * (h - 14);
      return (Math.round((from + i) * step * 10) / 10) + ',' + (Math.round(y * 10) / 10);
    }).join(' ');
  }

  function fixed(v, digits) {
    return typeof v === 'number' ? v.toFixed(digits) : '—';
  }

  function renderLoad(load) {
    const level = $('load-level');
    if (!load) {
      level.textContent = 'off';
      level.dataset.level = '';
      level.className = 'badge level-NONE';
      return;
    }
    level.textContent = load.level;
    level.dataset.level = load.level;
    level.className = 'badge level-' + load.level;
    level.title = load.lastChange ? 'last change: ' + load.lastChange.from + ' → ' + load.lastChange.to
      + ' (' + load.lastChange.reason.toLowerCase() + ': ' + load.lastChange.detail + ')' : 'no change yet';
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

  function renderCounters(c, mock) {
    const plural = (n, word) => '<b>' + n + '</b> ' + word + (n === 1 ? '' : 's');
    const parts = [plural(c.requests, 'request'), plural(c.attempts - c.requests, 'retry attempt'),
      plural(c.tokens, 'token')];
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
        models.primary = primary.name;
        models.all = endpoints.map((e) => e.name);
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

  async function refreshGuard() {
    try {
      const response = await fetch('/api/guard', { cache: 'no-store' });
      if (!response.ok) return;
      const s = await response.json();
      $('upstream').textContent = s.upstream;
      if (!clientChosen && s.client && s.client.default) $('client').value = s.client.default;
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
      if (last && !current) showLastSource(last.source);
    } catch (e) {
      // the next poll tries again
    }
  }

  // ---- the live policy: PUT /api/policy, and its audit trail ----

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

  async function readPolicy(fill) {
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

  // the page's pure functions, for tests (and the curious, from the console)
  window.AiGuardDemo = Object.freeze({ breakerWaitText, chartScale, barHeight, loadScaleTop, loadPoints });

  rereadFaults();
  refreshGuard();
  readPolicy(true);
  setInterval(() => { refreshGuard(); rereadFaults(); }, 1000);
  setInterval(() => readPolicy(false), 3000);
})();
