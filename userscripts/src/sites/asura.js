// asura (manga). Series /comics/<slug>-<suffix> (before: /series/<slug>-<hex>);
// chapters <series URL>/chapter/<n>, and on the old host also /<slug>-<hex>/chapter/<n>.
// The pages are rendered by Astro islands; the chapter number is in the URL.

import { defineSite, pathParts } from '../core/adapter.js';

export const asura = defineSite({
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
