// Site adapters: page kind, chapter label and number, and Series title, from
// representative URLs, titles and headings. The page shapes follow
// /work/shared/sites.md (public parsers of these Sites, November 2026); none was
// checked against a live Site.

import test from 'node:test';
import assert from 'node:assert/strict';

import { readPage, siteForHost } from '../src/core/adapter.js';
import { asura } from '../src/sites/asura.js';
import { demonic } from '../src/sites/demonic.js';
import { comix } from '../src/sites/comix.js';
import { kagane } from '../src/sites/kagane.js';
import { mangadex } from '../src/sites/mangadex.js';
import { webtoons } from '../src/sites/webtoons.js';
import { lightnovelworld } from '../src/sites/lightnovelworld.js';
import { novelfull } from '../src/sites/novelfull.js';
import { royalroad } from '../src/sites/royalroad.js';
import { stubPage } from './helpers.mjs';

const ALL = [asura, demonic, comix, kagane, mangadex, webtoons, lightnovelworld, novelfull, royalroad];
const U1 = '3f2b1c9e-8d7a-4b6c-9e1f-0a2b3c4d5e6f';
const U2 = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';

// Each case: [site, href, page {title, texts}, want]. want.chapter is
// { label, number } (url is checked separately), or null.
const cases = [
  // asura, current host: Astro pages, the number in the URL.
  [asura, 'https://asurascans.com/comics/solo-leveling-ab12cd34', { title: 'Solo Leveling | Asura Scans', texts: { h1: 'Solo Leveling' } },
    { kind: 'series', chapter: null, title: 'Solo Leveling' }],
  [asura, 'https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/105', { title: 'Solo Leveling Chapter 105 - Asura Scans' },
    { kind: 'chapter', chapter: { label: 'Chapter 105', number: 105 }, title: 'Solo Leveling' }],
  [asura, 'https://www.asurascans.com/comics/solo-leveling-ab12cd34/chapter/105', { title: 'Solo Leveling Chapter 105 - Asura Scans', texts: { h1: 'Chapter 105 - Arise' } },
    { kind: 'chapter', chapter: { label: 'Chapter 105 - Arise', number: 105 }, title: 'Solo Leveling' }],
  // A heading left over from the previous chapter loses to the URL.
  [asura, 'https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/106', { title: 'Solo Leveling Chapter 105 - Asura Scans', texts: { h1: 'Chapter 105' } },
    { kind: 'chapter', chapter: { label: 'Chapter 106', number: 106 }, title: 'Solo Leveling' }],
  [asura, 'https://asurascans.com/comics/nano-machine-0a1b2c3d/chapter/12.5', { title: '' },
    { kind: 'chapter', chapter: { label: 'Chapter 12.5', number: 12.5 }, title: '' }],
  // asura, old host: /series/ and prefix-less chapter links.
  [asura, 'https://asuracomic.net/series/nano-machine-0a1b2c3d/chapter/7', { title: 'Nano Machine - Chapter 7 - Asura Scans' },
    { kind: 'chapter', chapter: { label: 'Chapter 7', number: 7 }, title: 'Nano Machine' }],
  [asura, 'https://asuracomic.net/nano-machine-0a1b2c3d/chapter/7', { title: '' },
    { kind: 'chapter', chapter: { label: 'Chapter 7', number: 7 }, title: '' }],
  [asura, 'https://asurascans.com/', { title: 'Asura Scans' }, { kind: 'other', chapter: null, title: '' }],
  [asura, 'https://asurascans.com/comics', { title: 'Asura Scans' }, { kind: 'other', chapter: null, title: '' }],
  [asura, 'https://asurascans.com/comics/x-ab12cd34/chapter', {}, { kind: 'other', chapter: null, title: '' }],

  // demonic: the reader URL carries the number; the Series title also follows from the URL.
  [demonic, 'https://demonicscans.org/manga/The-Beginning-After-The-End', { title: 'Demonic Scans', texts: { 'h1.big-fat-titles': 'The Beginning After The End' } },
    { kind: 'series', chapter: null, title: 'The Beginning After The End' }],
  [demonic, 'https://demonicscans.org/title/The-Beginning-After-The-End/chapter/175/1718', { title: '' },
    { kind: 'chapter', chapter: { label: 'Chapter 175', number: 175 }, title: 'The Beginning After The End' }],
  [demonic, 'https://demonicscans.org/title/Martial-Peak/chapter/3/99', { title: 'Martial Peak Chapter 3 | Demonic Scans' },
    { kind: 'chapter', chapter: { label: 'Chapter 3', number: 3 }, title: 'Martial Peak' }],
  [demonic, 'https://demonicscans.org/chaptered.php?manga=123&chapter=12', { title: '' },
    { kind: 'chapter', chapter: { label: 'Chapter 12', number: 12 }, title: '' }],
  [demonic, 'https://demonicscans.org/lastupdates.php', { title: 'Demonic Scans' }, { kind: 'other', chapter: null, title: '' }],

  // comix: /title/<hid>-<slug>/<id>-chapter-<n>.
  [comix, 'https://comix.to/title/x7k2-full-time-awakening', { title: 'Full-Time Awakening - Comix' },
    { kind: 'series', chapter: null, title: 'Full-Time Awakening' }],
  [comix, 'https://comix.to/title/x7k2-full-time-awakening/5551234-chapter-57', { title: 'Full-Time Awakening Chapter 57 - Comix' },
    { kind: 'chapter', chapter: { label: 'Chapter 57', number: 57 }, title: 'Full-Time Awakening' }],
  [comix, 'https://comix.ws/title/x7k2-full-time-awakening/5551299-chapter-57.5', { title: '' },
    { kind: 'chapter', chapter: { label: 'Chapter 57.5', number: 57.5 }, title: '' }],
  [comix, 'https://comix.to/title/x7k2-full-time-awakening/reviews', {}, { kind: 'other', chapter: null, title: '' }],
  [comix, 'https://comix.to/home', {}, { kind: 'other', chapter: null, title: '' }],

  // kagane: the reader URL names a book, so the label comes from the title or a heading.
  [kagane, `https://kagane.to/series/${U1}`, { title: 'Omniscient Reader | Kagane', texts: { h1: 'Omniscient Reader' } },
    { kind: 'series', chapter: null, title: 'Omniscient Reader' }],
  [kagane, `https://kagane.to/series/${U1}/reader/${U2}`, { title: 'Omniscient Reader - Chapter 203 | Kagane' },
    { kind: 'chapter', chapter: { label: 'Chapter 203', number: 203 }, title: 'Omniscient Reader' }],
  [kagane, `https://kagane.org/series/${U1}/reader/${U2}`, { title: 'Kagane', texts: { h1: 'Omniscient Reader', h2: 'Ch. 12: Escape' } },
    { kind: 'chapter', chapter: { label: 'Ch. 12: Escape', number: 12 }, title: '' }],
  [kagane, `https://kagane.to/series/${U1}/reader/${U2}`, { title: 'Kagane', texts: { h1: 'Prologue' } },
    { kind: 'chapter', chapter: { label: 'Prologue', number: null }, title: '' }],
  [kagane, `https://kagane.to/series/${U1}/reader/${U2}`, { title: 'Kagane' }, { kind: 'chapter', chapter: null, title: '' }],
  [kagane, 'https://kagane.to/series/not-a-uuid', {}, { kind: 'other', chapter: null, title: '' }],

  // mangadex: the reader names a chapter, not its manga.
  [mangadex, `https://mangadex.org/title/${U1}/tourou-no-deshi`, { title: 'Tourou no Deshi - MangaDex', texts: { '.title p': "The Lantern Keeper's Apprentice" } },
    { kind: 'series', chapter: null, title: "The Lantern Keeper's Apprentice" }],
  [mangadex, `https://mangadex.org/chapter/${U2}`, {
    title: "Ch. 10.5 - Side Story - The Lantern Keeper's Apprentice - MangaDex",
    texts: { '.reader--header-chapter': 'Ch. 10.5', '.reader--header-title': 'Side Story', 'a.reader--header-manga': "The Lantern Keeper's Apprentice" },
  }, { kind: 'chapter', chapter: { label: 'Ch. 10.5', number: 10.5 }, title: "The Lantern Keeper's Apprentice" }],
  [mangadex, `https://mangadex.org/chapter/${U2}`, { title: 'MangaDex', texts: { '.reader--header-title': 'Oneshot' } },
    { kind: 'chapter', chapter: { label: 'Oneshot', number: null }, title: '' }],
  [mangadex, `https://mangadex.org/title/not-a-uuid`, {}, { kind: 'other', chapter: null, title: '' }],
  [mangadex, 'https://mangadex.org/titles/latest', {}, { kind: 'other', chapter: null, title: '' }],

  // webtoons: title_no names the Series, episode_no the episode's number.
  [webtoons, 'https://www.webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710', {
    title: 'The Salt Cartographer | WEBTOON', texts: { '.detail_header .info h1.subj': 'The Salt Cartographer' },
  }, { kind: 'series', chapter: null, title: 'The Salt Cartographer' }],
  [webtoons, 'https://www.webtoons.com/en/fantasy/the-salt-cartographer/episode-6/viewer?title_no=7710&episode_no=6', {
    title: 'Ep. 6 - The Lighthouse Map | The Salt Cartographer',
    texts: { 'h1.subj_episode': 'Ep. 6 - The Lighthouse Map', '.subj_info a.subj': 'The Salt Cartographer' },
  }, { kind: 'chapter', chapter: { label: 'Ep. 6 - The Lighthouse Map', number: 6 }, title: 'The Salt Cartographer' }],
  // A heading that names no number loses to episode_no.
  [webtoons, 'https://www.webtoons.com/en/fantasy/the-salt-cartographer/prologue/viewer?title_no=7710&episode_no=1', {
    title: 'Prologue | The Salt Cartographer', texts: { 'h1.subj_episode': 'Prologue', '.subj_info a.subj': 'The Salt Cartographer' },
  }, { kind: 'chapter', chapter: { label: 'Chapter 1', number: 1 }, title: 'The Salt Cartographer' }],
  [webtoons, 'https://www.webtoons.com/en/canvas/small-story/list?title_no=7710', {}, { kind: 'other', chapter: null, title: '' }],
  [webtoons, 'https://www.webtoons.com/en/fantasy/the-salt-cartographer/list', {}, { kind: 'other', chapter: null, title: '' }],

  // lightnovelworld: /novel/<slug>, its chapter lists, /novel/<slug>/chapter-<n>.
  [lightnovelworld, 'https://www.lightnovelworld.com/novel/shadow-slave', { title: 'Shadow Slave - Light Novel World', texts: { 'h1.novel-title': 'Shadow Slave' } },
    { kind: 'series', chapter: null, title: 'Shadow Slave' }],
  [lightnovelworld, 'https://www.lightnovelworld.com/novel/shadow-slave/chapters/page-2', { title: 'Shadow Slave Chapters - LightNovelWorld' },
    { kind: 'series', chapter: null, title: 'Shadow Slave Chapters' }],
  [lightnovelworld, 'https://www.lightnovelworld.com/novel/shadow-slave/chapter-1450', {
    title: 'Shadow Slave Chapter 1450: Nightmare - Light Novel World',
    texts: { '.chapter-title': 'Chapter 1450: Nightmare', 'a.booktitle': 'Shadow Slave' },
  }, { kind: 'chapter', chapter: { label: 'Chapter 1450: Nightmare', number: 1450 }, title: 'Shadow Slave' }],
  [lightnovelworld, 'https://lightnovelworld.co/novel/shadow-slave/chapter-12-the-gate', { title: '' },
    { kind: 'chapter', chapter: { label: 'Chapter 12', number: 12 }, title: '' }],
  [lightnovelworld, 'https://www.lightnovelworld.com/browse', {}, { kind: 'other', chapter: null, title: '' }],

  // novelfull: /<slug>.html and /<slug>/chapter-<n>[-title].html.
  [novelfull, 'https://novelfull.com/martial-peak.html', { title: 'Martial Peak - Read Martial Peak Online - Novel Full', texts: { 'h3.title': 'Martial Peak' } },
    { kind: 'series', chapter: null, title: 'Martial Peak' }],
  [novelfull, 'https://novelfull.com/index.html', {}, { kind: 'other', chapter: null, title: '' }],
  [novelfull, 'https://novelfull.com/martial-peak/chapter-1-the-beginning.html', {
    title: 'Martial Peak - Chapter 1 The Beginning - Novel Full',
    texts: { 'a.chapter-title': 'Chapter 1 The Beginning', 'a.truyen-title': 'Martial Peak' },
  }, { kind: 'chapter', chapter: { label: 'Chapter 1 The Beginning', number: 1 }, title: 'Martial Peak' }],
  [novelfull, 'https://www.novelfull.net/martial-peak/chapter-3000.html', { title: 'Martial Peak - Chapter 3000 - Novel Full' },
    { kind: 'chapter', chapter: { label: 'Chapter 3000', number: 3000 }, title: 'Martial Peak' }],
  [novelfull, 'https://novelfull.com/martial-peak/reviews.html', {}, { kind: 'other', chapter: null, title: '' }],

  // royalroad: the chapter id in the URL is no chapter number; the title's is.
  [royalroad, 'https://www.royalroad.com/fiction/48112/the-lamplighters-ledger', { title: "The Lamplighter's Ledger | Royal Road", texts: { '.fic-title h1': "The Lamplighter's Ledger" } },
    { kind: 'series', chapter: null, title: "The Lamplighter's Ledger" }],
  [royalroad, 'https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800006', {
    title: "Chapter 28: The Long Street - The Lamplighter's Ledger | Royal Road",
    texts: { '.fic-header h1': 'Chapter 28: The Long Street', '.fic-header h2 a': "The Lamplighter's Ledger" },
  }, { kind: 'chapter', chapter: { label: 'Chapter 28: The Long Street', number: 28 }, title: "The Lamplighter's Ledger" }],
  [royalroad, 'https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800001', {
    title: "Prologue - The Lamplighter's Ledger | Royal Road", texts: { '.fic-header h1': 'Prologue', '.fic-header h2 a': "The Lamplighter's Ledger" },
  }, { kind: 'chapter', chapter: { label: 'Prologue', number: null }, title: "The Lamplighter's Ledger" }],
  [royalroad, 'https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/reviews/2', {}, { kind: 'other', chapter: null, title: '' }],
  [royalroad, 'https://www.royalroad.com/fictions/best-rated', {}, { kind: 'other', chapter: null, title: '' }],
];

