// Works in the panel: the Work line of a Bookmark in a Work, the gone line,
// and the "Same story as …? Link" offer for a Series not held yet (read from
// the wire; the requests against a real loopback server).

import test from 'node:test';
import assert from 'node:assert/strict';

import { normalizeBookmark } from '../src/core/bookmarks.js';
import { createClient } from '../src/core/api.js';
import { describeCurrent } from '../src/core/current.js';
import { createStore } from '../src/core/store.js';
import { goneLine, offerText, parseOffer, workLine, workLineText } from '../src/core/work.js';
import { apiServer, gmShim } from './helpers.mjs';

const DEMONIC = 'https://demonicscans.org/manga/Omniscient-Readers-Viewpoint';

// A demonic Bookmark in a Work whose Progress (250) was read on asura;
// demonic has 251.
function member(over = {}) {
  return normalizeBookmark({
    key: 'demonic:Omniscient-Readers-Viewpoint', site: 'demonic', kind: 'manga', title: "Omniscient Reader's Viewpoint",
    series_url: DEMONIC, chapter: '', chapter_number: null, chapter_url: '',
    latest_chapter: 'Chapter 251', latest_chapter_number: 251, latest_chapter_url: 'https://demonicscans.org/chaptered.php?manga=5120&chapter=251',
    unread: true,
    work: '7', work_chapter: 'Chapter 250', work_chapter_number: 250,
    work_chapter_url: 'https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/250', work_progress_site: 'asura',
    work_latest_chapter: 'Chapter 251', work_latest_chapter_number: 251,
    work_latest_chapter_url: 'https://demonicscans.org/chaptered.php?manga=5120&chapter=251', work_latest_site: 'demonic',
    gone: false, gone_reason: '',
    ...over,
  });
}

test('the Work line says where the Work was read, what this Site has and where to continue', () => {
  const segs = workLine(member());
  assert.equal(workLineText(segs), 'Chapter 250, read on asura · this Site has Chapter 251 → continue at 251');
  const cont = segs.find((s) => s.testid === 'lectern-work-continue');
  assert.equal(cont.url, 'https://demonicscans.org/chaptered.php?manga=5120&chapter=251', 'the next chapter is this Site\'s newest: linked');
  assert.equal(segs.find((s) => s.testid === 'lectern-work-progress').url, 'https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/250');

  // Further ahead: the next chapter is not the newest, so the Series page
  // (whose list has it) is the link.
  const behind = workLine(member({ work_chapter: 'Chapter 120', work_chapter_number: 120, latest_chapter: 'Chapter 125', latest_chapter_number: 125 }));
  assert.equal(workLineText(behind), 'Chapter 120, read on asura · this Site has Chapter 125 → continue at 121');
  assert.equal(behind.find((s) => s.testid === 'lectern-work-continue').url, DEMONIC);

  // A half chapter comes before the next whole one.
  assert.match(workLineText(workLine(member({ latest_chapter: 'Chapter 250.5', latest_chapter_number: 250.5, work_latest_chapter_number: 250.5 }))), /continue at 250\.5$/);
});

test('the Work line on the Site it was read on, caught up, and without numbers', () => {
  const here = workLine(member({ site: 'asura', latest_chapter: 'Chapter 250', latest_chapter_number: 250 }));
  assert.equal(workLineText(here), 'Chapter 250, read here · this Site has Chapter 250, nothing new here · newest: Chapter 251 on demonic');
  assert.equal(here.find((s) => s.testid === 'lectern-work-newest').url, 'https://demonicscans.org/chaptered.php?manga=5120&chapter=251');

  const bare = workLine(member({ work_chapter_number: null, latest_chapter_number: null, work_latest_chapter_number: null }));
  assert.equal(workLineText(bare), 'Chapter 250, read on asura · this Site has Chapter 251', 'no numbers: nothing is claimed about continuing');

  assert.equal(workLineText(workLine(member({ work_chapter: '', work_chapter_number: null }))), 'Nothing read yet in this Work · this Site has Chapter 251');
  assert.equal(workLine(member({ work: '' })), null, 'no Work, no line');
  assert.equal(workLine(normalizeBookmark({ key: 'asura:x' })), null, 'an older server sends no Work fields');
});

