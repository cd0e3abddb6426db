// webtoons (manga). List pages /<lang>/<genre>/<slug>/list?title_no=N; viewers
// /<lang>/<genre>/<slug>/<episode>/viewer?title_no=N&episode_no=M, whose episode_no
// is the episode's number. Canvas titles (/canvas/) are not followed.

import { defineSite, pathParts } from '../core/adapter.js';

const digits = /^\d{1,12}$/;

export const webtoons = defineSite({
  site: 'webtoons',
  library: 'manga',
  hosts: ['webtoons.com'],
  brand: /webtoons?/i,
  classify(url) {
    const p = pathParts(url);
    const title = url.searchParams.get('title_no') || '';
    if (!digits.test(title) || p[1] === 'canvas' || p[1] === 'challenge') return { kind: 'other' };
    if (p.length === 4 && p[3] === 'list') return { kind: 'series' };
    const episode = url.searchParams.get('episode_no') || '';
    if (p.length === 5 && p[4] === 'viewer' && digits.test(episode)) return { kind: 'chapter', number: episode };
    return { kind: 'other' };
  },
  chapterSelectors: ['h1.subj_episode'],
  seriesTitleSelectors: { series: ['.detail_header .info h1.subj', 'h1.subj'], chapter: ['.subj_info a.subj'] },
});
