// What every part of the demo page shares: element look-up and the access token of changes.

export const $ = (id) => document.getElementById(id);

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
export function changeHeaders(headers) {
  return accessToken ? Object.assign({ 'X-Demo-Token': accessToken }, headers) : headers;
}

/** Whole seconds, rounded up: a wait never reads "0 s" while the breaker still refuses. */
export function seconds(ms) {
  return Math.ceil(ms / 1000) + ' s';
}
