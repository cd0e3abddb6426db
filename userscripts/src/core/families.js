// Family adapters: the Sites an Owner added from a family (madara,
// mangathemesia, lightnovelwp) are recognised by the theme's page shape. The
// server writes the list of added Sites of this script's Library into the
// script it serves ({site, family, hosts, series_paths}); the adapters here
// turn each into an ordinary Site adapter.

import { defineSite, pathParts } from './adapter.js';

// A chapter segment: "chapter-12", "chapter-12-5", "ch-3", "episode-7".
const chapterSeg = /^(?:chapter|chap|ch|episode|ep)[-_]?(\d+)(?:[-_.](\d+))?(?:[-_].*)?$/i;
// A chapter at the root: "<slug>-chapter-12", "<slug>-chapter-12-5".
const rootChapter = /^(.+?)-(?:chapter|chap|ch|episode|ep)-(\d+)(?:-(\d+))?(?:-.*)?$/i;

function number(whole, part) {
  return part ? `${whole}.${part}` : whole;
}

function undash(s) {
  return s.replace(/[-_]+/g, ' ').trim();
}

// families: per theme, how a URL is classified and where the page names the
// chapter, the Series title and (for root chapters) the Series' link.
const families = {
  madara: {
    classify(url, paths) {
      const p = pathParts(url);
      if (p.length < 2 || !paths.includes(p[0])) return { kind: 'other' };
      if (p.length === 2) return { kind: 'series' };
      const m = chapterSeg.exec(p[2]);
      return { kind: 'chapter', number: m ? number(m[1], m[2]) : null };
    },
    chapterSelectors: ['ol.breadcrumb li.active', '#chapter-heading', '.wp-manga-chapter-title', 'h1'],
    seriesTitleSelectors: { series: ['.post-title h1', '.post-title h3'], chapter: ['ol.breadcrumb li:nth-last-child(2) a'] },
    seriesLinkSelectors: [],
  },
  mangathemesia: {
    classify(url, paths) {
      const p = pathParts(url);
      if (p.length === 2 && paths.includes(p[0])) return { kind: 'series' };
      if (p.length === 1) {
        const m = rootChapter.exec(p[0]);
        if (m) return { kind: 'chapter', number: number(m[2], m[3]), seriesFromPage: true };
      }
      return { kind: 'other' };
    },
    chapterSelectors: ['#chapter .headpost h1', 'h1.entry-title'],
    seriesTitleSelectors: { series: ['h1.entry-title'], chapter: ['.allc a', '.headpost .allc a'] },
    seriesLinkSelectors: ['.allc a', '.headpost .allc a', '.ts-breadcrumb li:nth-child(2) a'],
  },
  lightnovelwp: {
    classify(url, paths) {
      const p = pathParts(url);
      if (p.length === 2 && paths.includes(p[0])) return { kind: 'series' };
      if (p.length === 1) {
        const m = rootChapter.exec(p[0]);
        if (m) return { kind: 'chapter', number: number(m[2], m[3]), seriesFromPage: true };
      }
      return { kind: 'other' };
    },
    chapterSelectors: ['.epheader h1.entry-title', 'h1.entry-title', '.cat-series'],
    seriesTitleSelectors: { series: ['h1.entry-title'], chapter: ['.naveps .nvs a[href*="/series/"]', '.ts-breadcrumb li:nth-child(2) a'] },
    seriesLinkSelectors: ['.naveps a[href*="/series/"]', '.ts-breadcrumb li:nth-child(2) a', 'a[href*="/series/"]'],
  },
};

// familySites builds an adapter for each added Site the server listed, of
// the families this script knows; anything else is left out.
export function familySites(listed, library) {
  let list = listed;
  if (typeof listed === 'string') {
    try {
      list = listed.startsWith('[') ? JSON.parse(listed) : [];
    } catch {
      list = [];
    }
  }
  if (!Array.isArray(list)) return [];
  const out = [];
  for (const s of list) {
    const f = s && families[s.family];
    if (!f || !Array.isArray(s.hosts) || s.hosts.length === 0) continue;
    const paths = Array.isArray(s.series_paths) && s.series_paths.length ? s.series_paths : ['manga', 'series', 'comic', 'novel', 'webtoon'];
    try {
      out.push(defineSite({
        site: s.site,
        library,
        hosts: s.hosts,
        brand: new RegExp(s.site.replace(/[-]/g, '[-\\s]?'), 'i'),
        classify: (url) => f.classify(url, paths),
        chapterSelectors: f.chapterSelectors,
        seriesTitleSelectors: f.seriesTitleSelectors,
        seriesLinkSelectors: f.seriesLinkSelectors,
        titleFromURL(url) {
          const p = pathParts(url);
          if (p.length >= 2 && paths.includes(p[0])) return undash(p[1]);
          const m = p.length === 1 ? rootChapter.exec(p[0]) : null;
          return m ? undash(m[1]) : '';
        },
      }));
    } catch {
      // a name the adapters refuse: the panel stays off that Site
    }
  }
  return out;
}
