// The wire's Bookmark and resolve objects, read tolerantly: the server owns the
// wire shape and only ever adds to it, so unknown fields are ignored and missing
// optional ones get defaults. A script built for an older server keeps working.

import { clean, isHttpURL } from './util.js';
import { readWorkFields } from './work.js';

const str = (v) => (typeof v === 'string' ? v : '');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

// normalizeBookmark returns the fields the panel uses, or null for an entry that
// cannot be shown (no key).
export function normalizeBookmark(raw) {
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
export function parseBookmarks(text) {
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
export function parseRef(text) {
  const v = JSON.parse(text);
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('resolve reply is not an object');
  const ref = { key: str(v.key), site: str(v.site), kind: str(v.kind), series_url: str(v.series_url) };
  if (ref.key === '' || ref.site === '' || !isHttpURL(ref.series_url)) throw new Error('resolve reply lacks key, site or series_url');
  return ref;
}

// unreadBadge is the badge text: a count, "new" for a bare flag, or '' for none.
export function unreadBadge(b) {
  if (b.unread === true) return 'new';
  if (typeof b.unread === 'number' && b.unread > 0) return b.unread > 999 ? '999+' : String(b.unread);
  return '';
}

// monogram is the placeholder's text: the first letters of the title's first two
// words, or of the Series key's slug when there is no title.
export function monogram(title, key = '') {
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
export function slugTitle(seriesURL) {
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
export function displayTitle(b, pageTitle = '') {
  return clean(b.title) || clean(pageTitle) || slugTitle(b.series_url) || 'Untitled';
}

// coverChoice decides how a Bookmark's Cover is drawn. The src is the server's
// `cover` exactly as sent (an absolute URL on the deployment); "" means no Cover
// yet and anything that is not http(s) is refused, both giving the placeholder.
export function coverChoice(b) {
  if (b.cover !== '' && isHttpURL(b.cover)) return { src: b.cover };
  return { monogram: monogram(b.title, b.key) };
}
