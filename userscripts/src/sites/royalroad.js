// royalroad (novel). Fiction pages /fiction/<id>/<slug>; chapters
// /fiction/<id>/<slug>/chapter/<chapter id>[/<slug>], whose id is not a chapter number:
// the number is the one the chapter's title gives ("Chapter 28: ..."), none for a
// Prologue or an Interlude.

import { defineSite, pathParts } from '../core/adapter.js';

const id = /^\d{1,12}$/;

export const royalroad = defineSite({
  site: 'royalroad',
  library: 'novel',
  hosts: ['royalroad.com'],
  brand: /royal\s*road/i,
  classify(url) {
    const p = pathParts(url);
    if (p[0] !== 'fiction' || !id.test(p[1] || '')) return { kind: 'other' };
    if (p.length <= 3) return { kind: 'series' };
    if ((p.length === 5 || p.length === 6) && p[3] === 'chapter' && id.test(p[4])) {
      // The chapter's own slug follows its title and the feed's links lack it:
      // the server names a chapter without it, and so does Progress.
      return { kind: 'chapter', url: `https://${url.host}/fiction/${p[1]}/${p[2]}/chapter/${p[4]}` };
    }
    return { kind: 'other' };
  },
  chapterSelectors: ['.fic-header h1', 'h1'],
  seriesTitleSelectors: { series: ['.fic-title h1'], chapter: ['.fic-header h2 a', '.fic-header h2'] },
});
