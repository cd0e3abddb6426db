// A Site adapter tells the panel what kind of page it is on and what chapter the
// page shows. It never derives a Series key (the server's /api/resolve does) and
// never reads a Cover (the backend acquires Covers itself).
//
// Adapters read a page through a narrow view, so they can be tested with a
// hand-written stub:
//   page.url    a URL object for location.href
//   page.title  document.title
//   page.text(selector)  collapsed text of the first match, or ''
//   page.link(selector)  the absolute address the first matching link points
//                        to, or ''

import { chapterInText, numberFrom, parseChapterNumber } from './chapter.js';
import { clean } from './util.js';

const LIBRARIES = ['manga', 'novel'];

// defineSite checks an adapter's shape once, at load, so a mistake in one fails
// every test rather than one Site's page at a Reader's click.
export function defineSite(spec) {
  if (!spec || typeof spec.site !== 'string' || !/^[a-z][a-z0-9-]*$/.test(spec.site)) {
    throw new Error('defineSite: bad site name');
  }
  if (!LIBRARIES.includes(spec.library)) throw new Error(`defineSite ${spec.site}: bad library`);
  if (!Array.isArray(spec.hosts) || spec.hosts.length === 0) throw new Error(`defineSite ${spec.site}: no hosts`);
  if (typeof spec.classify !== 'function') throw new Error(`defineSite ${spec.site}: no classify`);
  if (!(spec.brand instanceof RegExp)) throw new Error(`defineSite ${spec.site}: no brand`);
  return Object.freeze({
    site: spec.site,
    library: spec.library,
    hosts: Object.freeze([...spec.hosts]),
    classify: spec.classify,
    brand: spec.brand,
    chapterSelectors: Object.freeze([...(spec.chapterSelectors || [])]),
    seriesTitleSelectors: Object.freeze({
      series: Object.freeze([...(spec.seriesTitleSelectors?.series || [])]),
      chapter: Object.freeze([...(spec.seriesTitleSelectors?.chapter || [])]),
    }),
    titleFromURL: spec.titleFromURL || null,
    // seriesLinkSelectors, on a chapter page whose URL names no Series (a
    // theme that puts chapters at the site's root, MangaDex's /chapter/<uuid>),
    // find the link to the Series' page: the server resolves that address
    // instead of the page's own.
    seriesLinkSelectors: Object.freeze([...(spec.seriesLinkSelectors || [])]),
  });
}

// pathParts splits a URL path into its non-empty, decoded segments.
export function pathParts(url) {
  return url.pathname.split('/').filter((p) => p !== '').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
}

// readPage answers everything the panel needs from the page:
//   kind     'series', 'chapter' or 'other'
//   chapter  { label, number (or null), url } on a chapter page whose chapter
//            could be read, else null
//   title    the Series title as the page shows it, or ''
//   seriesURL  on a chapter page, the Series page its link points to (on the
//            Site's hosts), else ''
//   resolveURL  the URL to ask /api/resolve about: the page's own, or the
//            Series link where the page carries one, or '' on a chapter page
//            of a theme that puts chapters at the root and carries none
export function readPage(site, page) {
  const c = site.classify(page.url) || { kind: 'other' };
  const kind = c.kind === 'series' || c.kind === 'chapter' ? c.kind : 'other';
  const out = { kind, chapter: null, title: '', seriesURL: '', resolveURL: page.url.href };
  if (kind === 'other') return out;
  if (kind === 'chapter') {
    out.chapter = readChapter(site, page, numberFrom(c.number), c.url);
    out.seriesURL = readSeriesLink(site, page);
    if (out.seriesURL || c.seriesFromPage) out.resolveURL = out.seriesURL;
  }
  out.title = readSeriesTitle(site, page, kind);
  return out;
}

function readSeriesLink(site, page) {
  if (typeof page.link !== 'function') return '';
  for (const sel of site.seriesLinkSelectors) {
    const href = page.link(sel);
    if (href === '') continue;
    let u;
    try {
      u = new URL(href, page.url.href);
    } catch {
      continue;
    }
    const host = u.hostname.toLowerCase().replace(/^www\./, '');
    if (u.protocol === 'https:' && site.hosts.includes(host) && site.classify(u).kind === 'series') {
      u.hash = '';
      return u.href;
    }
  }
  return '';
}

// readChapter reads the chapter a page shows; canonical, when the adapter's
// classify gives one, is the chapter's address without a page part
// (/chapter/<id>/3 is page 3 of /chapter/<id>).
function readChapter(site, page, urlNumber, canonical) {
  let label = '';
  let unnumbered = '';
  for (const sel of site.chapterSelectors) {
    const t = clean(page.text(sel), 200);
    if (t === '') continue;
    if (parseChapterNumber(t) !== null) {
      label = t;
      break;
    }
    if (unnumbered === '') unnumbered = t;
  }
  if (label === '') {
    const m = chapterInText(page.title);
    if (m) label = m.label;
  }
  let number = label === '' ? null : parseChapterNumber(label);
  if (urlNumber !== null) {
    // The URL is what the Site routes on; a heading or title left over from the
    // previous chapter of a single-page app must not win over it.
    if (label === '' || (number !== null && number !== urlNumber)) label = 'Chapter ' + urlNumber;
    number = urlNumber;
  }
  if (label === '') label = unnumbered;
  if (label === '') return null;
  const u = new URL(canonical || page.url.href);
  u.hash = '';
  return { label, number, url: u.href };
}

const separators = /\s+[|\-–—·•]\s+/;

function readSeriesTitle(site, page, kind) {
  for (const sel of site.seriesTitleSelectors[kind]) {
    const t = clean(page.text(sel));
    if (t !== '') return t;
  }
  // Titles look like "Series - Chapter 3 - Site" or "Series | Site": drop the
  // Site's own name, then everything from the chapter words on.
  let t = clean(page.title, 512)
    .split(separators)
    .filter((part) => !site.brand.test(part))
    .join(' - ');
  if (kind === 'chapter') {
    const m = chapterInText(t);
    if (m) t = t.slice(0, m.index);
  }
  t = clean(t.replace(/^(?:read\s+)/i, '').replace(/[\s|\-–—·•:,]+$/, ''));
  if (t !== '') return t;
  return site.titleFromURL ? clean(site.titleFromURL(page.url) || '') : '';
}

// siteForHost picks the adapter whose hosts include hostname ("www." ignored).
export function siteForHost(sites, hostname) {
  const h = String(hostname).toLowerCase().replace(/^www\./, '');
  return sites.find((s) => s.hosts.includes(h)) || null;
}
