// Reading the wire tolerantly, choosing Cover or placeholder, and what the
// panel says about the current page.

import test from 'node:test';
import assert from 'node:assert/strict';

import { coverChoice, displayTitle, monogram, normalizeBookmark, parseBookmarks, parseRef, slugTitle, unreadBadge } from '../src/core/bookmarks.js';
import { describeCurrent, findBookmark, shouldAutoRecord } from '../src/core/current.js';
import { LecternError } from '../src/core/api.js';
import { httpURL, parseHeaders } from '../src/core/util.js';

const FULL = {
  key: 'comix:x7k2', site: 'comix', kind: 'manga', title: 'Full-Time Awakening',
  series_url: 'https://comix.to/title/x7k2-full-time-awakening', cover: 'https://lectern.test/covers/ab/cd/abcdef.jpg',
  chapter: 'Chapter 50', chapter_number: 50, chapter_url: 'https://comix.to/title/x7k2-full-time-awakening/1-chapter-50',
  progress_at: '2026-11-01T00:00:00Z', latest_chapter: 'Chapter 57', latest_chapter_number: 57,
  latest_chapter_url: 'https://comix.to/title/x7k2-full-time-awakening/2-chapter-57', latest_at: '2026-11-02T00:00:00Z',
  unread: 7, created_at: '2026-10-01T00:00:00Z', updated_at: '2026-11-02T00:00:00Z',
};

test('a newer server\'s additions are ignored and an older server\'s gaps defaulted', () => {
  const newer = parseBookmarks(JSON.stringify([{ ...FULL, rating: 5, tags: ['a'], cover_blurhash: 'LEHV6n', latest_chapter: { nested: true } }]));
  assert.equal(newer.length, 1);
  assert.equal(newer[0].title, 'Full-Time Awakening');
  assert.equal(newer[0].rating, undefined);
  assert.equal(newer[0].latest_chapter, '', 'a field of an unexpected type reads as empty');

  const older = parseBookmarks(JSON.stringify([{ key: 'novelfull:martial-peak', title: 'Martial Peak' }]));
  assert.deepEqual(older[0], {
    key: 'novelfull:martial-peak', site: '', kind: '', title: 'Martial Peak', series_url: '', cover: '',
    chapter: '', chapter_number: null, chapter_url: '', progress_at: '', latest_chapter: '', latest_chapter_number: null,
    latest_chapter_url: '', latest_at: '', unread: 0, created_at: '', updated_at: '',
    work: '', work_chapter: '', work_chapter_number: null, work_chapter_url: '', work_progress_site: '',
    work_latest_chapter: '', work_latest_chapter_number: null, work_latest_chapter_url: '', work_latest_site: '',
    gone: false, gone_reason: '',
  });
});

test('entries that cannot be shown are skipped; a body that is not a list is refused', () => {
  const got = parseBookmarks(JSON.stringify([null, 3, 'x', [], { title: 'no key' }, { key: '' }, FULL]));
  assert.deepEqual(got.map((b) => b.key), ['comix:x7k2']);
  assert.throws(() => parseBookmarks('{"bookmarks":[]}'));
  assert.throws(() => parseBookmarks('not json'));
});

test('unread reads a count or a flag, and falls back to the chapter numbers', () => {
  assert.equal(normalizeBookmark({ ...FULL, unread: 3 }).unread, 3);
  assert.equal(normalizeBookmark({ ...FULL, unread: -2 }).unread, 0);
  assert.equal(normalizeBookmark({ ...FULL, unread: true }).unread, true);
  const { unread: _, ...noUnread } = FULL;
  assert.equal(normalizeBookmark(noUnread).unread, true);
  assert.equal(normalizeBookmark({ ...noUnread, chapter_number: 57 }).unread, false);
  assert.equal(normalizeBookmark({ ...noUnread, chapter_number: null }).unread, 0);

  assert.equal(unreadBadge({ unread: 7 }), '7');
  assert.equal(unreadBadge({ unread: 12000 }), '999+');
  assert.equal(unreadBadge({ unread: true }), 'new');
  assert.equal(unreadBadge({ unread: 0 }), '');
  assert.equal(unreadBadge({ unread: false }), '');
});

test('the Cover src is the server\'s value exactly; "" and non-http(s) give the placeholder', () => {
  const odd = 'https://lectern.test/covers/ab/cd/ABC%20def.webp?x=1';
  assert.deepEqual(coverChoice(normalizeBookmark({ ...FULL, cover: odd })), { src: odd });
  assert.deepEqual(coverChoice(normalizeBookmark({ ...FULL, cover: '' })), { monogram: 'FA' });
  const { cover: _, ...noCover } = FULL;
  assert.deepEqual(coverChoice(normalizeBookmark(noCover)), { monogram: 'FA' });
  for (const bad of ['javascript:alert(1)', 'data:image/png;base64,AAAA', '/covers/ab/cd/x.jpg', 'blob:https://x/1', '  ', 'https://u:p@lectern.test/c.jpg']) {
    assert.ok(!('src' in coverChoice(normalizeBookmark({ ...FULL, cover: bad }))), bad);
  }
});

test('the monogram comes from the title, else the key\'s slug', () => {
  assert.equal(monogram('Solo Leveling'), 'SL');
  assert.equal(monogram('  the  beginning after the end '), 'TB');
  assert.equal(monogram('나 혼자만 레벨업'), '나혼');
  assert.equal(monogram('"Quoted" Title'), 'QT');
  assert.equal(monogram('', 'novelfull:martial-peak'), 'MP');
  assert.equal(monogram('', ''), '?');
  assert.equal(monogram('!!!'), '?');
});

