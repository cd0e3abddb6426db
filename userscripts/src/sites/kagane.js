// kagane (manga). Series /series/<uuid>; the reader /series/<uuid>/reader/<bookUuid>
// names a book, not a chapter number, so the label comes from the page's title or
// heading. It is a single-page app: the core re-reads the page when the URL changes.

import { defineSite, pathParts } from '../core/adapter.js';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const kagane = defineSite({
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
