// Works in the panel (CONTEXT.md "Work": a Reader's link between their own
// Bookmarks of one story on several Sites). Pure functions of the wire, so the
// lines are tested without a DOM; the panel draws their segments with
// textContent and checked links only.
//
// A line is a list of segments: { text } or { text, url, testid }. A segment
// with a url becomes a link when the url is http(s), else plain text.

import { clean } from './util.js';

const str = (v) => (typeof v === 'string' ? v : '');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

// readWorkFields reads the Work and gone fields of a wire Bookmark (always
// present on a server with Works; defaulted for an older one).
export function readWorkFields(raw) {
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
export function workLine(b) {
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
export function workLineText(segs) {
  return segs ? segs.map((s) => s.text).join('') : '';
}

// goneLine says that a Bookmark's Series is gone from its Site, why, and
// where the story goes on when the Bookmark is in a Work; null when not gone.
export function goneLine(b) {
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
export function parseOffer(text, currentKey, bookmarks = []) {
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
export function offerText(offer) {
  const title = offer.title || 'your Bookmark';
  return `Same story as ${title} on ${offer.site}?`;
}