test('resolve replies need a key, a site and an http(s) series_url', () => {
  assert.deepEqual(parseRef('{"key":"asura:a","site":"asura","kind":"manga","series_url":"https://asurascans.com/comics/a","extra":1}'),
    { key: 'asura:a', site: 'asura', kind: 'manga', series_url: 'https://asurascans.com/comics/a' });
  assert.throws(() => parseRef('{"key":"asura:a","site":"asura","series_url":"javascript:x"}'));
  assert.throws(() => parseRef('{"site":"asura","series_url":"https://asurascans.com/comics/a"}'));
  assert.throws(() => parseRef('[]'));
});

test('describeCurrent says what the page is and what may be done on it', () => {
  const ref = { key: 'comix:x7k2', site: 'comix', kind: 'manga', series_url: FULL.series_url };
  const chapterPage = { kind: 'chapter', title: 'Full-Time Awakening', chapter: { label: 'Chapter 57', number: 57, url: 'https://comix.to/title/x7k2-a/2-chapter-57' } };
  const bookmark = normalizeBookmark(FULL);

  const other = describeCurrent({ page: { kind: 'other', chapter: null, title: '' } });
  assert.equal(other.canRecord, false);
  assert.equal(other.code, 'other-page');

  const unknown = describeCurrent({ page: chapterPage, refError: new LecternError('unknown-page', 'Lectern does not know this page.') });
  assert.equal(unknown.code, 'unknown-page');
  assert.equal(unknown.chapter, 'Lectern does not know this page.');
  assert.equal(unknown.canRecord, false);

  const fresh = describeCurrent({ page: chapterPage, ref, bookmark: null });
  assert.deepEqual([fresh.canRecord, fresh.canRemove, fresh.progress, fresh.chapter], [true, false, 'Not bookmarked yet.', 'This page: Chapter 57']);

  const held = describeCurrent({ page: chapterPage, ref, bookmark });
  assert.deepEqual([held.canRecord, held.canRemove, held.progress], [true, true, 'Bookmarked: Chapter 50']);

  const unread = describeCurrent({ page: { ...chapterPage, chapter: null }, ref, bookmark });
  assert.equal(unread.canRecord, false);
  assert.equal(unread.chapter, 'Could not read the chapter on this page.');

  const series = describeCurrent({ page: { kind: 'series', title: 'X', chapter: null }, ref, bookmark });
  assert.equal(series.canRecord, false);
  assert.equal(series.canRemove, true);

  assert.equal(findBookmark([bookmark], 'comix:x7k2'), bookmark);
  assert.equal(findBookmark([bookmark], 'comix:other'), null);
  assert.equal(findBookmark([bookmark], ''), null);
});

test('automatic recording only moves a held Bookmark forward', () => {
  const page = (number, url = 'https://comix.to/title/x7k2-a/9-chapter-' + number) => ({ kind: 'chapter', title: '', chapter: { label: 'Chapter ' + number, number, url } });
  const held = normalizeBookmark(FULL);
  assert.equal(shouldAutoRecord(page(51), held), true);
  assert.equal(shouldAutoRecord(page(50), held), false);
  assert.equal(shouldAutoRecord(page(12), held), false, 'never backwards');
  assert.equal(shouldAutoRecord(page(51), null), false, 'browsing creates no Bookmark');
  assert.equal(shouldAutoRecord({ kind: 'series', chapter: null }, held), false);
  // Numbers unknown: a different chapter URL is new, the same one is not.
  const noNumbers = normalizeBookmark({ ...FULL, chapter_number: null });
  assert.equal(shouldAutoRecord(page(null, 'https://kagane.to/series/a/reader/b'), noNumbers), true);
  assert.equal(shouldAutoRecord(page(null, FULL.chapter_url), noNumbers), false);
  assert.equal(shouldAutoRecord(page(null, 'https://x.test/1'), normalizeBookmark({ ...FULL, chapter: '', chapter_number: null })), true);
});

test('httpURL accepts only absolute http(s) without credentials', () => {
  assert.ok(httpURL('https://lectern.test/covers/a.jpg'));
  assert.ok(httpURL('http://127.0.0.1:8080/x'));
  for (const bad of ['', 'javascript:alert(1)', '//evil.test/x', 'data:,x', 'https://a:b@x.test/', 'x'.repeat(5000), null, 7]) {
    assert.equal(httpURL(bad), null, String(bad).slice(0, 40));
  }
});

test('parseHeaders reads a GM header block', () => {
  assert.deepEqual(parseHeaders('ETag: "v1"\r\nX-Lectern-Version: 1.2.3\r\nset-cookie: a\r\nSet-Cookie: b\r\nbroken\r\n'), {
    etag: '"v1"', 'x-lectern-version': '1.2.3', 'set-cookie': 'a, b',
  });
  assert.deepEqual(parseHeaders(undefined), {});
});

test('the title shown is the Bookmark\'s, else the page\'s, else the slug\'s words, never the key', () => {
  const b = { key: 'asura:omniscient-readers-viewpoint-7f3k9a2b', title: '', series_url: 'https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b' };
  assert.equal(displayTitle({ ...b, title: 'Omniscient Reader' }, 'Other'), 'Omniscient Reader');
  assert.equal(displayTitle(b, "Omniscient Reader's Viewpoint"), "Omniscient Reader's Viewpoint");
  assert.equal(displayTitle(b), 'Omniscient Readers Viewpoint');
  assert.equal(slugTitle('https://comix.to/title/r8k2m-the-greatest-estate-developer'), 'The Greatest Estate Developer');
  assert.equal(slugTitle('https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3'), '');
  assert.equal(slugTitle('https://asurascans.com/comics/the-99th-regression-3b8c9d0e'), 'The 99th Regression');
  assert.equal(displayTitle({ key: 'kagane:0199a4c2', title: '', series_url: 'https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3' }), 'Untitled');
});
