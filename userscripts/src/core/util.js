// Small helpers shared by the core and the Site adapters. Everything read from a
// Site's page or from a response is hostile input: these keep it bounded and typed.

// httpURL parses s and returns the URL when it is an absolute http(s) URL without
// credentials, else null. Only such URLs are ever put into href or src.
export function httpURL(s) {
  if (typeof s !== 'string' || s === '' || s.length > 4096) return null;
  let u;
  try {
    u = new URL(s);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
  if (u.username !== '' || u.password !== '') return null;
  return u;
}

export function isHttpURL(s) {
  return httpURL(s) !== null;
}

// clean collapses whitespace (page text is full of layout newlines) and clips the
// result so one hostile title cannot blow up the panel or a request body.
export function clean(s, max = 300) {
  if (typeof s !== 'string') return '';
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max).trimEnd() : t;
}

// parseHeaders reads the raw header block GM_xmlhttpRequest hands back
// ("Name: value\r\n...") into an object keyed by lower-case name.
export function parseHeaders(raw) {
  const out = {};
  if (typeof raw !== 'string') return out;
  for (const line of raw.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    out[name] = name in out ? out[name] + ', ' + value : value;
  }
  return out;
}
