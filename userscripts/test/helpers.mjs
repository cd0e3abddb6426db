// Test helpers: a GM_* shim like the one a userscript manager provides (requests
// over Node's fetch, values JSON round-tripped the way managers store them), a
// loopback HTTP server standing in for the deployment, and a page stub for the
// Site adapters.

import http from 'node:http';

// gmShim returns { gm, requests, values }: gm is what the script receives,
// requests every GM_xmlhttpRequest detail object it was handed.
export function gmShim() {
  const requests = [];
  const values = new Map();
  const xhr = (d) => {
    requests.push(d);
    const ac = new AbortController();
    let timedOut = false;
    const timer = d.timeout
      ? setTimeout(() => {
        timedOut = true;
        ac.abort();
      }, d.timeout)
      : null;
    fetch(d.url, { method: d.method, headers: d.headers, body: d.data, signal: ac.signal })
      .then(async (res) => {
        const text = await res.text();
        clearTimeout(timer);
        const raw = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\r\n');
        d.onload({ status: res.status, responseText: text, responseHeaders: raw, finalUrl: res.url });
      })
      .catch(() => {
        clearTimeout(timer);
        if (timedOut) d.ontimeout();
        else d.onerror();
      });
  };
  const gm = {
    xhr,
    getValue: (k, d) => (values.has(k) ? values.get(k) : d),
    setValue: (k, v) => values.set(k, v === undefined ? undefined : JSON.parse(JSON.stringify(v))),
  };
  return { gm, requests, values };
}

// apiServer starts a loopback server whose answers come from handler(req, body)
// → { status, headers, body } (body a string or a value sent as JSON). It records
// every request and the bytes of every response body it sent.
export async function apiServer(handler) {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', async () => {
      const rec = { method: req.method, url: req.url, headers: req.headers, body, sentBytes: 0 };
      seen.push(rec);
      const a = (await handler(rec)) || { status: 404, body: { error: 'no route' } };
      if (a.hang) return;
      const text = a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
      const headers = { ...(a.headers || {}) };
      if (text !== '' && !headers['content-type']) headers['content-type'] = 'application/json';
      rec.sentBytes = Buffer.byteLength(text);
      res.writeHead(a.status || 200, headers);
      res.end(text);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    seen,
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(r);
    }),
  };
}

// closedPort returns a loopback base URL nothing listens on.
export async function closedPort() {
  const s = http.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${s.address().port}`;
  await new Promise((r) => s.close(r));
  return base;
}

// stubPage is the adapters' page view (see src/core/adapter.js) over plain data:
// texts maps a selector to the text of its first match.
export function stubPage(href, { title = '', texts = {}, links = {} } = {}) {
  return {
    url: new URL(href),
    title,
    text: (sel) => (Object.hasOwn(texts, sel) ? texts[sel] : ''),
    link: (sel) => (Object.hasOwn(links, sel) ? links[sel] : ''),
  };
}
