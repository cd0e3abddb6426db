// The narrow, read-only view of the Site's page that adapters get (see adapter.js).
// It exposes text only: adapters have no way to read images or metadata tags,
// so no Cover can be scraped through it.

import { clean } from './util.js';

export function pageFromDocument(doc, href) {
  return {
    url: new URL(href),
    title: typeof doc.title === 'string' ? doc.title : '',
    // link is where the first matching link points, resolved against the
    // page: an address, never an image or a tag's metadata.
    link(selector) {
      try {
        const el = doc.querySelector(selector);
        return el && el.tagName === 'A' && typeof el.href === 'string' ? el.href : '';
      } catch {
        return '';
      }
    },
    text(selector) {
      try {
        const el = doc.querySelector(selector);
        return el ? clean(el.textContent, 512) : '';
      } catch {
        return '';
      }
    },
  };
}
