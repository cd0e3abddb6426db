// novelfull (novel). Series /<slug>.html; chapters /<slug>/chapter-<n>[-title].html.
// Root-level pages such as /index.html are listings, not Series.

import { defineSite, pathParts } from '../core/adapter.js';

const listings = new Set(['index', 'latest-release-novel', 'hot-novel', 'completed-novel', 'most-popular', 'search']);
const chapterSegment = /^chapter-(\d{1,6})(?:-.*)?\.html$/;

export const novelfull = defineSite({
  site: 'novelfull',
  library: 'novel',
  hosts: ['novelfull.com', 'novelfull.net'],
  brand: /novel\s*full/i,
  classify(url) {
    const p = pathParts(url);
    if (p.length === 1 && p[0].endsWith('.html') && !listings.has(p[0].slice(0, -5))) return { kind: 'series' };
    const m = p.length === 2 ? chapterSegment.exec(p[1]) : null;
    if (m) return { kind: 'chapter', number: m[1] };
    return { kind: 'other' };
  },
  chapterSelectors: ['a.chapter-title', '.chapter-title', '.chapter-text'],
  seriesTitleSelectors: { series: ['h3.title'], chapter: ['a.truyen-title'] },
});
