import { slugTitle } from './bookmarks.js';
import { goneLine, offerText, workLine } from './work.js';

// What the panel says about the page it is on, and whether Progress may be
// recorded automatically. Pure functions of the page reading, the resolved
// Series and the Bookmarks, so they are tested without a DOM.

// findBookmark returns the Bookmark of the Series with key, or null.
export function findBookmark(bookmarks, key) {
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
export function describeCurrent({ page, ref, refError, bookmark, offer = null }) {
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
export function shouldAutoRecord(page, bookmark) {
  if (!page || page.kind !== 'chapter' || !page.chapter || !bookmark) return false;
  const n = page.chapter.number;
  const had = bookmark.chapter_number;
  if (typeof n === 'number' && typeof had === 'number') return n > had;
  if (bookmark.chapter === '') return true;
  return page.chapter.url !== bookmark.chapter_url;
}
