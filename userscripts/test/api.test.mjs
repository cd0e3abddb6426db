// The API client against a real loopback server, through a GM_xmlhttpRequest
// shim over fetch (what the end-to-end harness will also use).

import { gzipSync } from 'node:zlib';
import test from 'node:test';
import assert from 'node:assert/strict';

import { createClient, keyPath, progressBody } from '../src/core/api.js';
import { createStore } from '../src/core/store.js';
import { apiServer, closedPort, gmShim } from './helpers.mjs';

const TOKEN = 'lt_0123456789abcdefSECRET';

function bookmark(over = {}) {
  return {
    key: 'asura:solo-leveling', site: 'asura', kind: 'manga', title: 'Solo Leveling',
    series_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34', cover: '',
    chapter: 'Chapter 100', chapter_number: 100, chapter_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/100',
    progress_at: '2026-11-01T10:00:00Z', latest_chapter: 'Chapter 105', latest_chapter_number: 105,
    latest_chapter_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/105', latest_at: '2026-11-20T10:00:00Z',
    unread: 5, created_at: '2026-10-01T10:00:00Z', updated_at: '2026-11-20T10:00:00Z', ...over,
  };
}

async function setup(t, handler, { token = TOKEN, base } = {}) {
  const srv = await apiServer(handler);
  t.after(() => srv.close());
  const shim = gmShim();
  const store = createStore(shim.gm);
  if (token) store.setToken(token);
  const client = createClient({ baseURL: base ?? srv.base, xhr: shim.gm.xhr, store, client: 'lectern-manga/0.1.0', timeout: 5000 });
  return { srv, shim, store, client };
}

