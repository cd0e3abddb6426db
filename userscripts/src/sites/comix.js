// comix (manga). Series /title/<hid>-<slug>; chapters
// /title/<hid>-<slug>/<chapterId>-chapter-<n>. The chapter number is in the URL.

import { defineSite, pathParts } from '../core/adapter.js';

const chapterSegment = /^\d+-chapter-(\d{1,6}(?:\.\d{1,3})?)$/;

export const comix = defineSite({
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
