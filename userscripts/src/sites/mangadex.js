// mangadex (manga). Title pages /title/<uuid>[/<slug>]; the reader
// /chapter/<uuid>[/<page>] names a chapter, not its manga, so the Series comes from
// the title link in the reader's header (seriesLinkSelectors) and the server
// resolves that. It is a single-page app: the core re-reads the page when the URL
// changes.

import { defineSite, pathParts } from '../core/adapter.js';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const mangadex = defineSite({
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
