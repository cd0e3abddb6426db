// Family adapters: an added Site is recognised by its theme's page shape,
// from the list the server writes into the script it serves. Page shapes
// follow the family fixtures in testdata/families (November 2026).

import test from 'node:test';
import assert from 'node:assert/strict';

import { readPage, siteForHost } from '../src/core/adapter.js';
import { familySites } from '../src/core/families.js';
import { stubPage } from './helpers.mjs';

const listed = JSON.stringify([
  { site: 'toonhaven', family: 'madara', hosts: ['toonhaven.test'], series_paths: ['manga', 'series', 'comic', 'novel', 'webtoon'] },
  { site: 'inkstone', family: 'mangathemesia', hosts: ['inkstone.test'], series_paths: ['manga', 'series', 'comic', 'novel', 'webtoon'] },
  { site: 'comic-den', family: 'madara', hosts: ['comicden.test'], series_paths: ['read'] },
  { site: 'odd', family: 'joomla', hosts: ['odd.test'], series_paths: ['x'] },
]);

test('the listed Sites of known families become adapters; an unknown family is left out', () => {
  const sites = familySites(listed, 'manga');
  assert.deepEqual(sites.map((s) => s.site), ['toonhaven', 'inkstone', 'comic-den']);
  assert.equal(siteForHost(sites, 'www.toonhaven.test').site, 'toonhaven');
  assert.equal(siteForHost(sites, 'odd.test'), null);
  assert.deepEqual(familySites('__LECTERN_ADDED_SITES__', 'manga'), [], 'an unserved script has none');
  assert.deepEqual(familySites('[not json', 'manga'), []);
});

test('madara: series and chapter pages under the series path', () => {
  const [toon, , den] = familySites(listed, 'manga');
  let r = readPage(toon, stubPage('https://toonhaven.test/manga/iron-orchard/', { title: 'Iron Orchard – Toon Haven', texts: { '.post-title h1': 'Iron Orchard' } }));
  assert.equal(r.kind, 'series');
  assert.equal(r.title, 'Iron Orchard');
  assert.equal(r.resolveURL, 'https://toonhaven.test/manga/iron-orchard/');
  r = readPage(toon, stubPage('https://toonhaven.test/manga/iron-orchard/chapter-41-5/', { title: 'Iron Orchard - Chapter 41.5 - Toon Haven', texts: { 'ol.breadcrumb li.active': 'Chapter 41.5' } }));
  assert.equal(r.kind, 'chapter');
  assert.deepEqual({ label: r.chapter.label, number: r.chapter.number }, { label: 'Chapter 41.5', number: 41.5 });
  assert.equal(r.resolveURL, 'https://toonhaven.test/manga/iron-orchard/chapter-41-5/', 'the chapter URL names the Series');
  assert.equal(readPage(toon, stubPage('https://toonhaven.test/manga-genre/action/', {})).kind, 'other');
  assert.equal(readPage(den, stubPage('https://comicden.test/read/odd-path/chapter-3/', { title: '' })).kind, 'chapter');
  assert.equal(readPage(den, stubPage('https://comicden.test/manga/odd-path/', { title: '' })).kind, 'other', 'the option replaces the usual paths');
});

test('mangathemesia: a chapter at the root resolves through the page\'s link to its Series', () => {
  const [, ink] = familySites(listed, 'manga');
  const page = stubPage('https://inkstone.test/crimson-tidewalker-chapter-86/', {
    title: 'Crimson Tidewalker Chapter 86 - Inkstone',
    texts: { 'h1.entry-title': 'Crimson Tidewalker Chapter 86' },
    links: { '.allc a': 'https://inkstone.test/manga/crimson-tidewalker/' },
  });
  const r = readPage(ink, page);
  assert.equal(r.kind, 'chapter');
  assert.equal(r.chapter.number, 86);
  assert.equal(r.resolveURL, 'https://inkstone.test/manga/crimson-tidewalker/');
  const foreign = stubPage('https://inkstone.test/crimson-tidewalker-chapter-86/', { title: '', links: { '.allc a': 'https://evil.example/manga/x/' } });
  assert.equal(readPage(ink, foreign).resolveURL, '', 'a link off the Site is never asked about');
});

test('lightnovelwp: novels, chapters at the root', () => {
  const [lantern] = familySites(JSON.stringify([{ site: 'lanternreads', family: 'lightnovelwp', hosts: ['lanternreads.test'], series_paths: ['series'] }]), 'novel');
  assert.equal(lantern.library, 'novel');
  let r = readPage(lantern, stubPage('https://lanternreads.test/series/the-salt-archivist/', { title: 'The Salt Archivist - Lantern Reads', texts: { 'h1.entry-title': 'The Salt Archivist' } }));
  assert.equal(r.kind, 'series');
  assert.equal(r.title, 'The Salt Archivist');
  r = readPage(lantern, stubPage('https://lanternreads.test/the-salt-archivist-chapter-212-5/', {
    title: 'The Salt Archivist Chapter 212.5 - Lantern Reads',
    links: { '.naveps a[href*="/series/"]': 'https://lanternreads.test/series/the-salt-archivist/' },
  }));
  assert.equal(r.kind, 'chapter');
  assert.equal(r.chapter.number, 212.5);
  assert.equal(r.resolveURL, 'https://lanternreads.test/series/the-salt-archivist/');
});
