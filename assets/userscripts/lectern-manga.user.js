// ==UserScript==
// @name         Lectern (manga)
// @namespace    https://github.com/lectern-reader/lectern
// @version      0.5.0
// @description  Lectern panel on manga Sites: your Bookmarks, Covers and Latest Chapters; record the chapter you read.
// @match        https://asurascans.com/*
// @match        https://www.asurascans.com/*
// @match        https://asuracomic.net/*
// @match        https://www.asuracomic.net/*
// @match        https://demonicscans.org/*
// @match        https://www.demonicscans.org/*
// @match        https://comix.to/*
// @match        https://www.comix.to/*
// @match        https://comix.ws/*
// @match        https://www.comix.ws/*
// @match        https://kagane.to/*
// @match        https://www.kagane.to/*
// @match        https://kagane.org/*
// @match        https://www.kagane.org/*
// @match        https://mangadex.org/*
// @match        https://www.mangadex.org/*
// @match        https://webtoons.com/*
// @match        https://www.webtoons.com/*
// @grant        GM_xmlhttpRequest
// @grant        GM_getValue
// @grant        GM_setValue
// @connect      __LECTERN_HOST__
// @downloadURL  __LECTERN_BASE_URL__/userscripts/lectern-manga.user.js
// @updateURL    __LECTERN_BASE_URL__/userscripts/lectern-manga.user.js
// @run-at       document-idle
// @noframes
// ==/UserScript==