test('hostile labels stay text and links only ever come from http(s) addresses', () => {
  const segs = workLine(member({ work_chapter: '<img src=x onerror=alert(1)>', work_chapter_url: 'javascript:alert(1)', work_progress_site: 'asura' }));
  assert.equal(segs[0].text, '<img src=x onerror=alert(1)>', 'a label is text; the panel sets it with textContent');
  assert.equal(segs[0].url, 'javascript:alert(1)', 'kept as sent: the panel draws a non-http(s) url as plain text');
});

test('a gone Series says why and points to the Work\'s other Site', () => {
  const gone = goneLine(member({ site: 'asura', gone: true, gone_reason: 'the series page answers 404' }));
  assert.equal(workLineText(gone), 'Gone from asura: the series page answers 404 · continue on demonic');
  assert.equal(gone.find((s) => s.testid === 'lectern-gone-elsewhere').url, 'https://demonicscans.org/chaptered.php?manga=5120&chapter=251');
  assert.equal(workLineText(goneLine(member({ gone: true, gone_reason: '', work: '' }))), 'Gone from demonic');
  assert.equal(goneLine(member()), null);
});

const HELD = [normalizeBookmark({
  key: 'asura:omniscient-readers-viewpoint', site: 'asura', kind: 'manga', title: "Omniscient Reader's Viewpoint",
  series_url: 'https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b', chapter: 'Chapter 250', chapter_number: 250, work: '',
})];
const CURRENT = 'demonic:Omniscient-Readers-Viewpoint';

test('the offer names the Reader\'s own Bookmark of the same story, from any of the reply\'s shapes', () => {
  const want = { key: 'asura:omniscient-readers-viewpoint', title: "Omniscient Reader's Viewpoint", site: 'asura', work: '', evidence: ['same title'] };
  for (const body of [
    [{ key: 'asura:omniscient-readers-viewpoint', evidence: ['same title'] }],
    [{ keys: [CURRENT, 'asura:omniscient-readers-viewpoint'], titles: ["Omniscient Reader's Viewpoint", 'x'], sites: ['demonic', 'asura'],
      work: '', evidence: [{ kind: 'same_title', detail: "omniscient reader's viewpoint" }] }],
    { suggestions: [{ keys: [CURRENT, 'asura:omniscient-readers-viewpoint'], evidence: 'same title' }] },
    [{ bookmark: { key: 'asura:omniscient-readers-viewpoint', title: 'ignored: the list has it' }, evidence: [{ kind: 'same_title' }] }],
  ]) {
    assert.deepEqual(parseOffer(JSON.stringify(body), CURRENT, HELD), want, JSON.stringify(body));
  }
  // A held Bookmark in a Work: the offer joins that Work.
  const inWork = [{ ...HELD[0], work: '9' }];
  assert.equal(parseOffer('[{"key":"asura:omniscient-readers-viewpoint"}]', CURRENT, inWork).work, '9');
  // Not in the loaded list: the reply's own title and Site.
  assert.deepEqual(parseOffer('[{"key":"comix:abc-orv","title":"ORV","site":"comix","work":"3"}]', CURRENT, HELD),
    { key: 'comix:abc-orv', title: 'ORV', site: 'comix', work: '3', evidence: [] });
  assert.deepEqual(parseOffer(JSON.stringify([{ keys: [CURRENT, 'comix:abc-orv'], titles: ['', 'ORV'], sites: ['demonic', 'comix'], work: '3',
    evidence: [{ kind: 'alt_title' }, { kind: 'tracker' }] }]), CURRENT, HELD),
  { key: 'comix:abc-orv', title: 'ORV', site: 'comix', work: '3', evidence: ['alternative title', 'same tracker entry'] });
  assert.equal(offerText(want), "Same story as Omniscient Reader's Viewpoint on asura?");
});

test('no offer from an empty, odd or self-naming reply', () => {
  for (const text of ['[]', '{}', 'null', 'not json', '[null, 3, "x"]', `[{"key":"${CURRENT}"}]`, `[{"keys":["${CURRENT}"]}]`]) {
    assert.equal(parseOffer(text, CURRENT, HELD), null, text);
  }
});

