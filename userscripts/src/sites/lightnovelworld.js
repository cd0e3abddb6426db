// lightnovelworld (novel). Series /novel/<slug>, its chapter lists
// /novel/<slug>/chapters[/page-<n>], chapters /novel/<slug>/chapter-<n>[-title].

import { defineSite, pathParts } from '../core/adapter.js';

const chapterSegment = /^chapter-(\d{1,6})(?:-|$)/;

export const lightnovelworld = defineSite({
  site: 'lightnovelworld',
  library: 'novel',
  hosts: ['lightnovelworld.com', 'lightnovelworld.co'],
  brand: /light\s*novel\s*world/i,
  classify(url) {
    const p = pathParts(url);
    if (p[0] !== 'novel' || !p[1]) return { kind: 'other' };
    if (p.length === 2 || p[2] === 'chapters') return { kind: 'series' };
    const m = p.length === 3 ? chapterSegment.exec(p[2]) : null;
    if (m) return { kind: 'chapter', number: m[1] };
    return { kind: 'other' };
  },
  chapterSelectors: ['.chapter-title', 'h1'],
  seriesTitleSelectors: { series: ['h1.novel-title'], chapter: ['a.booktitle', '.booktitle'] },
});