test('every request carries the token in the Authorization header and nowhere else', async (t) => {
  const { srv, shim, client } = await setup(t, (r) => {
    if (r.url.startsWith('/api/resolve')) return { body: { key: 'asura:solo-leveling', site: 'asura', kind: 'manga', series_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34' } };
    if (r.url.startsWith('/api/bookmarks?')) return { body: [bookmark()], headers: { etag: '"v1"' } };
    if (r.method === 'PUT') return { status: 201, body: bookmark() };
    if (r.method === 'DELETE') return { status: 204 };
    return undefined;
  });
  await client.resolve('https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/105?x=1#top');
  await client.listBookmarks('manga');
  await client.putBookmark('asura:solo-leveling', { site: 'asura', series_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34', chapter: 'Chapter 105' });
  await client.deleteBookmark('asura:solo-leveling');

  assert.equal(srv.seen.length, 4);
  for (const r of srv.seen) {
    assert.equal(r.headers.authorization, `Bearer ${TOKEN}`, `${r.method} ${r.url}`);
    assert.equal(r.headers['x-lectern-client'], 'lectern-manga/0.1.0');
    assert.ok(!r.url.includes(TOKEN) && !r.url.includes(encodeURIComponent(TOKEN)), `token in URL ${r.url}`);
    assert.ok(!r.body.includes(TOKEN), 'token in body');
  }
  for (const d of shim.requests) {
    assert.equal(new URL(d.url).origin, srv.base, 'request left the deployment');
    assert.ok(!d.url.includes(TOKEN));
    assert.equal(d.anonymous, true, 'cookies must not ride along');
  }
  // The page's URL goes in the query, without its fragment; the Site is never contacted.
  assert.equal(srv.seen[0].url, '/api/resolve?url=' + encodeURIComponent('https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/105?x=1'));
  assert.deepEqual(srv.seen.map((r) => `${r.method} ${r.url.split('?')[0]}`), [
    'GET /api/resolve', 'GET /api/bookmarks', 'PUT /api/bookmarks/asura:solo-leveling', 'DELETE /api/bookmarks/asura:solo-leveling',
  ]);
});

test('a deployment base URL with a path prefix is kept', async (t) => {
  const { srv, shim, store } = await setup(t, () => ({ body: [] }));
  const prefixed = createClient({ baseURL: srv.base + '/lectern/', xhr: shim.gm.xhr, store });
  await prefixed.listBookmarks('novel');
  assert.equal(srv.seen[0].url, '/lectern/api/bookmarks?kind=novel');
});

test('without a token or a deployment nothing is sent', async (t) => {
  const { srv, client } = await setup(t, () => ({ body: [] }), { token: '' });
  await assert.rejects(client.listBookmarks('manga'), { code: 'no-token' });
  await assert.rejects(client.resolve('https://comix.to/title/x7k2-a'), { code: 'no-token' });

  for (const base of ['__LECTERN_' + 'BASE_URL__', '', 'javascript:alert(1)', 'ftp://lectern.test', 'https://user:pw@lectern.test']) {
    const shim = gmShim();
    const store = createStore(shim.gm);
    store.setToken(TOKEN);
    const c = createClient({ baseURL: base, xhr: shim.gm.xhr, store });
    await assert.rejects(c.listBookmarks('manga'), { code: 'not-configured' }, base);
    assert.equal(shim.requests.length, 0, base);
  }
  assert.equal(srv.seen.length, 0);
});

test('the list is fetched conditionally: a 304 re-reads the kept body, a change replaces it', async (t) => {
  let version = 1;
  const bodies = { 1: [bookmark()], 2: [bookmark({ chapter: 'Chapter 105', chapter_number: 105, unread: 0 })] };
  const { srv, client, store } = await setup(t, (r) => {
    const etag = `"v${version}"`;
    if (r.headers['if-none-match'] === etag) return { status: 304, headers: { etag } };
    return { body: bodies[version], headers: { etag } };
  });

  const first = await client.listBookmarks('manga');
  assert.equal(first.cached, false);
  assert.equal(first.bookmarks[0].chapter, 'Chapter 100');
  assert.equal(srv.seen[0].headers['if-none-match'], undefined);

  const second = await client.listBookmarks('manga');
  assert.equal(second.cached, true);
  assert.deepEqual(second.bookmarks, first.bookmarks);
  assert.equal(srv.seen[1].headers['if-none-match'], '"v1"');
  assert.equal(srv.seen[1].sentBytes, 0, 'a 304 carries no body');
  assert.ok(srv.seen[0].sentBytes > 0);

  version = 2;
  const third = await client.listBookmarks('manga');
  assert.equal(third.cached, false);
  assert.equal(third.bookmarks[0].chapter, 'Chapter 105');
  assert.equal(srv.seen[2].headers['if-none-match'], '"v1"');

  // The kept body survives a page load (a new client over the same storage)...
  const nextPageLoad = createClient({ baseURL: srv.base, xhr: gmShim().gm.xhr, store });
  const fourth = await nextPageLoad.listBookmarks('manga');
  assert.equal(fourth.cached, true);
  assert.equal(fourth.bookmarks[0].chapter, 'Chapter 105');
  assert.equal(srv.seen[3].headers['if-none-match'], '"v2"');

  // ...but not a change of token: the next request is unconditional.
  store.setToken('lt_another-readers-token');
  await client.listBookmarks('manga');
  assert.equal(srv.seen[4].headers['if-none-match'], undefined);
  assert.equal(srv.seen[4].headers.authorization, 'Bearer lt_another-readers-token');
});

test('each Library keeps its own ETag, and another deployment\'s is not reused', async (t) => {
  const { srv, shim, store, client } = await setup(t, (r) => ({ body: [], headers: { etag: r.url.includes('novel') ? '"n1"' : '"m1"' } }));
  await client.listBookmarks('manga');
  await client.listBookmarks('novel');
  await client.listBookmarks('novel');
  assert.equal(srv.seen[2].headers['if-none-match'], '"n1"');

  const other = await apiServer(() => ({ body: [], headers: { etag: '"m1"' } }));
  t.after(() => other.close());
  const elsewhere = createClient({ baseURL: other.base, xhr: shim.gm.xhr, store });
  await elsewhere.listBookmarks('manga');
  assert.equal(other.seen[0].headers['if-none-match'], undefined);
});

test('a kept body that cannot be read is dropped for a full request', async (t) => {
  const { srv, store, client } = await setup(t, (r) => (r.headers['if-none-match'] ? { status: 304 } : { body: [bookmark()], headers: { etag: '"v1"' } }));
  store.setCache('manga', { base: srv.base, etag: '"v1"', body: '{not json' });
  const got = await client.listBookmarks('manga');
  assert.equal(got.cached, false);
  assert.equal(got.bookmarks[0].key, 'asura:solo-leveling');
  assert.deepEqual(srv.seen.map((r) => r.headers['if-none-match']), ['"v1"', undefined]);
});

test('errors map to messages the Reader can act on', async (t) => {
  const answers = {
    '/api/bookmarks?kind=manga': { status: 401, body: { error: 'unknown token' } },
    '/api/bookmarks/asura:x': { status: 422, body: { error: 'key must be asura:solo-leveling for that series_url' } },
    '/api/bookmarks?kind=novel': { status: 503, body: 'upstream down' },
  };
  const { client } = await setup(t, (r) => {
    if (r.url.startsWith('/api/resolve')) {
      const u = decodeURIComponent(r.url.split('url=')[1]);
      if (u.includes('example.com')) return { status: 422, body: { error: 'not a page of a supported Site' } };
      if (u.includes('/gone')) return { status: 404, body: { error: 'not found' } };
      if (u.includes('/boom')) return { status: 500, body: { error: 'database is down' } };
      return { body: '<html>not json' };
    }
    return answers[r.url];
  });
  await assert.rejects(client.listBookmarks('manga'), (e) => e.code === 'unauthorized' && e.status === 401 && /token/.test(e.message));
  await assert.rejects(client.resolve('https://example.com/x'), (e) => e.code === 'unknown-page' && /not a page of a supported Site/.test(e.message));
  await assert.rejects(client.resolve('https://comix.to/gone'), { code: 'unknown-page' });
  await assert.rejects(client.resolve('https://comix.to/boom'), (e) => e.code === 'server' && /500/.test(e.message) && /database is down/.test(e.message));
  await assert.rejects(client.resolve('https://comix.to/title/x7k2-a'), { code: 'bad-response' });
  await assert.rejects(client.putBookmark('asura:x', { site: 'asura' }), (e) => e.code === 'request' && /key must be asura:solo-leveling/.test(e.message));
  await assert.rejects(client.listBookmarks('novel'), (e) => e.code === 'server' && e.status === 503);
});

test('an unreachable or silent deployment is named as such', async (t) => {
  const shim = gmShim();
  const store = createStore(shim.gm);
  store.setToken(TOKEN);
  const down = await closedPort();
  const c = createClient({ baseURL: down, xhr: shim.gm.xhr, store });
  await assert.rejects(c.listBookmarks('manga'), (e) => e.code === 'unreachable' && e.message.includes(down) && /could not be reached/.test(e.message));

  const { srv } = await setup(t, () => ({ hang: true }));
  const slow = createClient({ baseURL: srv.base, xhr: shim.gm.xhr, store, timeout: 200 });
  await assert.rejects(slow.listBookmarks('manga'), (e) => e.code === 'unreachable' && /did not answer in time/.test(e.message));
});

test('a reply that ends on another origin is refused', async (t) => {
  const other = await apiServer(() => ({ body: [] }));
  t.after(() => other.close());
  const { client } = await setup(t, () => ({ status: 302, headers: { location: other.base + '/api/bookmarks?kind=manga' } }));
  await assert.rejects(client.listBookmarks('manga'), { code: 'redirected' });
});

test('bad bodies on a 200 are refused, not rendered', async (t) => {
  for (const body of ['{"key":"a:b"}', 'null', '<html>', '']) {
    const { client } = await setup(t, () => ({ body }));
    await assert.rejects(client.listBookmarks('manga'), { code: 'bad-response' }, body);
  }
});

test('the server version header is read when present', async (t) => {
  let withHeader = false;
  const { client } = await setup(t, () => ({ body: [], headers: withHeader ? { 'x-lectern-version': '1.4.2' } : {} }));
  await client.listBookmarks('manga');
  assert.equal(client.serverVersion, '');
  withHeader = true;
  await client.listBookmarks('manga');
  assert.equal(client.serverVersion, '1.4.2');
});

test('PUT sends the Progress body as given and returns the server\'s Bookmark', async (t) => {
  const { srv, client } = await setup(t, () => ({ status: 201, body: bookmark({ chapter: 'Chapter 105', brand_new_field: { x: 1 } }) }));
  const body = progressBody(
    { key: 'asura:solo-leveling', site: 'asura', kind: 'manga', series_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34' },
    { title: 'Solo Leveling', chapter: { label: 'Chapter 105', number: 105, url: 'https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/105' } },
  );
  const b = await client.putBookmark('asura:solo-leveling', body);
  assert.equal(b.chapter, 'Chapter 105');
  assert.equal(b.brand_new_field, undefined);
  assert.equal(srv.seen[0].headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(srv.seen[0].body), {
    site: 'asura', series_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34', chapter: 'Chapter 105', title: 'Solo Leveling',
    chapter_url: 'https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/105', chapter_number: 105,
  });
});

test('progressBody never carries a cover and leaves out what the page did not give', () => {
  const ref = { key: 'kagane:x', site: 'kagane', kind: 'manga', series_url: 'https://kagane.to/series/x', cover: 'https://evil.test/c.jpg' };
  const body = progressBody(ref, { title: '', chapter: { label: 'Prologue', number: null, url: 'https://kagane.to/series/x/reader/y' } });
  assert.deepEqual(body, { site: 'kagane', series_url: 'https://kagane.to/series/x', chapter: 'Prologue', chapter_url: 'https://kagane.to/series/x/reader/y' });
  assert.ok(!('cover' in body));
});

test('DELETE treats an already removed Bookmark as removed', async (t) => {
  const { client } = await setup(t, () => ({ status: 404, body: { error: 'no such bookmark' } }));
  await client.deleteBookmark('comix:x7k2');
  const { client: c2 } = await setup(t, () => ({ status: 500, body: { error: 'boom' } }));
  await assert.rejects(c2.deleteBookmark('comix:x7k2'), { code: 'server' });
});

test('keyPath keeps ":" and encodes what would change the path', () => {
  assert.equal(keyPath('asura:solo-leveling'), 'asura:solo-leveling');
  assert.equal(keyPath('demonic:Tom%27s-Tale'), 'demonic:Tom%2527s-Tale');
  assert.equal(keyPath('x:a/../b?c#d'), 'x:a%2F..%2Fb%3Fc%23d');
});

test('requests accept compressed bodies, which the manager decodes', async (t) => {
  const { srv, client } = await setup(t, (r) => ({
    raw: gzipSync(JSON.stringify([bookmark()])),
    headers: { 'content-encoding': 'gzip', etag: '"v1-gzip"', vary: 'Accept-Encoding' },
  }));
  const { bookmarks } = await client.listBookmarks('manga');
  assert.equal(bookmarks.length, 1);
  assert.equal(bookmarks[0].key, bookmark().key);
  assert.match(srv.seen[0].headers['accept-encoding'], /gzip/);
  assert.match(srv.seen[0].headers['accept-encoding'], /zstd/);
  assert.ok(srv.seen[0].sentBytes < JSON.stringify([bookmark()]).length, 'the body went compressed');
});