for (const [site, href, page, want] of cases) {
  test(`${site.site}: ${href}`, () => {
    const got = readPage(site, stubPage(href, page));
    assert.equal(got.kind, want.kind, 'kind');
    assert.equal(got.title, want.title, 'title');
    if (want.chapter === null) {
      assert.equal(got.chapter, null, 'chapter');
      return;
    }
    assert.ok(got.chapter, 'chapter read');
    assert.equal(got.chapter.label, want.chapter.label, 'label');
    assert.equal(got.chapter.number, want.chapter.number, 'number');
    assert.equal(got.chapter.url, href, 'chapter url');
  });
}

test('the chapter URL sent drops the fragment but keeps the query', () => {
  const got = readPage(demonic, stubPage('https://demonicscans.org/chaptered.php?manga=123&chapter=12#page-4'));
  assert.equal(got.chapter.url, 'https://demonicscans.org/chaptered.php?manga=123&chapter=12');
});

test('a MangaDex reader page finds its Series through the title link, and its chapter without the page number', () => {
  const links = { 'a.reader--header-manga': `https://mangadex.org/title/${U1}/tourou-no-deshi#top` };
  const got = readPage(mangadex, stubPage(`https://mangadex.org/chapter/${U2.toUpperCase()}/3#p`, { texts: { '.reader--header-chapter': 'Ch. 4' }, links }));
  assert.equal(got.kind, 'chapter');
  assert.equal(got.chapter.url, `https://mangadex.org/chapter/${U2}`);
  assert.equal(got.seriesURL, `https://mangadex.org/title/${U1}/tourou-no-deshi`);
  // A link off the Site or to another kind of page is not the Series.
  for (const href of [`https://evil.example/title/${U1}`, `https://mangadex.org/chapter/${U1}`, `http://mangadex.org/title/${U1}`]) {
    const other = readPage(mangadex, stubPage(`https://mangadex.org/chapter/${U2}`, { links: { 'a.reader--header-manga': href } }));
    assert.equal(other.seriesURL, '', href);
  }
  // Other Sites' URLs name their Series: no link is read.
  assert.equal(readPage(asura, stubPage('https://asurascans.com/comics/solo-leveling-ab12cd34/chapter/105')).seriesURL, '');
});