// Built by userscripts/build.mjs from userscripts/src (version 0.5.0). Edit the sources, not this file.
(function () {
'use strict';

// The deployment this script talks to; the server writes its PUBLIC_BASE_URL here when it serves the file.
const LECTERN_BASE_URL = '__LECTERN_BASE_URL__';

// The Sites the Owner added from a family, of this script's Library, as JSON; the server writes them here from its live registry.
const LECTERN_ADDED_SITES = '__LECTERN_ADDED_SITES__';

// ---- core/chapter.js
const m_core_chapter = (() => {
// Reading a chapter label and number from what a Site shows. The patterns follow
// the backend's ParseChapterNumber (backend/internal/latest/label.go) so that the
// number a client sends and the number a Poll finds compare as equals.

// A chapter number: digits, optionally grouped by thousands ("1,234"), with an
// optional decimal part ("12.5"). Larger than a million is an id or a year.
const NUMBER = String.raw`(\d{1,3}(?:,\d{3})+|\d{1,6})(?:\.(\d{1,3}))?`;
const MAX_NUMBER = 1e6;
const chapterWord = new RegExp(String.raw`\b(?:chapter|chap|ch|episode|ep)\b\.?[\s:#-]{0,3}` + NUMBER + String.raw`\b`, 'i');
const cjkNumber = new RegExp(String.raw`第\s*` + NUMBER + String.raw`\s*[话話章回]`);
const bareNumber = new RegExp('^#?' + NUMBER + String.raw`(?:$|[^\d.,]|\.(?:$|\D))`);

function matchNumber(m) {
  const n = Number(m[1].replace(/,/g, '') + (m[2] ? '.' + m[2] : ''));
  return Number.isFinite(n) && n <= MAX_NUMBER ? n : null;
}

// parseChapterNumber reads the chapter number from a label: "Chapter 105" → 105,
// "Ch. 12.5 - Title" → 12.5, "Vol. 2 Chapter 10" → 10, "Chapter 1,234" → 1234,
// "第105话" → 105, "42" → 42. It returns null when there is none ("Prologue",
// "Vol. 2"): a guess would make unread badges lie.
function parseChapterNumber(label) {
  if (typeof label !== 'string') return null;
  const s = label.slice(0, 512);
  const m = chapterWord.exec(s) || cjkNumber.exec(s) || bareNumber.exec(s.trim());
  return m ? matchNumber(m) : null;
}

// chapterInText finds the chapter words inside a longer text such as a document
// title ("Solo Leveling Chapter 105 - Asura Scans") and returns them with their
// number and position, or null.
function chapterInText(text) {
  if (typeof text !== 'string') return null;
  const s = text.slice(0, 512);
  const m = chapterWord.exec(s) || cjkNumber.exec(s);
  if (!m) return null;
  const number = matchNumber(m);
  if (number === null) return null;
  return { label: m[0].trim(), number, index: m.index };
}

// numberFrom turns a number as written in a URL ("105", "10.5") into a number,
// or null when it is not one.
function numberFrom(s) {
  if (typeof s !== 'string' || !/^\d{1,6}(?:\.\d{1,3})?$/.test(s)) return null;
  return Number(s);
}
return { parseChapterNumber, chapterInText, numberFrom };
})();

// ---- core/util.js
const m_core_util = (() => {
// Small helpers shared by the core and the Site adapters. Everything read from a
// Site's page or from a response is hostile input: these keep it bounded and typed.

// httpURL parses s and returns the URL when it is an absolute http(s) URL without
// credentials, else null. Only such URLs are ever put into href or src.
function httpURL(s) {
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

function isHttpURL(s) {
  return httpURL(s) !== null;
}

// clean collapses whitespace (page text is full of layout newlines) and clips the
// result so one hostile title cannot blow up the panel or a request body.
function clean(s, max = 300) {
  if (typeof s !== 'string') return '';
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max).trimEnd() : t;
}

// parseHeaders reads the raw header block GM_xmlhttpRequest hands back
// ("Name: value\r\n...") into an object keyed by lower-case name.
function parseHeaders(raw) {
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
return { httpURL, isHttpURL, clean, parseHeaders };
})();

// ---- core/adapter.js
const m_core_adapter = (() => {
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

const { chapterInText, numberFrom, parseChapterNumber } = m_core_chapter;
const { clean } = m_core_util;

const LIBRARIES = ['manga', 'novel'];

// defineSite checks an adapter's shape once, at load, so a mistake in one fails
// every test rather than one Site's page at a Reader's click.
function defineSite(spec) {
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
function pathParts(url) {
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
function readPage(site, page) {
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
function siteForHost(sites, hostname) {
  const h = String(hostname).toLowerCase().replace(/^www\./, '');
  return sites.find((s) => s.hosts.includes(h)) || null;
}
return { defineSite, pathParts, readPage, siteForHost };
})();

// ---- core/gm.js
const m_core_gm = (() => {
// The userscript manager's API, taken from the script's own scope. The page's
// scripts cannot reach these functions; everything the token touches goes
// through them.

/* global GM_xmlhttpRequest, GM_getValue, GM_setValue */

// gmFromScope returns the granted GM_* functions, or null when the script runs
// without a userscript manager that grants them.
function gmFromScope() {
  if (typeof GM_xmlhttpRequest !== 'function' || typeof GM_getValue !== 'function' || typeof GM_setValue !== 'function') {
    return null;
  }
  return { xhr: GM_xmlhttpRequest, getValue: GM_getValue, setValue: GM_setValue };
}

// gmRequest runs one GM_xmlhttpRequest and settles with
// { status, text, headers (raw block), finalUrl }, or with status 0 and a
// reason when the request never got an answer.
function gmRequest(xhr, { method, url, headers, body, timeout }) {
  return new Promise((resolve) => {
    const failed = (reason) => () => resolve({ status: 0, text: '', headers: '', finalUrl: '', reason });
    try {
      xhr({
        method,
        url,
        headers,
        data: body,
        timeout,
        // The API authenticates with the Bearer token alone; the deployment's own
        // cookies (a web UI session) have no business riding along.
        anonymous: true,
        onload: (r) => resolve({
          status: typeof r.status === 'number' ? r.status : 0,
          text: typeof r.responseText === 'string' ? r.responseText : '',
          headers: typeof r.responseHeaders === 'string' ? r.responseHeaders : '',
          finalUrl: typeof r.finalUrl === 'string' ? r.finalUrl : '',
          reason: '',
        }),
        onerror: failed('error'),
        ontimeout: failed('timeout'),
        onabort: failed('abort'),
      });
    } catch {
      failed('error')();
    }
  });
}
return { gmFromScope, gmRequest };
})();

// ---- core/work.js
const m_core_work = (() => {
// Works in the panel (CONTEXT.md "Work": a Reader's link between their own
// Bookmarks of one story on several Sites). Pure functions of the wire, so the
// lines are tested without a DOM; the panel draws their segments with
// textContent and checked links only.
//
// A line is a list of segments: { text } or { text, url, testid }. A segment
// with a url becomes a link when the url is http(s), else plain text.

const { clean } = m_core_util;

const str = (v) => (typeof v === 'string' ? v : '');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

// readWorkFields reads the Work and gone fields of a wire Bookmark (always
// present on a server with Works; defaulted for an older one).
function readWorkFields(raw) {
  return {
    work: str(raw.work),
    work_chapter: str(raw.work_chapter),
    work_chapter_number: num(raw.work_chapter_number),
    work_chapter_url: str(raw.work_chapter_url),
    work_progress_site: str(raw.work_progress_site),
    work_latest_chapter: str(raw.work_latest_chapter),
    work_latest_chapter_number: num(raw.work_latest_chapter_number),
    work_latest_chapter_url: str(raw.work_latest_chapter_url),
    work_latest_site: str(raw.work_latest_site),
    gone: raw.gone === true,
    gone_reason: str(raw.gone_reason),
  };
}

// nextChapter is the number to continue at on this Site after the Work's
// Progress: the next whole chapter, or this Site's newest when that comes
// first (a Site whose newest is 250.5 after Progress 250). The panel knows
// only this Site's newest chapter, not its whole list, so the link goes to
// that chapter when it is the one, else to the Series page, whose list has it.
function nextChapter(progress, latest) {
  const next = Math.floor(progress) + 1;
  return next > latest ? latest : next;
}

function numberText(n) {
  return String(Math.round(n * 1000) / 1000);
}

// workLine is the Work line of a Bookmark in a Work, on a page of its Series
// ("Chapter 120, read on asura · this Site has Chapter 125 → continue at
// 121"), or null when the Bookmark is in no Work.
function workLine(b) {
  if (!b || !b.work) return null;
  const segs = [];
  if (b.work_chapter) {
    segs.push({ text: clean(b.work_chapter, 120), url: b.work_chapter_url, testid: 'lectern-work-progress' });
    const where = b.work_progress_site && b.work_progress_site !== b.site ? `read on ${b.work_progress_site}` : 'read here';
    segs.push({ text: `, ${where}` });
  } else {
    segs.push({ text: 'Nothing read yet in this Work' });
  }
  const wn = b.work_chapter_number;
  const ln = b.latest_chapter_number;
  if (b.latest_chapter) {
    segs.push({ text: ` · this Site has ${clean(b.latest_chapter, 120)}` });
    if (wn !== null && ln !== null) {
      if (ln > wn) {
        const next = nextChapter(wn, ln);
        const url = next === ln ? b.latest_chapter_url : b.series_url;
        segs.push({ text: ' → ' });
        segs.push({ text: `continue at ${numberText(next)}`, url, testid: 'lectern-work-continue' });
      } else {
        segs.push({ text: ', nothing new here' });
      }
    }
  }
  // The newest chapter is on another Site and beyond what this one has.
  const newest = b.work_latest_chapter_number;
  if (b.work_latest_site && b.work_latest_site !== b.site && b.work_latest_chapter &&
      newest !== null && (ln === null || newest > ln) && (wn === null || newest > wn)) {
    segs.push({ text: ' · newest: ' });
    segs.push({ text: `${clean(b.work_latest_chapter, 120)} on ${b.work_latest_site}`, url: b.work_latest_chapter_url, testid: 'lectern-work-newest' });
  }
  return segs;
}

// workLineText is a line's text, as the Reader reads it.
function workLineText(segs) {
  return segs ? segs.map((s) => s.text).join('') : '';
}

// goneLine says that a Bookmark's Series is gone from its Site, why, and
// where the story goes on when the Bookmark is in a Work; null when not gone.
function goneLine(b) {
  if (!b || !b.gone) return null;
  const segs = [{ text: `Gone from ${b.site || 'this Site'}` + (b.gone_reason ? `: ${clean(b.gone_reason, 160)}` : '') }];
  if (b.work && b.work_latest_site && b.work_latest_site !== b.site) {
    segs.push({ text: ' · continue on ' });
    segs.push({ text: b.work_latest_site, url: b.work_latest_chapter_url, testid: 'lectern-gone-elsewhere' });
  }
  return segs;
}

// The evidence kinds the server names, in the Reader's words.
const EVIDENCE = { same_title: 'same title', alt_title: 'alternative title', tracker: 'same tracker entry' };

function evidenceWords(e) {
  const k = clean(str(e && typeof e === 'object' ? e.kind : e), 80);
  return EVIDENCE[k] || k.replace(/_/g, ' ');
}

// parseOffer reads GET /api/works/suggestions?key=&title= for the Series of
// currentKey (not held yet) and returns the first suggestion naming one of the
// Reader's Bookmarks: { key, title, site, work, evidence }, or null.
//
// The server answers a list of { keys, titles, sites, work, evidence }, keys[0]
// the page's Series; it is read tolerantly: { suggestions: [...] } and an
// entry naming the held Bookmark as `key` or `bookmark.key` are accepted too.
// The title, Site and Work come from the Reader's own Bookmark list when it
// holds the key, else from the entry.
function parseOffer(text, currentKey, bookmarks = []) {
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  const list = Array.isArray(v) ? v : v && Array.isArray(v.suggestions) ? v.suggestions : [];
  for (const s of list) {
    if (!s || typeof s !== 'object') continue;
    const inner = s.bookmark && typeof s.bookmark === 'object' ? s.bookmark : s;
    let key = str(inner.key);
    let title = str(inner.title);
    let site = str(inner.site);
    if (key === '' || key === currentKey) {
      const keys = Array.isArray(s.keys) ? s.keys.map(str) : [];
      const i = keys.findIndex((k) => k !== '' && k !== currentKey);
      key = i < 0 ? '' : keys[i];
      if (i >= 0) {
        title = Array.isArray(s.titles) ? str(s.titles[i]) : '';
        site = Array.isArray(s.sites) ? str(s.sites[i]) : '';
      }
    }
    if (key === '' || key === currentKey) continue;
    const held = bookmarks.find((b) => b.key === key) || null;
    const evidence = (Array.isArray(s.evidence) ? s.evidence : [s.evidence]).map(evidenceWords).filter(Boolean);
    return {
      key,
      title: clean((held && held.title) || title, 200),
      site: (held && held.site) || site || key.split(':')[0],
      work: (held && held.work) || str(s.work) || str(inner.work),
      evidence,
    };
  }
  return null;
}

// offerText is the offer's sentence: "Same story as <title> on <site>?"
function offerText(offer) {
  const title = offer.title || 'your Bookmark';
  return `Same story as ${title} on ${offer.site}?`;
}
return { readWorkFields, workLine, workLineText, goneLine, parseOffer, offerText };
})();

// ---- core/bookmarks.js
const m_core_bookmarks = (() => {
// The wire's Bookmark and resolve objects, read tolerantly: the server owns the
// wire shape and only ever adds to it, so unknown fields are ignored and missing
// optional ones get defaults. A script built for an older server keeps working.

const { clean, isHttpURL } = m_core_util;
const { readWorkFields } = m_core_work;

const str = (v) => (typeof v === 'string' ? v : '');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

// normalizeBookmark returns the fields the panel uses, or null for an entry that
// cannot be shown (no key).
function normalizeBookmark(raw) {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const key = str(raw.key);
  if (key === '') return null;
  const b = {
    key,
    site: str(raw.site),
    kind: str(raw.kind),
    title: str(raw.title),
    series_url: str(raw.series_url),
    cover: str(raw.cover),
    chapter: str(raw.chapter),
    chapter_number: num(raw.chapter_number),
    chapter_url: str(raw.chapter_url),
    progress_at: str(raw.progress_at),
    latest_chapter: str(raw.latest_chapter),
    latest_chapter_number: num(raw.latest_chapter_number),
    latest_chapter_url: str(raw.latest_chapter_url),
    latest_at: str(raw.latest_at),
    unread: 0,
    created_at: str(raw.created_at),
    updated_at: str(raw.updated_at),
    // A Work's Progress and newest chapter, and whether the Series is gone.
    ...readWorkFields(raw),
  };
  b.unread = readUnread(raw.unread, b);
  return b;
}

// readUnread accepts a count or a flag. When the server sends neither, the two
// chapter numbers decide, and unknown numbers mean nothing is claimed unread.
function readUnread(v, b) {
  if (typeof v === 'number' && Number.isFinite(v)) return Math.max(0, Math.floor(v));
  if (typeof v === 'boolean') return v;
  if (b.latest_chapter_number !== null && b.chapter_number !== null) return b.latest_chapter_number > b.chapter_number;
  return 0;
}

// parseBookmarks reads a GET /api/bookmarks body. It throws when the body is not
// a JSON array; entries that cannot be shown are skipped.
function parseBookmarks(text) {
  const v = JSON.parse(text);
  if (!Array.isArray(v)) throw new Error('bookmarks reply is not a list');
  const out = [];
  for (const raw of v) {
    const b = normalizeBookmark(raw);
    if (b) out.push(b);
  }
  return out;
}

// parseRef reads a GET /api/resolve body: { key, site, kind, series_url }.
function parseRef(text) {
  const v = JSON.parse(text);
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('resolve reply is not an object');
  const ref = { key: str(v.key), site: str(v.site), kind: str(v.kind), series_url: str(v.series_url) };
  if (ref.key === '' || ref.site === '' || !isHttpURL(ref.series_url)) throw new Error('resolve reply lacks key, site or series_url');
  return ref;
}

// unreadBadge is the badge text: a count, "new" for a bare flag, or '' for none.
function unreadBadge(b) {
  if (b.unread === true) return 'new';
  if (typeof b.unread === 'number' && b.unread > 0) return b.unread > 999 ? '999+' : String(b.unread);
  return '';
}

// monogram is the placeholder's text: the first letters of the title's first two
// words, or of the Series key's slug when there is no title.
function monogram(title, key = '') {
  let source = clean(title);
  if (source === '') source = str(key).split(':').slice(1).join(':').replace(/[-_]+/g, ' ');
  const letters = source
    .split(/\s+/)
    .map((w) => Array.from(w).find((ch) => /[\p{L}\p{N}]/u.test(ch)))
    .filter(Boolean)
    .slice(0, 2)
    .join('')
    .toUpperCase();
  return letters || '?';
}

// slugTitle is a title made of a series URL's slug, the same rule as the
// server's pages (latest.SlugTitle): the last path segment's words,
// capitalised, without the ids Sites add ("omniscient-readers-viewpoint-7f3k9a2b"
// is "Omniscient Readers Viewpoint"); '' when the slug is only an id.
function slugTitle(seriesURL) {
  let path;
  try {
    path = new URL(str(seriesURL)).pathname;
  } catch {
    return '';
  }
  const segs = path.split('/').filter(Boolean);
  if (segs.length === 0) return '';
  let slug;
  try {
    slug = decodeURIComponent(segs[segs.length - 1]);
  } catch {
    return '';
  }
  slug = slug.replace(/\.(?:html|htm|php)$/, '');
  const id = (w) => {
    const digits = (w.match(/\p{N}/gu) || []).length;
    const letters = (w.match(/\p{L}/gu) || []).length;
    const mixed = digits > 0 && letters > 0;
    return (mixed && (w.length >= 5 || /^[0-9a-f]+$/i.test(w))) || (digits >= 5 && letters === 0);
  };
  return slug
    .split(/[-_+\s]+/)
    .filter((w) => w !== '' && !id(w))
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
}

// displayTitle is the title the panel shows for a Bookmark: its own, else
// the title of the page the Reader is on when it is that Series' page
// (document.title without the Site's name), else the slug's words; never
// the Series key.
function displayTitle(b, pageTitle = '') {
  return clean(b.title) || clean(pageTitle) || slugTitle(b.series_url) || 'Untitled';
}

// coverChoice decides how a Bookmark's Cover is drawn. The src is the server's
// `cover` exactly as sent (an absolute URL on the deployment); "" means no Cover
// yet and anything that is not http(s) is refused, both giving the placeholder.
function coverChoice(b) {
  if (b.cover !== '' && isHttpURL(b.cover)) return { src: b.cover };
  return { monogram: monogram(b.title, b.key) };
}
return { normalizeBookmark, parseBookmarks, parseRef, unreadBadge, monogram, slugTitle, displayTitle, coverChoice };
})();

// ---- core/api.js
const m_core_api = (() => {
// The client for the deployment's JSON API. Every request goes through the
// userscript manager's GM_xmlhttpRequest to the deployment's own origin, with
// the Reader's token in an Authorization header and nowhere else: never in a
// URL, never to any other origin.

const { gmRequest } = m_core_gm;
const { normalizeBookmark, parseBookmarks, parseRef } = m_core_bookmarks;
const { clean, httpURL, parseHeaders } = m_core_util;

// LecternError carries a code the panel shows a message for (and tests assert
// on): not-configured, no-token, unreachable, redirected, unauthorized,
// forbidden, unknown-page, server, request, bad-response.
class LecternError extends Error {
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
function errorFor(status, text, context = '') {
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
function keyPath(key) {
  return encodeURIComponent(key).replace(/%3A/gi, ':');
}

// progressBody is the PUT body for recording the chapter a page shows. The
// Series comes from /api/resolve; there is no cover field: the backend acquires
// Covers itself and ignores any a client sends.
function progressBody(ref, page) {
  const body = { site: ref.site, series_url: ref.series_url, chapter: page.chapter.label };
  if (page.title) body.title = page.title;
  if (page.chapter.url) body.chapter_url = page.chapter.url;
  if (typeof page.chapter.number === 'number' && Number.isFinite(page.chapter.number)) {
    body.chapter_number = page.chapter.number;
  }
  return body;
}

function createClient({ baseURL, xhr, store, client = '', timeout = 15000 }) {
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
return { LecternError, errorFor, keyPath, progressBody, createClient };
})();

// ---- core/current.js
const m_core_current = (() => {
const { slugTitle } = m_core_bookmarks;
const { goneLine, offerText, workLine } = m_core_work;

// What the panel says about the page it is on, and whether Progress may be
// recorded automatically. Pure functions of the page reading, the resolved
// Series and the Bookmarks, so they are tested without a DOM.

// findBookmark returns the Bookmark of the Series with key, or null.
function findBookmark(bookmarks, key) {
  if (!key) return null;
  return bookmarks.find((b) => b.key === key) || null;
}

// describeCurrent builds the "this page" section:
//   page      readPage's answer, or null
//   ref       /api/resolve's answer, or null
//   refError  the error resolving failed with, or null
//   bookmark  the Reader's Bookmark of ref's Series, or null
//   offer     parseOffer's answer for a Series not held yet, or null
// Besides the texts: work and gone, the Work and gone lines (work.js
// segments) of a held Bookmark, and offer, { text, evidence } of the link
// offer, each null when there is none.
function describeCurrent({ page, ref, refError, bookmark, offer = null }) {
  if (!page || page.kind === 'other') {
    return { hidden: false, series: 'Not a Series or chapter page.', chapter: '', progress: '', canRecord: false, canRemove: false, code: 'other-page' };
  }
  if (refError) {
    return { hidden: false, series: page.title || 'This page', chapter: refError.message, progress: '', canRecord: false, canRemove: false, code: refError.code || 'error' };
  }
  const series = (bookmark && bookmark.title) || page.title || (ref ? slugTitle(ref.series_url) || 'Untitled' : '');
  let chapter = '';
  if (page.kind === 'chapter') {
    chapter = page.chapter ? 'This page: ' + page.chapter.label : 'Could not read the chapter on this page.';
  } else {
    chapter = 'Series page: open a chapter to record Progress.';
  }
  let progress = '';
  if (ref) progress = bookmark ? 'Bookmarked: ' + (bookmark.chapter || 'no chapter recorded') : 'Not bookmarked yet.';
  return {
    hidden: false,
    series,
    chapter,
    progress,
    canRecord: !!(ref && page.kind === 'chapter' && page.chapter),
    canRemove: !!(ref && bookmark),
    work: ref && bookmark ? workLine(bookmark) : null,
    gone: ref && bookmark ? goneLine(bookmark) : null,
    offer: ref && !bookmark && offer ? { text: offerText(offer), evidence: offer.evidence.join(', ') } : null,
    code: ref ? 'ok' : 'resolving',
  };
}

// shouldAutoRecord decides whether opening this chapter page records Progress
// without a click. Only for a Series already bookmarked (browsing must not
// create Bookmarks), and never backwards: re-reading an older chapter keeps the
// newest Progress. With numbers unknown, a different chapter URL counts as new.
function shouldAutoRecord(page, bookmark) {
  if (!page || page.kind !== 'chapter' || !page.chapter || !bookmark) return false;
  const n = page.chapter.number;
  const had = bookmark.chapter_number;
  if (typeof n === 'number' && typeof had === 'number') return n > had;
  if (bookmark.chapter === '') return true;
  return page.chapter.url !== bookmark.chapter_url;
}
return { findBookmark, describeCurrent, shouldAutoRecord };
})();

// ---- core/page.js
const m_core_page = (() => {
// The narrow, read-only view of the Site's page that adapters get (see adapter.js).
// It exposes text only: adapters have no way to read images or metadata tags,
// so no Cover can be scraped through it.

const { clean } = m_core_util;

function pageFromDocument(doc, href) {
  return {
    url: new URL(href),
    title: typeof doc.title === 'string' ? doc.title : '',
    // link is where the first matching link points, resolved against the
    // page: an address, never an image or a tag's metadata.
    link(selector) {
      try {
        const el = doc.querySelector(selector);
        return el && el.tagName === 'A' && typeof el.href === 'string' ? el.href : '';
      } catch {
        return '';
      }
    },
    text(selector) {
      try {
        const el = doc.querySelector(selector);
        return el ? clean(el.textContent, 512) : '';
      } catch {
        return '';
      }
    },
  };
}
return { pageFromDocument };
})();

// ---- core/panel.js
const m_core_panel = (() => {
// The panel: a toggle button and a list, drawn inside a closed shadow root so the
// Site's page cannot reach into it through the DOM. All text is set with
// textContent (titles and labels are hostile input) and every URL is checked to
// be http(s) before it becomes an href or a src.
//
// Stable hooks for tests: every element a test needs carries a data-testid
// (lectern-toggle, lectern-panel, lectern-status, lectern-list, lectern-item,
// lectern-cover, lectern-cover-placeholder, ...); see userscripts/README.md.

const { coverChoice, displayTitle, monogram, unreadBadge } = m_core_bookmarks;
const { httpURL } = m_core_util;

// Taken at load: the panel's own calls must not go through anything the page
// swaps in later.
const attachShadow = typeof Element === 'function' ? Element.prototype.attachShadow : null;

const CSS = `
:host { all: initial !important; display: block !important; position: fixed !important;
  right: 16px !important; bottom: 16px !important; z-index: 2147483647 !important;
  width: auto !important; height: auto !important; margin: 0 !important; padding: 0 !important; }
* { box-sizing: border-box; }
.lectern { font: 13px/1.35 system-ui, -apple-system, "Segoe UI", sans-serif; color: #e8e6e3; }
button { font: inherit; color: inherit; background: #2b2f36; border: 1px solid #454b55; border-radius: 6px;
  padding: 3px 8px; cursor: pointer; }
button:hover:not(:disabled) { background: #363b44; }
button:disabled { opacity: .5; cursor: default; }
button.primary { background: #2f6f4f; border-color: #3e8d66; }
.toggle { display: block; margin-left: auto; width: 40px; height: 40px; border-radius: 50%; font-weight: 700;
  background: #1d2026; border: 2px solid #3e8d66; box-shadow: 0 2px 8px rgba(0,0,0,.4); }
.toggle[data-alert="true"] { border-color: #c5534b; }
.panel { width: 360px; max-width: calc(100vw - 32px); max-height: min(75vh, 640px); margin-bottom: 8px;
  display: flex; flex-direction: column; background: #1d2026; border: 1px solid #3a3f48; border-radius: 10px;
  box-shadow: 0 6px 24px rgba(0,0,0,.5); overflow: hidden; }
.panel[hidden], .settings[hidden], .current[hidden], [hidden] { display: none !important; }
header { display: flex; gap: 6px; align-items: center; padding: 8px 10px; border-bottom: 1px solid #3a3f48; }
header .name { font-weight: 700; flex: 1; }
header .lib { font-weight: 400; color: #a9b0bb; margin-left: 4px; }
.status { padding: 6px 10px; color: #a9b0bb; min-height: 1em; }
.status:empty { display: none; }
.status[data-tone="error"] { color: #f0b4ae; background: #3a2426; }
.status[data-tone="ok"] { color: #b6e3c8; }
.current { padding: 8px 10px; border-bottom: 1px solid #3a3f48; display: grid; gap: 4px; }
.current .series { font-weight: 600; }
.current .muted, .muted { color: #a9b0bb; }
.current .actions { display: flex; gap: 6px; margin-top: 2px; }
.settings { padding: 8px 10px; border-bottom: 1px solid #3a3f48; display: grid; gap: 6px; }
.settings input.secret { -webkit-text-security: disc; width: 100%; font: inherit; color: inherit; background: #14161a;
  border: 1px solid #454b55; border-radius: 6px; padding: 4px 6px; }
.settings .row { display: flex; gap: 6px; align-items: center; }
.list { list-style: none; margin: 0; padding: 0; overflow-y: auto; flex: 1; }
.item { display: grid; grid-template-columns: 40px 1fr auto; gap: 8px; align-items: center; padding: 6px 10px;
  border-bottom: 1px solid #2a2e35; }
.item[data-current="true"] { background: #23352c; box-shadow: inset 3px 0 0 #3e8d66; }
.cover { width: 40px; height: 56px; border-radius: 4px; overflow: hidden; background: #2b2f36; }
.cover img { display: block; width: 40px; height: 56px; object-fit: cover; }
.placeholder { display: flex; width: 40px; height: 56px; align-items: center; justify-content: center;
  font-weight: 700; letter-spacing: .5px; color: #c9ced6;
  background: repeating-linear-gradient(135deg, #2b2f36 0 6px, #30353d 6px 12px); }
.body { min-width: 0; }
.title { display: block; font-weight: 600; color: #e8e6e3; text-decoration: none; overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; }
a.title:hover { text-decoration: underline; }
.line { color: #a9b0bb; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.line a { color: inherit; }
.side { display: grid; gap: 4px; justify-items: end; }
.badge { background: #3e8d66; color: #fff; border-radius: 9px; padding: 0 6px; font-size: 11px; font-weight: 700; }
.badge:empty { display: none; }
.empty { padding: 12px 10px; color: #a9b0bb; }
.work { color: #b6e3c8; }
.work a, .gone a { color: inherit; }
.gone { color: #f0b4ae; }
.offer { display: flex; flex-wrap: wrap; gap: 4px 6px; align-items: center; padding: 4px 0; }
.offer .muted:empty { display: none; }
footer { padding: 5px 10px; border-top: 1px solid #3a3f48; color: #7f8792; font-size: 11px; }
`;

// Events that would tell the page what the Reader types or pastes into the
// panel (the token input above all). They are composed, so without this they
// would bubble out of the shadow root to the page's listeners.
const CONTAINED = ['keydown', 'keyup', 'keypress', 'beforeinput', 'input', 'change', 'paste', 'copy', 'cut',
  'compositionstart', 'compositionupdate', 'compositionend', 'focusin', 'focusout'];

function el(doc, tag, props = {}, children = []) {
  const e = doc.createElement(tag);
  if (props.className) e.className = props.className;
  if (props.testid) e.setAttribute('data-testid', props.testid);
  if (props.text !== undefined) e.textContent = props.text;
  if (props.attrs) for (const [k, v] of Object.entries(props.attrs)) e.setAttribute(k, v);
  for (const c of children) if (c) e.appendChild(c);
  return e;
}

// safeLink makes a link when url is http(s), else plain text.
function safeLink(doc, url, text, props = {}) {
  const u = httpURL(url);
  if (!u) return el(doc, 'span', { ...props, text });
  const a = el(doc, 'a', { ...props, text });
  a.href = u.href;
  a.rel = 'noopener noreferrer';
  return a;
}

// isShortcut is Alt+L (Option+L on a Mac: the key code, not the character).
function isShortcut(e) {
  return e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey && e.code === 'KeyL';
}

// mountPanel draws the panel into doc and returns its view. handlers are the
// controller's: refresh, record, removeCurrent, remove(key), saveToken(value),
// clearToken, setAutoRecord(bool), toggled(open).
function mountPanel(doc, { script, version, library, handlers }) {
  const host = doc.createElement('div');
  const root = attachShadow.call(host, { mode: 'closed' });
  const sheet = typeof CSSStyleSheet === 'function' && 'adoptedStyleSheets' in root ? new CSSStyleSheet() : null;
  if (sheet) {
    // A constructed sheet is not an inline <style>, so a Site's CSP that
    // forbids inline styles does not strip the panel bare.
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } else {
    root.appendChild(el(doc, 'style', { text: CSS }));
  }

  const libName = library === 'novel' ? 'Novels' : 'Manga';
  const toggle = el(doc, 'button', { className: 'toggle', testid: 'lectern-toggle', text: 'L',
    attrs: { type: 'button', title: 'Lectern (Alt+L)', 'aria-expanded': 'false', 'aria-label': 'Lectern panel (Alt+L)' } });

  const refreshBtn = el(doc, 'button', { testid: 'lectern-refresh', text: 'Refresh', attrs: { type: 'button' } });
  const settingsBtn = el(doc, 'button', { testid: 'lectern-settings-toggle', text: 'Settings', attrs: { type: 'button' } });
  const closeBtn = el(doc, 'button', { testid: 'lectern-close', text: '×', attrs: { type: 'button', 'aria-label': 'Close' } });
  const status = el(doc, 'div', { className: 'status', testid: 'lectern-status', attrs: { role: 'status', 'data-code': '' } });

  const curSeries = el(doc, 'div', { className: 'series', testid: 'lectern-current-series' });
  const curChapter = el(doc, 'div', { className: 'muted', testid: 'lectern-current-chapter' });
  const curProgress = el(doc, 'div', { className: 'muted', testid: 'lectern-current-progress' });
  const recordBtn = el(doc, 'button', { className: 'primary', testid: 'lectern-bookmark-chapter', text: 'Bookmark this chapter', attrs: { type: 'button' } });
  const removeCurBtn = el(doc, 'button', { testid: 'lectern-remove-current', text: 'Remove', attrs: { type: 'button' } });
  // The Work line of a Bookmark in a Work, the gone line, and the offer to
  // link a Series not held yet to a Bookmark of the same story.
  const curWork = el(doc, 'div', { className: 'work', testid: 'lectern-work-line' });
  const curGone = el(doc, 'div', { className: 'gone', testid: 'lectern-gone' });
  const offerText = el(doc, 'span', { testid: 'lectern-offer-text' });
  const offerEvidence = el(doc, 'span', { className: 'muted', testid: 'lectern-offer-evidence' });
  const offerBtn = el(doc, 'button', { className: 'primary', testid: 'lectern-offer-link', text: 'Link', attrs: { type: 'button' } });
  const offerNo = el(doc, 'button', { testid: 'lectern-offer-dismiss', text: 'Not the same', attrs: { type: 'button' } });
  const offer = el(doc, 'div', { className: 'offer', testid: 'lectern-offer' }, [offerText, offerEvidence, offerBtn, offerNo]);
  const current = el(doc, 'section', { className: 'current', testid: 'lectern-current' }, [
    curSeries, curChapter, curProgress, curWork, curGone, offer, el(doc, 'div', { className: 'actions' }, [recordBtn, removeCurBtn]),
  ]);

  // A text field masked by CSS rather than type=password: a password field would
  // invite the browser's password manager to save the token for the Site's
  // origin and later autofill it into the Site's own login form.
  const tokenInput = el(doc, 'input', { className: 'secret', testid: 'lectern-token-input',
    attrs: { type: 'text', autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false', 'data-lpignore': 'true', 'data-1p-ignore': 'true',
      'data-form-type': 'other', placeholder: 'Paste your Lectern token', 'aria-label': 'Lectern token' } });
  const tokenSave = el(doc, 'button', { className: 'primary', testid: 'lectern-token-save', text: 'Save token', attrs: { type: 'submit' } });
  const tokenClear = el(doc, 'button', { testid: 'lectern-token-clear', text: 'Forget token', attrs: { type: 'button' } });
  const tokenState = el(doc, 'div', { className: 'muted', testid: 'lectern-token-state' });
  const autoBox = el(doc, 'input', { testid: 'lectern-auto-record', attrs: { type: 'checkbox' } });
  const settings = el(doc, 'form', { className: 'settings', testid: 'lectern-settings', attrs: { autocomplete: 'off' } }, [
    el(doc, 'div', { className: 'muted', text: 'Token (from your Lectern token page). It is kept by your userscript manager and sent only to Lectern.' }),
    tokenInput,
    el(doc, 'div', { className: 'row' }, [tokenSave, tokenClear]),
    tokenState,
    el(doc, 'label', { className: 'row' }, [autoBox, el(doc, 'span', { text: 'Record Progress automatically when a chapter of a bookmarked Series opens (never moves Progress back).' })]),
    el(doc, 'div', { className: 'muted', text: 'Shortcut: Alt+L opens and closes this panel.' }),
  ]);
  settings.hidden = true;

  const list = el(doc, 'ul', { className: 'list', testid: 'lectern-list' });
  const versions = el(doc, 'footer', { testid: 'lectern-versions' });

  const panel = el(doc, 'section', { className: 'panel', testid: 'lectern-panel', attrs: { 'data-state': 'idle', 'aria-label': 'Lectern' } }, [
    el(doc, 'header', {}, [
      el(doc, 'span', { className: 'name', text: 'Lectern' }, [el(doc, 'span', { className: 'lib', text: libName })]),
      refreshBtn, settingsBtn, closeBtn,
    ]),
    status, current, settings, list, versions,
  ]);
  panel.hidden = true;

  const wrap = el(doc, 'div', { className: 'lectern', testid: 'lectern-root' }, [panel, toggle]);
  root.appendChild(wrap);

  let open = false;
  const setOpen = (v) => {
    open = v;
    panel.hidden = !v;
    toggle.setAttribute('aria-expanded', String(v));
    handlers.toggled(v);
  };

  for (const type of CONTAINED) {
    wrap.addEventListener(type, (e) => {
      if (type === 'keydown' && isShortcut(e)) {
        e.preventDefault();
        setOpen(!open);
      } else if (type === 'keydown' && e.key === 'Escape' && open) {
        setOpen(false);
        toggle.focus();
      }
      e.stopPropagation();
    });
  }

  toggle.addEventListener('click', () => setOpen(!open));
  closeBtn.addEventListener('click', () => setOpen(false));
  refreshBtn.addEventListener('click', () => handlers.refresh());
  settingsBtn.addEventListener('click', () => {
    settings.hidden = !settings.hidden;
  });
  recordBtn.addEventListener('click', () => handlers.record());
  removeCurBtn.addEventListener('click', () => handlers.removeCurrent());
  offerBtn.addEventListener('click', () => handlers.linkOffer());
  offerNo.addEventListener('click', () => handlers.dismissOffer());
  settings.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = tokenInput.value;
    // The token leaves the DOM at once: it is never rendered back.
    tokenInput.value = '';
    handlers.saveToken(value);
  });
  tokenClear.addEventListener('click', () => {
    tokenInput.value = '';
    handlers.clearToken();
  });
  autoBox.addEventListener('change', () => handlers.setAutoRecord(autoBox.checked));
  list.addEventListener('click', (e) => {
    const t = e.target;
    if (t && t.getAttribute && t.getAttribute('data-testid') === 'lectern-remove') {
      const item = t.closest('[data-testid="lectern-item"]');
      if (item) handlers.remove(item.getAttribute('data-key'));
    }
  });

  // drawLine draws work.js segments into box, hidden when there are none.
  function drawLine(box, segs) {
    box.hidden = !segs;
    const frag = doc.createDocumentFragment();
    for (const s of segs || []) {
      frag.appendChild(s.url !== undefined ? safeLink(doc, s.url, s.text, { testid: s.testid }) : doc.createTextNode(s.text));
    }
    box.replaceChildren(frag);
  }

  function coverBox(b) {
    const box = el(doc, 'div', { className: 'cover' });
    const c = coverChoice(b);
    const placeholder = () => el(doc, 'span', { className: 'placeholder', testid: 'lectern-cover-placeholder', text: monogram(b.title, b.key), attrs: { 'aria-hidden': 'true' } });
    if (!c.src) {
      box.appendChild(placeholder());
      return box;
    }
    const img = el(doc, 'img', { testid: 'lectern-cover', attrs: { alt: '', loading: 'lazy', decoding: 'async', width: '40', height: '56', referrerpolicy: 'no-referrer' } });
    // Set before src, so a load that fails at once still swaps in the
    // placeholder instead of leaving a broken-image glyph.
    img.addEventListener('error', () => img.replaceWith(placeholder()), { once: true });
    img.src = c.src;
    box.appendChild(img);
    return box;
  }

  function item(b, currentKey, currentTitle) {
    const li = el(doc, 'li', { className: 'item', testid: 'lectern-item', attrs: { 'data-key': b.key, 'data-current': String(b.key === currentKey) } });
    const title = displayTitle(b, b.key === currentKey ? currentTitle : '');
    const progress = el(doc, 'div', { className: 'line', testid: 'lectern-progress' });
    progress.appendChild(el(doc, 'span', { text: 'Read: ' }));
    if (b.work && b.work_chapter) {
      // In a Work, Progress is the Work's, wherever it was read.
      progress.appendChild(safeLink(doc, b.work_chapter_url, b.work_chapter));
      progress.appendChild(el(doc, 'span', { text: ` on ${b.work_progress_site}`, testid: 'lectern-progress-site' }));
    } else {
      progress.appendChild(b.chapter ? safeLink(doc, b.chapter_url, b.chapter) : el(doc, 'span', { text: '—' }));
    }
    const latest = el(doc, 'div', { className: 'line', testid: 'lectern-latest' });
    // Two Bookmarks of one Work share a title: the Site tells them apart.
    latest.appendChild(el(doc, 'span', { text: b.work && b.site ? `${b.site} latest: ` : 'Latest: ' }));
    latest.appendChild(b.latest_chapter ? safeLink(doc, b.latest_chapter_url, b.latest_chapter) : el(doc, 'span', { text: 'not known yet' }));
    li.appendChild(coverBox(b));
    const gone = b.gone ? el(doc, 'div', { className: 'line gone', testid: 'lectern-item-gone', text: 'Gone' + (b.gone_reason ? ': ' + b.gone_reason : '') }) : null;
    if (b.work) li.setAttribute('data-work', b.work);
    li.appendChild(el(doc, 'div', { className: 'body' }, [
      safeLink(doc, b.series_url, title, { className: 'title', testid: 'lectern-title', attrs: { title } }),
      progress, latest, gone,
    ]));
    li.appendChild(el(doc, 'div', { className: 'side' }, [
      el(doc, 'span', { className: 'badge', testid: 'lectern-unread', text: unreadBadge(b), attrs: { title: 'Unread' } }),
      el(doc, 'button', { testid: 'lectern-remove', text: 'Remove', attrs: { type: 'button' } }),
    ]));
    return li;
  }

  return {
    host,
    root,
    isOpen: () => open,
    setOpen,
    mount() {
      if (!host.isConnected) doc.documentElement.appendChild(host);
    },
    setState(s) {
      panel.setAttribute('data-state', s);
    },
    setBusy(busy) {
      for (const b of [refreshBtn, recordBtn, removeCurBtn, offerBtn, offerNo, tokenSave, tokenClear]) b.disabled = busy || b.dataset.off === 'true';
    },
    status(text, { code = '', tone = '' } = {}) {
      status.textContent = text;
      status.setAttribute('data-code', code);
      status.setAttribute('data-tone', tone);
      toggle.setAttribute('data-alert', String(tone === 'error'));
    },
    versions(server) {
      versions.textContent = `${script} ${version} · server ${server || 'unknown'}`;
    },
    settings({ hasToken, autoRecord }) {
      tokenState.textContent = hasToken ? 'A token is saved.' : 'No token saved.';
      autoBox.checked = autoRecord;
    },
    showSettings() {
      settings.hidden = false;
    },
    // current draws the "this page" section. v: { hidden, series, chapter,
    // progress, canRecord, canRemove, work, gone, offer } (describeCurrent).
    current(v) {
      current.hidden = !!v.hidden;
      curSeries.textContent = v.series || '';
      curChapter.textContent = v.chapter || '';
      curProgress.textContent = v.progress || '';
      recordBtn.dataset.off = String(!v.canRecord);
      recordBtn.disabled = !v.canRecord;
      removeCurBtn.hidden = !v.canRemove;
      removeCurBtn.dataset.off = String(!v.canRemove);
      drawLine(curWork, v.work);
      drawLine(curGone, v.gone);
      offer.hidden = !v.offer;
      offerText.textContent = v.offer ? v.offer.text : '';
      offerEvidence.textContent = v.offer && v.offer.evidence ? `(${v.offer.evidence})` : '';
      for (const b of [offerBtn, offerNo]) {
        b.dataset.off = String(!v.offer);
        b.disabled = !v.offer;
      }
    },
    // currentTitle is the title the page shows for currentKey's Series.
    list(bookmarks, currentKey, currentTitle = '') {
      const frag = doc.createDocumentFragment();
      if (bookmarks.length === 0) {
        frag.appendChild(el(doc, 'li', { className: 'empty', testid: 'lectern-empty', text: `No ${libName.toLowerCase()} Bookmarks yet.` }));
      }
      let cur = null;
      for (const b of bookmarks) {
        const li = item(b, currentKey, currentTitle);
        if (b.key === currentKey) cur = li;
        frag.appendChild(li);
      }
      list.replaceChildren(frag);
      if (cur && open) cur.scrollIntoView({ block: 'nearest' });
    },
  };
}
return { isShortcut, mountPanel };
})();

// ---- core/store.js
const m_core_store = (() => {
// What the script keeps between page loads, all in the userscript manager's own
// storage (GM_getValue/GM_setValue), which the Site's page cannot read. Nothing
// goes to the page's web storage or cookies, where the Site's scripts could read it.

const TOKEN = 'lectern.token';
const SETTINGS = 'lectern.settings';
const CACHE = 'lectern.cache.';

// TEST_HOOK is read, never written. A userscript manager only stores JSON
// values, so it can never hold a function; the end-to-end harness's GM_getValue
// shim returns one here to be handed the panel's closed shadow root. The page
// cannot plant it: it has no access to the script's storage.
const TEST_HOOK = 'lectern.testHook';

const DEFAULT_SETTINGS = Object.freeze({ autoRecord: false });

// checkToken returns the token to keep, or throws an Error whose message tells
// the Reader what is wrong. A token goes into an HTTP header, so anything that
// is not printable ASCII without spaces is refused rather than sent.
function checkToken(raw) {
  const t = typeof raw === 'string' ? raw.trim() : '';
  if (t === '') throw new Error('Paste a token first.');
  if (!/^[\x21-\x7e]+$/.test(t)) throw new Error('That does not look like a Lectern token (spaces or unusual characters).');
  if (t.length < 8 || t.length > 1024) throw new Error('That does not look like a Lectern token (wrong length).');
  return t;
}

function createStore(gm) {
  const get = (k, d) => {
    try {
      const v = gm.getValue(k, d);
      return v === undefined ? d : v;
    } catch {
      return d;
    }
  };
  const set = (k, v) => gm.setValue(k, v);

  return {
    token() {
      const t = get(TOKEN, '');
      return typeof t === 'string' ? t : '';
    },
    hasToken() {
      return this.token() !== '';
    },
    // setToken keeps a checked token and drops the cached lists, which belong
    // to whoever the previous token named.
    setToken(raw) {
      const t = checkToken(raw);
      set(TOKEN, t);
      this.clearCaches();
    },
    clearToken() {
      set(TOKEN, '');
      this.clearCaches();
    },
    settings() {
      const s = get(SETTINGS, null);
      const out = { ...DEFAULT_SETTINGS };
      if (s && typeof s === 'object' && typeof s.autoRecord === 'boolean') out.autoRecord = s.autoRecord;
      return out;
    },
    setSettings(patch) {
      const next = { ...this.settings() };
      if (patch && typeof patch.autoRecord === 'boolean') next.autoRecord = patch.autoRecord;
      set(SETTINGS, next);
      return next;
    },
    // cache holds the last Bookmarks reply for a Library: { base, etag, body }.
    cache(library) {
      const c = get(CACHE + library, null);
      if (!c || typeof c !== 'object' || typeof c.etag !== 'string' || typeof c.body !== 'string' || typeof c.base !== 'string') {
        return null;
      }
      return c;
    },
    setCache(library, c) {
      set(CACHE + library, { base: c.base, etag: c.etag, body: c.body });
    },
    clearCaches() {
      set(CACHE + 'manga', null);
      set(CACHE + 'novel', null);
    },
    testHook() {
      const h = get(TEST_HOOK, null);
      return typeof h === 'function' ? h : null;
    },
  };
}
return { TEST_HOOK, DEFAULT_SETTINGS, checkToken, createStore };
})();

// ---- core/main.js
const m_core_main = (() => {
// The controller: finds the Site adapter for this page, mounts the panel and
// wires the API client, the storage and the page reading together.

const { readPage, siteForHost } = m_core_adapter;
const { LecternError, createClient, progressBody } = m_core_api;
const { describeCurrent, findBookmark, shouldAutoRecord } = m_core_current;
const { gmFromScope } = m_core_gm;
const { pageFromDocument } = m_core_page;
const { isShortcut, mountPanel } = m_core_panel;
const { createStore } = m_core_store;
const { parseOffer } = m_core_work;

// Without a userscript manager nothing is kept and nothing is sent.
const NO_GM = { xhr: null, getValue: (k, d) => d, setValue: () => {} };

// How often the URL is compared, for Sites that change pages without loading
// one (kagane, and parts of comix and asura), and how long an automatic record
// waits for such a page to finish drawing its title.
const WATCH_MS = 1000;
const AUTO_RECORD_DELAY_MS = 1500;

// start runs the script on a page. It returns null when no Site of this script
// claims the page's host.
function start({ script, version, library, baseURL, sites, ...env }) {
  const win = env.win || window;
  const site = siteForHost(sites, win.location.hostname);
  if (!site) return null;
  const doc = env.doc || document;
  const gm = 'gm' in env ? env.gm : gmFromScope();
  const store = createStore(gm || NO_GM);
  const client = createClient({ baseURL, xhr: gm ? gm.xhr : null, store, client: `${script}/${version}` });

  const state = {
    href: '',
    page: null,
    ref: null,
    refError: null,
    refFor: '',
    bookmarks: [],
    // The link offer for the Series of this page when the Reader does not
    // hold it: parseOffer's answer, for offerFor's key.
    offer: null,
    offerFor: '',
    autoDoneFor: '',
    busy: false,
  };

  const panel = mountPanel(doc, {
    script,
    version,
    library,
    handlers: {
      toggled(open) {
        if (open) refresh(null);
      },
      refresh: () => refresh(null),
      record: () => record(false),
      removeCurrent: () => state.ref && remove(state.ref.key),
      remove: (key) => remove(key),
      linkOffer: () => linkOffer(),
      dismissOffer: () => dismissOffer(),
      saveToken(value) {
        try {
          store.setToken(value);
        } catch (err) {
          panel.status(err.message, { code: 'bad-token-format', tone: 'error' });
          return;
        }
        state.bookmarks = [];
        panel.settings(settingsView());
        refresh({ text: 'Token saved.', code: 'token-saved' });
      },
      clearToken() {
        store.clearToken();
        state.bookmarks = [];
        panel.settings(settingsView());
        panel.list([], '');
        panel.status('Token forgotten.', { code: 'token-cleared' });
      },
      setAutoRecord(on) {
        store.setSettings({ autoRecord: on });
        if (on) scheduleAutoRecord();
      },
    },
  });
  panel.mount();
  panel.settings(settingsView());
  panel.versions('');

  function settingsView() {
    return { hasToken: store.hasToken(), autoRecord: store.settings().autoRecord };
  }

  function readLocation() {
    state.href = win.location.href;
    try {
      state.page = readPage(site, pageFromDocument(doc, state.href));
    } catch {
      state.page = { kind: 'other', chapter: null, title: '' };
    }
  }

  async function ensureRef() {
    if (state.page.kind === 'other') {
      state.ref = null;
      state.refError = null;
      return;
    }
    if (state.refFor === state.href && (state.ref || (state.refError && state.refError.code === 'unknown-page'))) return;
    try {
      // A chapter URL that names no Series (a root chapter of a theme,
      // MangaDex) is resolved through the Series link the page shows.
      state.ref = await client.resolve(state.page.resolveURL || state.href);
      state.refError = null;
    } catch (err) {
      state.ref = null;
      state.refError = err;
    }
    state.refFor = state.href;
  }

  function renderCurrent() {
    const bookmark = state.ref ? findBookmark(state.bookmarks, state.ref.key) : null;
    const offer = state.ref && state.offerFor === state.ref.key ? state.offer : null;
    panel.current(describeCurrent({ page: state.page, ref: state.ref, refError: state.refError, bookmark, offer }));
  }

  function renderAll() {
    renderCurrent();
    panel.list(state.bookmarks, state.ref ? state.ref.key : '', state.page ? state.page.title : '');
    panel.versions(client.serverVersion);
    panel.settings(settingsView());
  }

  function showError(err) {
    panel.status(err && err.message ? err.message : 'Something went wrong.', { code: (err && err.code) || 'error', tone: 'error' });
    if (err && (err.code === 'no-token' || err.code === 'unauthorized')) panel.showSettings();
  }

  // refresh re-reads the page, the Series it belongs to and the Bookmarks. The
  // Bookmarks request is conditional, so an unchanged list costs a 304. done,
  // when given, is the status to show once the list is back: what was just done.
  async function refresh(done) {
    if (state.busy) return;
    state.busy = true;
    panel.setBusy(true);
    panel.setState('loading');
    try {
      readLocation();
      if (!store.hasToken()) {
        state.bookmarks = [];
        renderAll();
        showError(new LecternError('no-token', 'No token yet. Paste the token from your Lectern token page below.'));
        panel.setState('error');
        return;
      }
      const [list] = await Promise.allSettled([client.listBookmarks(library), ensureRef()]);
      if (list.status === 'fulfilled') {
        state.bookmarks = list.value.bookmarks;
        await loadOffer();
        const n = state.bookmarks.length;
        if (done) panel.status(done.text, { code: done.code, tone: 'ok' });
        else panel.status(`${n} Bookmark${n === 1 ? '' : 's'}${list.value.cached ? ' (unchanged)' : ''}.`, { code: 'ok' });
        renderAll();
        panel.setState('ready');
      } else {
        renderAll();
        showError(list.reason);
        panel.setState('error');
      }
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
  }

  // loadOffer asks, for a Series the Reader does not hold, whether one of
  // their Bookmarks looks like the same story. The offer is a nicety: a
  // failure to ask leaves it out and says nothing.
  async function loadOffer() {
    const ref = state.ref;
    if (!ref || findBookmark(state.bookmarks, ref.key)) {
      state.offer = null;
      state.offerFor = '';
      return;
    }
    try {
      const text = await client.suggestFor(ref.key, state.page ? state.page.title : '');
      state.offer = text ? parseOffer(text, ref.key, state.bookmarks) : null;
    } catch {
      state.offer = null;
    }
    state.offerFor = ref.key;
  }

  // linkOffer bookmarks this page's Series (with the chapter, on a chapter
  // page) and links it with the offered Bookmark, in one click: into that
  // Bookmark's Work when it is in one, else as a new Work of the two.
  async function linkOffer() {
    const offer = state.offer;
    if (state.busy || !offer || !state.ref || state.offerFor !== state.ref.key) return;
    state.busy = true;
    panel.setBusy(true);
    const ref = state.ref;
    try {
      const body = state.page.kind === 'chapter' && state.page.chapter
        ? progressBody(ref, state.page)
        : { site: ref.site, series_url: ref.series_url, ...(state.page.title ? { title: state.page.title } : {}) };
      await client.putBookmark(ref.key, body);
      try {
        if (offer.work) await client.addToWork(offer.work, ref.key);
        else await client.linkWork([offer.key, ref.key]);
      } catch (err) {
        throw new LecternError(err.code || 'error', `Bookmarked, but not linked: ${err.message}`, err.status || 0);
      }
      state.offer = null;
      state.offerFor = '';
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    await refresh({ text: `Bookmarked and linked with ${offer.title || offer.key} on ${offer.site}.`, code: 'linked' });
  }

  // dismissOffer says the offered Bookmark is not this Series' story; the
  // server does not offer the pair again.
  async function dismissOffer() {
    const offer = state.offer;
    if (state.busy || !offer || !state.ref || state.offerFor !== state.ref.key) return;
    state.busy = true;
    panel.setBusy(true);
    try {
      await client.dismissSuggestion([offer.key, state.ref.key]);
      state.offer = null;
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    panel.status('Not offered again.', { code: 'dismissed', tone: 'ok' });
    renderCurrent();
  }

  async function record(auto) {
    if (state.busy) return;
    state.busy = true;
    panel.setBusy(true);
    try {
      readLocation();
      await ensureRef();
      if (!state.ref) throw state.refError || new LecternError('other-page', 'This page is not a chapter page Lectern knows.');
      if (state.page.kind !== 'chapter' || !state.page.chapter) {
        throw new LecternError('no-chapter', 'Could not read the chapter on this page.');
      }
      await client.putBookmark(state.ref.key, progressBody(state.ref, state.page));
      state.autoDoneFor = state.href;
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    await refresh({ text: `${auto ? 'Recorded automatically' : 'Saved'}: ${state.page.chapter.label}.`, code: auto ? 'auto-recorded' : 'recorded' });
  }

  async function remove(key) {
    if (!key || state.busy) return;
    state.busy = true;
    panel.setBusy(true);
    try {
      await client.deleteBookmark(key);
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    await refresh({ text: 'Removed.', code: 'removed' });
  }

  let autoTimer = 0;
  function scheduleAutoRecord() {
    if (autoTimer) win.clearTimeout(autoTimer);
    autoTimer = win.setTimeout(async () => {
      autoTimer = 0;
      const href = win.location.href;
      if (!store.settings().autoRecord || !store.hasToken() || state.autoDoneFor === href || state.busy) return;
      readLocation();
      if (state.page.kind !== 'chapter' || !state.page.chapter) return;
      try {
        await ensureRef();
        if (!state.ref) return;
        const { bookmarks } = await client.listBookmarks(library);
        state.bookmarks = bookmarks;
        state.autoDoneFor = href;
        if (shouldAutoRecord(state.page, findBookmark(bookmarks, state.ref.key))) await record(true);
        else if (panel.isOpen()) renderAll();
      } catch (err) {
        showError(err);
      }
    }, AUTO_RECORD_DELAY_MS);
  }

  function navigated() {
    readLocation();
    state.ref = null;
    state.refError = null;
    state.refFor = '';
    state.offer = null;
    state.offerFor = '';
    if (panel.isOpen()) refresh(null);
    if (store.settings().autoRecord) scheduleAutoRecord();
  }

  readLocation();
  renderCurrent();
  if (store.settings().autoRecord) scheduleAutoRecord();

  win.addEventListener('keydown', (e) => {
    if (!isShortcut(e)) return;
    const t = e.target;
    // Alt+L typed into the page's own fields stays theirs.
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName || ''))) return;
    e.preventDefault();
    panel.setOpen(!panel.isOpen());
  });
  win.addEventListener('popstate', () => win.location.href !== state.href && navigated());
  win.setInterval(() => {
    panel.mount();
    if (win.location.href !== state.href) navigated();
  }, WATCH_MS);

  // Last, so a harness that clicks at once finds everything wired.
  const hook = store.testHook();
  if (hook) {
    try {
      hook({ shadowRoot: panel.root, host: panel.host, script, version });
    } catch {
      // A test harness's mistake must not stop the panel.
    }
  }
  return { site: site.site, panel };
}
return { start };
})();

// ---- core/families.js
const m_core_families = (() => {
// Family adapters: the Sites an Owner added from a family (madara,
// mangathemesia, lightnovelwp) are recognised by the theme's page shape. The
// server writes the list of added Sites of this script's Library into the
// script it serves ({site, family, hosts, series_paths}); the adapters here
// turn each into an ordinary Site adapter.

const { defineSite, pathParts } = m_core_adapter;

// A chapter segment: "chapter-12", "chapter-12-5", "ch-3", "episode-7".
const chapterSeg = /^(?:chapter|chap|ch|episode|ep)[-_]?(\d+)(?:[-_.](\d+))?(?:[-_].*)?$/i;
// A chapter at the root: "<slug>-chapter-12", "<slug>-chapter-12-5".
const rootChapter = /^(.+?)-(?:chapter|chap|ch|episode|ep)-(\d+)(?:-(\d+))?(?:-.*)?$/i;

function number(whole, part) {
  return part ? `${whole}.${part}` : whole;
}

function undash(s) {
  return s.replace(/[-_]+/g, ' ').trim();
}

// families: per theme, how a URL is classified and where the page names the
// chapter, the Series title and (for root chapters) the Series' link.
const families = {
  madara: {
    classify(url, paths) {
      const p = pathParts(url);
      if (p.length < 2 || !paths.includes(p[0])) return { kind: 'other' };
      if (p.length === 2) return { kind: 'series' };
      const m = chapterSeg.exec(p[2]);
      return { kind: 'chapter', number: m ? number(m[1], m[2]) : null };
    },
    chapterSelectors: ['ol.breadcrumb li.active', '#chapter-heading', '.wp-manga-chapter-title', 'h1'],
    seriesTitleSelectors: { series: ['.post-title h1', '.post-title h3'], chapter: ['ol.breadcrumb li:nth-last-child(2) a'] },
    seriesLinkSelectors: [],
  },
  mangathemesia: {
    classify(url, paths) {
      const p = pathParts(url);
      if (p.length === 2 && paths.includes(p[0])) return { kind: 'series' };
      if (p.length === 1) {
        const m = rootChapter.exec(p[0]);
        if (m) return { kind: 'chapter', number: number(m[2], m[3]), seriesFromPage: true };
      }
      return { kind: 'other' };
    },
    chapterSelectors: ['#chapter .headpost h1', 'h1.entry-title'],
    seriesTitleSelectors: { series: ['h1.entry-title'], chapter: ['.allc a', '.headpost .allc a'] },
    seriesLinkSelectors: ['.allc a', '.headpost .allc a', '.ts-breadcrumb li:nth-child(2) a'],
  },
  lightnovelwp: {
    classify(url, paths) {
      const p = pathParts(url);
      if (p.length === 2 && paths.includes(p[0])) return { kind: 'series' };
      if (p.length === 1) {
        const m = rootChapter.exec(p[0]);
        if (m) return { kind: 'chapter', number: number(m[2], m[3]), seriesFromPage: true };
      }
      return { kind: 'other' };
    },
    chapterSelectors: ['.epheader h1.entry-title', 'h1.entry-title', '.cat-series'],
    seriesTitleSelectors: { series: ['h1.entry-title'], chapter: ['.naveps .nvs a[href*="/series/"]', '.ts-breadcrumb li:nth-child(2) a'] },
    seriesLinkSelectors: ['.naveps a[href*="/series/"]', '.ts-breadcrumb li:nth-child(2) a', 'a[href*="/series/"]'],
  },
};

// familySites builds an adapter for each added Site the server listed, of
// the families this script knows; anything else is left out.
function familySites(listed, library) {
  let list = listed;
  if (typeof listed === 'string') {
    try {
      list = listed.startsWith('[') ? JSON.parse(listed) : [];
    } catch {
      list = [];
    }
  }
  if (!Array.isArray(list)) return [];
  const out = [];
  for (const s of list) {
    const f = s && families[s.family];
    if (!f || !Array.isArray(s.hosts) || s.hosts.length === 0) continue;
    const paths = Array.isArray(s.series_paths) && s.series_paths.length ? s.series_paths : ['manga', 'series', 'comic', 'novel', 'webtoon'];
    try {
      out.push(defineSite({
        site: s.site,
        library,
        hosts: s.hosts,
        brand: new RegExp(s.site.replace(/[-]/g, '[-\\s]?'), 'i'),
        classify: (url) => f.classify(url, paths),
        chapterSelectors: f.chapterSelectors,
        seriesTitleSelectors: f.seriesTitleSelectors,
        seriesLinkSelectors: f.seriesLinkSelectors,
        titleFromURL(url) {
          const p = pathParts(url);
          if (p.length >= 2 && paths.includes(p[0])) return undash(p[1]);
          const m = p.length === 1 ? rootChapter.exec(p[0]) : null;
          return m ? undash(m[1]) : '';
        },
      }));
    } catch {
      // a name the adapters refuse: the panel stays off that Site
    }
  }
  return out;
}
return { familySites };
})();

// ---- sites/asura.js
const m_sites_asura = (() => {
// asura (manga). Series /comics/<slug>-<suffix> (before: /series/<slug>-<hex>);
// chapters <series URL>/chapter/<n>, and on the old host also /<slug>-<hex>/chapter/<n>.
// The pages are rendered by Astro islands; the chapter number is in the URL.

const { defineSite, pathParts } = m_core_adapter;

const asura = defineSite({
  site: 'asura',
  library: 'manga',
  hosts: ['asurascans.com', 'asuracomic.net'],
  brand: /asura/i,
  classify(url) {
    const p = pathParts(url);
    const seriesRoot = p[0] === 'comics' || p[0] === 'series';
    if (seriesRoot && p.length === 2) return { kind: 'series' };
    if (seriesRoot && p.length === 4 && p[2] === 'chapter') return { kind: 'chapter', number: p[3] };
    if (!seriesRoot && p.length === 3 && p[1] === 'chapter') return { kind: 'chapter', number: p[2] };
    return { kind: 'other' };
  },
  chapterSelectors: ['h1', 'h2'],
  seriesTitleSelectors: { series: ['h1'] },
});
return { asura };
})();

// ---- sites/demonic.js
const m_sites_demonic = (() => {
// demonic (manga). Series /manga/<Title-With-Dashes>; the reader is
// /title/<Title>/chapter/<n>/<suffix>, reached through /chaptered.php?manga=<id>&chapter=<n>.
// The registry cannot map chaptered.php back to a Series, so there /api/resolve
// answers that the page is unknown and the panel says so.

const { defineSite, pathParts } = m_core_adapter;

function dashed(s) {
  return s.replace(/-+/g, ' ');
}

const demonic = defineSite({
  site: 'demonic',
  library: 'manga',
  hosts: ['demonicscans.org'],
  brand: /demonic/i,
  classify(url) {
    const p = pathParts(url);
    if (p.length === 2 && p[0] === 'manga') return { kind: 'series' };
    if (p.length >= 4 && p[0] === 'title' && p[2] === 'chapter') return { kind: 'chapter', number: p[3] };
    if (p.length === 1 && p[0] === 'chaptered.php' && url.searchParams.has('chapter')) {
      return { kind: 'chapter', number: url.searchParams.get('chapter') };
    }
    return { kind: 'other' };
  },
  chapterSelectors: ['h1'],
  seriesTitleSelectors: { series: ['h1.big-fat-titles'] },
  titleFromURL(url) {
    const p = pathParts(url);
    return (p[0] === 'manga' || p[0] === 'title') && p[1] ? dashed(p[1]) : '';
  },
});
return { demonic };
})();

// ---- sites/comix.js
const m_sites_comix = (() => {
// comix (manga). Series /title/<hid>-<slug>; chapters
// /title/<hid>-<slug>/<chapterId>-chapter-<n>. The chapter number is in the URL.

const { defineSite, pathParts } = m_core_adapter;

const chapterSegment = /^\d+-chapter-(\d{1,6}(?:\.\d{1,3})?)$/;

const comix = defineSite({
  site: 'comix',
  library: 'manga',
  hosts: ['comix.to', 'comix.ws'],
  brand: /comix/i,
  classify(url) {
    const p = pathParts(url);
    if (p[0] !== 'title') return { kind: 'other' };
    if (p.length === 2) return { kind: 'series' };
    const m = p.length === 3 ? chapterSegment.exec(p[2]) : null;
    if (m) return { kind: 'chapter', number: m[1] };
    return { kind: 'other' };
  },
  chapterSelectors: ['h1'],
  seriesTitleSelectors: { series: ['h1'] },
});
return { comix };
})();

// ---- sites/kagane.js
const m_sites_kagane = (() => {
// kagane (manga). Series /series/<uuid>; the reader /series/<uuid>/reader/<bookUuid>
// names a book, not a chapter number, so the label comes from the page's title or
// heading. It is a single-page app: the core re-reads the page when the URL changes.

const { defineSite, pathParts } = m_core_adapter;

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const kagane = defineSite({
  site: 'kagane',
  library: 'manga',
  hosts: ['kagane.to', 'kagane.org'],
  brand: /kagane/i,
  classify(url) {
    const p = pathParts(url);
    if (p[0] !== 'series' || !uuid.test(p[1] || '')) return { kind: 'other' };
    if (p.length === 2) return { kind: 'series' };
    if (p.length === 4 && p[2] === 'reader' && uuid.test(p[3])) return { kind: 'chapter' };
    return { kind: 'other' };
  },
  chapterSelectors: ['h1', 'h2'],
  seriesTitleSelectors: { series: ['h1'] },
});
return { kagane };
})();

// ---- sites/mangadex.js
const m_sites_mangadex = (() => {
// mangadex (manga). Title pages /title/<uuid>[/<slug>]; the reader
// /chapter/<uuid>[/<page>] names a chapter, not its manga, so the Series comes from
// the title link in the reader's header (seriesLinkSelectors) and the server
// resolves that. It is a single-page app: the core re-reads the page when the URL
// changes.

const { defineSite, pathParts } = m_core_adapter;

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const mangadex = defineSite({
  site: 'mangadex',
  library: 'manga',
  hosts: ['mangadex.org'],
  brand: /mangadex/i,
  classify(url) {
    const p = pathParts(url);
    if (p[0] === 'title' && uuid.test(p[1] || '') && p.length <= 3) return { kind: 'series' };
    if (p[0] === 'chapter' && uuid.test(p[1] || '') && (p.length === 2 || (p.length === 3 && /^\d+$/.test(p[2])))) {
      return { kind: 'chapter', url: `https://${url.host}/chapter/${p[1].toLowerCase()}` };
    }
    return { kind: 'other' };
  },
  chapterSelectors: ['.reader--header-chapter', '.reader--header-title'],
  seriesTitleSelectors: { series: ['.title p'], chapter: ['a.reader--header-manga'] },
  seriesLinkSelectors: ['a.reader--header-manga'],
});
return { mangadex };
})();

// ---- sites/webtoons.js
const m_sites_webtoons = (() => {
// webtoons (manga). List pages /<lang>/<genre>/<slug>/list?title_no=N; viewers
// /<lang>/<genre>/<slug>/<episode>/viewer?title_no=N&episode_no=M, whose episode_no
// is the episode's number. Canvas titles (/canvas/) are not followed.

const { defineSite, pathParts } = m_core_adapter;

const digits = /^\d{1,12}$/;

const webtoons = defineSite({
  site: 'webtoons',
  library: 'manga',
  hosts: ['webtoons.com'],
  brand: /webtoons?/i,
  classify(url) {
    const p = pathParts(url);
    const title = url.searchParams.get('title_no') || '';
    if (!digits.test(title) || p[1] === 'canvas' || p[1] === 'challenge') return { kind: 'other' };
    if (p.length === 4 && p[3] === 'list') return { kind: 'series' };
    const episode = url.searchParams.get('episode_no') || '';
    if (p.length === 5 && p[4] === 'viewer' && digits.test(episode)) return { kind: 'chapter', number: episode };
    return { kind: 'other' };
  },
  chapterSelectors: ['h1.subj_episode'],
  seriesTitleSelectors: { series: ['.detail_header .info h1.subj', 'h1.subj'], chapter: ['.subj_info a.subj'] },
});
return { webtoons };
})();

// ---- lectern-manga.entry.js
const m_lectern_manga_entry = (() => {
const { start } = m_core_main;
const { familySites } = m_core_families;
const { asura } = m_sites_asura;
const { demonic } = m_sites_demonic;
const { comix } = m_sites_comix;
const { kagane } = m_sites_kagane;
const { mangadex } = m_sites_mangadex;
const { webtoons } = m_sites_webtoons;
start({ script: "lectern-manga", version: "0.5.0", library: "manga", baseURL: LECTERN_BASE_URL, sites: [asura, demonic, comix, kagane, mangadex, webtoons, ...familySites(LECTERN_ADDED_SITES, "manga")] });
return {};
})();
})();
