// The client for the deployment's JSON API. Every request goes through the
// userscript manager's GM_xmlhttpRequest to the deployment's own origin, with
// the Reader's token in an Authorization header and nowhere else: never in a
// URL, never to any other origin.

import { gmRequest } from './gm.js';
import { normalizeBookmark, parseBookmarks, parseRef } from './bookmarks.js';
import { clean, httpURL, parseHeaders } from './util.js';

// LecternError carries a code the panel shows a message for (and tests assert
// on): not-configured, no-token, unreachable, redirected, unauthorized,
// forbidden, unknown-page, server, request, bad-response.
export class LecternError extends Error {
  constructor(code, message, status = 0) {
    super(message);
    this.name = 'LecternError';
    this.code = code;
    this.status = status;
  }
}

// serverMessage is the `error` of a JSON error body, clipped; '' when absent.
function serverMessage(text) {
  try {
    const v = JSON.parse(text);
    return v && typeof v.error === 'string' ? clean(v.error, 200) : '';
  } catch {
    return '';
  }
}

// errorFor maps a reply that is not a success to what the Reader is told.
// context 'resolve' marks the page lookup, where 404 and 422 mean "not a page
// Lectern knows" rather than a failure.
export function errorFor(status, text, context = '') {
  const said = serverMessage(text);
  const detail = said ? ': ' + said : '';
  if (status === 401) {
    return new LecternError('unauthorized', 'Lectern refused the token (401). Paste a new token in Settings.', status);
  }
  if (status === 403) return new LecternError('forbidden', 'This token may not do that (403)' + detail + '.', status);
  if (context === 'resolve' && (status === 404 || status === 422)) {
    return new LecternError('unknown-page', 'Lectern does not know this page as a Series or chapter page' + detail + '.', status);
  }
  if (status >= 500) {
    return new LecternError('server', `Lectern had a server error (HTTP ${status})${detail}. Try again later.`, status);
  }
  return new LecternError('request', `Lectern answered HTTP ${status}${detail}.`, status);
}

// keyPath puts a Series key into a path segment. ":" is legal there and kept so
// the usual key reads as itself; everything else unusual is percent-encoded.
export function keyPath(key) {
  return encodeURIComponent(key).replace(/%3A/gi, ':');
}

// progressBody is the PUT body for recording the chapter a page shows. The
// Series comes from /api/resolve; there is no cover field: the backend acquires
// Covers itself and ignores any a client sends.
export function progressBody(ref, page) {
  const body = { site: ref.site, series_url: ref.series_url, chapter: page.chapter.label };
  if (page.title) body.title = page.title;
  if (page.chapter.url) body.chapter_url = page.chapter.url;
  if (typeof page.chapter.number === 'number' && Number.isFinite(page.chapter.number)) {
    body.chapter_number = page.chapter.number;
  }
  return body;
}