test('a Royal Road chapter is named without its own slug, as the server names it', () => {
  const got = readPage(royalroad, stubPage('https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800006/chapter-28-the-long-street#comments', {
    texts: { '.fic-header h1': 'Chapter 28: The Long Street' },
  }));
  assert.equal(got.chapter.url, 'https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800006');
  assert.equal(got.seriesURL, '', 'the URL names its fiction');
});

test('hostile page text is collapsed and clipped, never passed through whole', () => {
  const long = 'Chapter 9 ' + 'A'.repeat(5000);
  const got = readPage(kagane, stubPage(`https://kagane.to/series/${U1}/reader/${U2}`, { texts: { h1: `  ${long}\n\n<img src=x onerror=alert(1)>` } }));
  assert.equal(got.chapter.number, 9);
  assert.ok(got.chapter.label.length <= 200, `label length ${got.chapter.label.length}`);
  assert.ok(!/\s{2,}/.test(got.chapter.label));
});

test('each Site answers only for its own hosts, with or without www.', () => {
  const want = {
    'asurascans.com': 'asura', 'www.asuracomic.net': 'asura', 'demonicscans.org': 'demonic', 'comix.ws': 'comix',
    'www.kagane.to': 'kagane', 'kagane.org': 'kagane', 'mangadex.org': 'mangadex', 'www.webtoons.com': 'webtoons', 'lightnovelworld.co': 'lightnovelworld', 'www.novelfull.com': 'novelfull', 'www.royalroad.com': 'royalroad',
    'NOVELFULL.NET': 'novelfull',
  };
  for (const [host, site] of Object.entries(want)) assert.equal(siteForHost(ALL, host)?.site, site, host);
  for (const host of ['example.com', 'cdn.asurascans.com', 'asurascans.com.evil.test', 'notkagane.to']) {
    assert.equal(siteForHost(ALL, host), null, host);
  }
  const seen = new Set();
  for (const s of ALL) for (const h of s.hosts) {
    assert.ok(!seen.has(h), `host ${h} claimed twice`);
    seen.add(h);
  }
});

test('adapters read no Cover: no selector reaches an image or a metadata tag', () => {
  for (const s of ALL) {
    const selectors = [...s.chapterSelectors, ...s.seriesTitleSelectors.series, ...s.seriesTitleSelectors.chapter, ...s.seriesLinkSelectors];
    for (const sel of selectors) {
      assert.doesNotMatch(sel, /img|image|meta|cover|poster|figure|picture|source|og:|\[src|data-src/i, `${s.site}: ${sel}`);
    }
  }
});

test('the Libraries split the Sites as the registry does', () => {
  assert.deepEqual(ALL.filter((s) => s.library === 'manga').map((s) => s.site), ['asura', 'demonic', 'comix', 'kagane', 'mangadex', 'webtoons']);
  assert.deepEqual(ALL.filter((s) => s.library === 'novel').map((s) => s.site), ['lightnovelworld', 'novelfull', 'royalroad']);
});