test('the panel shows the Work line for a held Bookmark and the offer only for a Series not held', () => {
  const ref = { key: CURRENT, site: 'demonic', kind: 'manga', series_url: DEMONIC };
  const page = { kind: 'series', title: "Omniscient Reader's Viewpoint", chapter: null };
  const offer = parseOffer('[{"key":"asura:omniscient-readers-viewpoint","evidence":["same title"]}]', CURRENT, HELD);

  const notHeld = describeCurrent({ page, ref, bookmark: null, offer });
  assert.deepEqual(notHeld.offer, { text: "Same story as Omniscient Reader's Viewpoint on asura?", evidence: 'same title' });
  assert.equal(notHeld.work, null);

  const held = describeCurrent({ page, ref, bookmark: member(), offer });
  assert.equal(held.offer, null, 'a held Series is not offered');
  assert.equal(workLineText(held.work), 'Chapter 250, read on asura · this Site has Chapter 251 → continue at 251');
  assert.equal(held.gone, null);

  assert.equal(describeCurrent({ page, ref, bookmark: null }).offer, null);
});

async function setup(t, handler) {
  const srv = await apiServer(handler);
  t.after(() => srv.close());
  const shim = gmShim();
  const store = createStore(shim.gm);
  store.setToken('lt_0123456789abcdefSECRET');
  return { srv, client: createClient({ baseURL: srv.base, xhr: shim.gm.xhr, store, timeout: 5000 }) };
}

test('the client asks for suggestions by key and title and links through the Works routes', async (t) => {
  const { srv, client } = await setup(t, (r) => {
    if (r.url.startsWith('/api/works/suggestions?')) return { body: [{ key: 'asura:omniscient-readers-viewpoint', evidence: ['same title'] }] };
    if (r.method === 'POST' && r.url === '/api/works') return { status: 201, body: { id: '7', keys: JSON.parse(r.body).keys } };
    if (r.method === 'POST' && r.url === '/api/works/7/keys') return { status: 200, body: { id: '7' } };
    if (r.method === 'POST' && r.url === '/api/works/suggestions/dismiss') return { status: 204 };
    return undefined;
  });
  const text = await client.suggestFor(CURRENT, "Omniscient Reader's Viewpoint");
  assert.equal(parseOffer(text, CURRENT, HELD).key, 'asura:omniscient-readers-viewpoint');
  await client.linkWork(['asura:omniscient-readers-viewpoint', CURRENT]);
  await client.addToWork('7', CURRENT);
  await client.dismissSuggestion(['asura:omniscient-readers-viewpoint', CURRENT]);

  const u = new URL(srv.base + srv.seen[0].url);
  assert.deepEqual([u.pathname, u.searchParams.get('key'), u.searchParams.get('title')], ['/api/works/suggestions', CURRENT, "Omniscient Reader's Viewpoint"]);
  assert.deepEqual(JSON.parse(srv.seen[1].body), { keys: ['asura:omniscient-readers-viewpoint', CURRENT] });
  assert.deepEqual(JSON.parse(srv.seen[2].body), { key: CURRENT });
  assert.deepEqual([srv.seen[3].url, JSON.parse(srv.seen[3].body)], ['/api/works/suggestions/dismiss', { keys: ['asura:omniscient-readers-viewpoint', CURRENT] }]);
  for (const r of srv.seen) assert.equal(r.headers.authorization, 'Bearer lt_0123456789abcdefSECRET');
});

test('a server without Works offers nothing; a refused link says why', async (t) => {
  const { client } = await setup(t, (r) => {
    if (r.url.startsWith('/api/works/suggestions')) return { status: 404, body: { error: 'not found' } };
    if (r.url === '/api/works') return { status: 422, body: { error: 'asura:x is already in another Work' } };
    return undefined;
  });
  assert.equal(await client.suggestFor(CURRENT, ''), '');
  await assert.rejects(client.linkWork(['asura:x', CURRENT]), (err) => err.status === 422 && /already in another Work/.test(err.message));
});
