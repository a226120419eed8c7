// Server-sent events read from a fetch response: EventSource cannot POST, and /api/chat is a POST.

/** Yields {event, data} for each event of a text/event-stream response body (WHATWG rules). */
export async function* readEvents(response) {
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