export function createClient({ baseURL, xhr, store, client = '', timeout = 15000 }) {
  const base = httpURL(baseURL);
  const origin = base ? base.origin : '';
  const prefix = base ? base.pathname.replace(/\/+$/, '') : '';
  let serverVersion = '';

  async function request(method, path, { body, etag, context } = {}) {
    if (!base || !xhr) {
      throw new LecternError('not-configured', 'This script was not installed from a Lectern deployment. Install it from your deployment\'s /userscripts/ link.');
    }
    const token = store.token();
    if (token === '') throw new LecternError('no-token', 'No token yet. Open Settings and paste the token from your Lectern token page.');
    const url = origin + prefix + path;
    const target = httpURL(url);
    // Built from the deployment's origin and a fixed path, so this holds; it is
    // checked anyway because the Authorization header must go nowhere else.
    if (!target || target.origin !== origin) throw new LecternError('not-configured', 'Refusing to send the token outside the deployment.');
    // Lectern compresses its JSON (a list of 1,000 Bookmarks is ~700 KB as
    // it is, ~60 KB in zstd); the userscript manager, or the browser under
    // it, decodes the body before the script sees it.
    const headers = { Authorization: 'Bearer ' + token, Accept: 'application/json', 'Accept-Encoding': 'zstd, gzip' };
    if (client) headers['X-Lectern-Client'] = client;
    if (etag) headers['If-None-Match'] = etag;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await gmRequest(xhr, {
      method,
      url,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      timeout,
    });
    if (r.status === 0) {
      const why = r.reason === 'timeout' ? 'did not answer in time' : 'could not be reached';
      throw new LecternError('unreachable', `Lectern at ${origin} ${why}. Check that it is running and that this script may connect to it.`);
    }
    if (r.finalUrl) {
      const final = httpURL(r.finalUrl);
      if (!final || final.origin !== origin) {
        throw new LecternError('redirected', `Lectern at ${origin} redirected elsewhere; check the deployment's PUBLIC_BASE_URL.`);
      }
    }
    const h = parseHeaders(r.headers);
    if (h['x-lectern-version']) serverVersion = clean(h['x-lectern-version'], 64);
    return { status: r.status, text: r.text, headers: h, context };
  }

  return {
    get origin() {
      return origin;
    },
    get serverVersion() {
      return serverVersion;
    },

    // listBookmarks returns { bookmarks, cached } for one Library. It sends the
    // last ETag it saw; a 304 re-reads the body kept with that ETag.
    async listBookmarks(library) {
      const path = '/api/bookmarks?kind=' + encodeURIComponent(library);
      let cache = store.cache(library);
      if (cache && cache.base !== origin + prefix) cache = null;
      let r = await request('GET', path, { etag: cache ? cache.etag : '' });
      if (r.status === 304 && cache) {
        try {
          return { bookmarks: parseBookmarks(cache.body), cached: true };
        } catch {
          store.setCache(library, { base: '', etag: '', body: '' });
          r = await request('GET', path);
        }
      } else if (r.status === 304) {
        r = await request('GET', path);
      }
      if (r.status !== 200) throw errorFor(r.status, r.text);
      let bookmarks;
      try {
        bookmarks = parseBookmarks(r.text);
      } catch {
        throw new LecternError('bad-response', 'Lectern sent a Bookmarks reply this script cannot read.', r.status);
      }
      const etag = r.headers.etag || '';
      store.setCache(library, { base: etag ? origin + prefix : '', etag, body: etag ? r.text : '' });
      return { bookmarks, cached: false };
    },

    // resolve asks the server which Series a page belongs to.
    async resolve(pageURL) {
      const u = httpURL(pageURL);
      if (!u) throw new LecternError('unknown-page', 'This page has no http(s) address.');
      u.hash = '';
      const r = await request('GET', '/api/resolve?url=' + encodeURIComponent(u.href), { context: 'resolve' });
      if (r.status !== 200) throw errorFor(r.status, r.text, 'resolve');
      try {
        return parseRef(r.text);
      } catch {
        throw new LecternError('bad-response', 'Lectern sent a resolve reply this script cannot read.', r.status);
      }
    },

    // putBookmark records Progress; it returns the Bookmark the server answers
    // with, or null when that answer cannot be read (the write still happened).
    async putBookmark(key, body) {
      const r = await request('PUT', '/api/bookmarks/' + keyPath(key), { body });
      if (r.status !== 200 && r.status !== 201) throw errorFor(r.status, r.text);
      try {
        return normalizeBookmark(JSON.parse(r.text));
      } catch {
        return null;
      }
    },

    // suggestFor asks which of the Reader's Bookmarks look like the story of
    // a Series they do not hold yet (the panel's link offer); it returns the
    // body text for parseOffer, or '' from a server without Works (404).
    async suggestFor(key, title) {
      const q = '?key=' + encodeURIComponent(key) + '&title=' + encodeURIComponent(title || '');
      const r = await request('GET', '/api/works/suggestions' + q);
      if (r.status === 404) return '';
      if (r.status !== 200) throw errorFor(r.status, r.text);
      return r.text;
    },

    // linkWork makes a Work of two or more of the Reader's Bookmarks.
    async linkWork(keys) {
      const r = await request('POST', '/api/works', { body: { keys } });
      if (r.status !== 200 && r.status !== 201) throw errorFor(r.status, r.text);
    },

    // addToWork links one more Bookmark into the Reader's Work id.
    async addToWork(id, key) {
      const r = await request('POST', '/api/works/' + encodeURIComponent(id) + '/keys', { body: { key } });
      if (r.status !== 200 && r.status !== 201) throw errorFor(r.status, r.text);
    },

    // dismissSuggestion says a suggested pair is not one story; it is not
    // offered again.
    async dismissSuggestion(keys) {
      const r = await request('POST', '/api/works/suggestions/dismiss', { body: { keys } });
      if (r.status !== 204 && r.status !== 200) throw errorFor(r.status, r.text);
    },

    // deleteBookmark removes a Bookmark; one already gone counts as removed.
    async deleteBookmark(key) {
      const r = await request('DELETE', '/api/bookmarks/' + keyPath(key));
      if (r.status !== 204 && r.status !== 200 && r.status !== 404) throw errorFor(r.status, r.text);
    },
  };
}
