// demonic (manga). Series /manga/<Title-With-Dashes>; the reader is
// /title/<Title>/chapter/<n>/<suffix>, reached through /chaptered.php?manga=<id>&chapter=<n>.
// The registry cannot map chaptered.php back to a Series, so there /api/resolve
// answers that the page is unknown and the panel says so.

import { defineSite, pathParts } from '../core/adapter.js';

function dashed(s) {
  return s.replace(/-+/g, ' ');
}

export const demonic = defineSite({
  site: 'demonic',
  library: 'manga',
  hosts: ['demonicscans.org'],
  brand: /demonic/i,
  classify(url) {
    const p = pathParts(url);
    if (p.length === 2 && p[0] === 'manga') return { kind: 'series' };
    if (p.length >= 4 && p[0] === 'title' && p[2] === 'chapter') return { kind: 'chapter', number: p[3] };
    if (p.length === 1 && p[0] === 'chaptered.php' && url.searchParams.has('chapter')) {
      return { kind: 'chapter', number: url.searchParams.get('chapter') };
    }
    return { kind: 'other' };
  },
  chapterSelectors: ['h1'],
  seriesTitleSelectors: { series: ['h1.big-fat-titles'] },
  titleFromURL(url) {
    const p = pathParts(url);
    return (p[0] === 'manga' || p[0] === 'title') && p[1] ? dashed(p[1]) : '';
  },
});
