// The controller: finds the Site adapter for this page, mounts the panel and
// wires the API client, the storage and the page reading together.

import { readPage, siteForHost } from './adapter.js';
import { LecternError, createClient, progressBody } from './api.js';
import { describeCurrent, findBookmark, shouldAutoRecord } from './current.js';
import { gmFromScope } from './gm.js';
import { pageFromDocument } from './page.js';
import { isShortcut, mountPanel } from './panel.js';
import { createStore } from './store.js';
import { parseOffer } from './work.js';

// Without a userscript manager nothing is kept and nothing is sent.
const NO_GM = { xhr: null, getValue: (k, d) => d, setValue: () => {} };

// How often the URL is compared, for Sites that change pages without loading
// one (kagane, and parts of comix and asura), and how long an automatic record
// waits for such a page to finish drawing its title.
const WATCH_MS = 1000;
const AUTO_RECORD_DELAY_MS = 1500;

// start runs the script on a page. It returns null when no Site of this script
// claims the page's host.
export function start({ script, version, library, baseURL, sites, ...env }) {
  const win = env.win || window;
  const site = siteForHost(sites, win.location.hostname);
  if (!site) return null;
  const doc = env.doc || document;
  const gm = 'gm' in env ? env.gm : gmFromScope();
  const store = createStore(gm || NO_GM);
  const client = createClient({ baseURL, xhr: gm ? gm.xhr : null, store, client: `${script}/${version}` });

  const state = {
    href: '',
    page: null,
    ref: null,
    refError: null,
    refFor: '',
    bookmarks: [],
    // The link offer for the Series of this page when the Reader does not
    // hold it: parseOffer's answer, for offerFor's key.
    offer: null,
    offerFor: '',
    autoDoneFor: '',
    busy: false,
  };

  const panel = mountPanel(doc, {
    script,
    version,
    library,
    handlers: {
      toggled(open) {
        if (open) refresh(null);
      },
      refresh: () => refresh(null),
      record: () => record(false),
      removeCurrent: () => state.ref && remove(state.ref.key),
      remove: (key) => remove(key),
      linkOffer: () => linkOffer(),
      dismissOffer: () => dismissOffer(),
      saveToken(value) {
        try {
          store.setToken(value);
        } catch (err) {
          panel.status(err.message, { code: 'bad-token-format', tone: 'error' });
          return;
        }
        state.bookmarks = [];
        panel.settings(settingsView());
        refresh({ text: 'Token saved.', code: 'token-saved' });
      },
      clearToken() {
        store.clearToken();
        state.bookmarks = [];
        panel.settings(settingsView());
        panel.list([], '');
        panel.status('Token forgotten.', { code: 'token-cleared' });
      },
      setAutoRecord(on) {
        store.setSettings({ autoRecord: on });
        if (on) scheduleAutoRecord();
      },
    },
  });
  panel.mount();
  panel.settings(settingsView());
  panel.versions('');

  function settingsView() {
    return { hasToken: store.hasToken(), autoRecord: store.settings().autoRecord };
  }

  function readLocation() {
    state.href = win.location.href;
    try {
      state.page = readPage(site, pageFromDocument(doc, state.href));
    } catch {
      state.page = { kind: 'other', chapter: null, title: '' };
    }
  }

  async function ensureRef() {
    if (state.page.kind === 'other') {
      state.ref = null;
      state.refError = null;
      return;
    }
    if (state.refFor === state.href && (state.ref || (state.refError && state.refError.code === 'unknown-page'))) return;
    try {
      // A chapter URL that names no Series (a root chapter of a theme,
      // MangaDex) is resolved through the Series link the page shows.
      state.ref = await client.resolve(state.page.resolveURL || state.href);
      state.refError = null;
    } catch (err) {
      state.ref = null;
      state.refError = err;
    }
    state.refFor = state.href;
  }

  function renderCurrent() {
    const bookmark = state.ref ? findBookmark(state.bookmarks, state.ref.key) : null;
    const offer = state.ref && state.offerFor === state.ref.key ? state.offer : null;
    panel.current(describeCurrent({ page: state.page, ref: state.ref, refError: state.refError, bookmark, offer }));
  }

  function renderAll() {
    renderCurrent();
    panel.list(state.bookmarks, state.ref ? state.ref.key : '', state.page ? state.page.title : '');
    panel.versions(client.serverVersion);
    panel.settings(settingsView());
  }

  function showError(err) {
    panel.status(err && err.message ? err.message : 'Something went wrong.', { code: (err && err.code) || 'error', tone: 'error' });
    if (err && (err.code === 'no-token' || err.code === 'unauthorized')) panel.showSettings();
  }

  // refresh re-reads the page, the Series it belongs to and the Bookmarks. The
  // Bookmarks request is conditional, so an unchanged list costs a 304. done,
  // when given, is the status to show once the list is back: what was just done.
  async function refresh(done) {
    if (state.busy) return;
    state.busy = true;
    panel.setBusy(true);
    panel.setState('loading');
    try {
      readLocation();
      if (!store.hasToken()) {
        state.bookmarks = [];
        renderAll();
        showError(new LecternError('no-token', 'No token yet. Paste the token from your Lectern token page below.'));
        panel.setState('error');
        return;
      }
      const [list] = await Promise.allSettled([client.listBookmarks(library), ensureRef()]);
      if (list.status === 'fulfilled') {
        state.bookmarks = list.value.bookmarks;
        await loadOffer();
        const n = state.bookmarks.length;
        if (done) panel.status(done.text, { code: done.code, tone: 'ok' });
        else panel.status(`${n} Bookmark${n === 1 ? '' : 's'}${list.value.cached ? ' (unchanged)' : ''}.`, { code: 'ok' });
        renderAll();
        panel.setState('ready');
      } else {
        renderAll();
        showError(list.reason);
        panel.setState('error');
      }
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
  }

  // loadOffer asks, for a Series the Reader does not hold, whether one of
  // their Bookmarks looks like the same story. The offer is a nicety: a
  // failure to ask leaves it out and says nothing.
  async function loadOffer() {
    const ref = state.ref;
    if (!ref || findBookmark(state.bookmarks, ref.key)) {
      state.offer = null;
      state.offerFor = '';
      return;
    }
    try {
      const text = await client.suggestFor(ref.key, state.page ? state.page.title : '');
      state.offer = text ? parseOffer(text, ref.key, state.bookmarks) : null;
    } catch {
      state.offer = null;
    }
    state.offerFor = ref.key;
  }

  // linkOffer bookmarks this page's Series (with the chapter, on a chapter
  // page) and links it with the offered Bookmark, in one click: into that
  // Bookmark's Work when it is in one, else as a new Work of the two.
  async function linkOffer() {
    const offer = state.offer;
    if (state.busy || !offer || !state.ref || state.offerFor !== state.ref.key) return;
    state.busy = true;
    panel.setBusy(true);
    const ref = state.ref;
    try {
      const body = state.page.kind === 'chapter' && state.page.chapter
        ? progressBody(ref, state.page)
        : { site: ref.site, series_url: ref.series_url, ...(state.page.title ? { title: state.page.title } : {}) };
      await client.putBookmark(ref.key, body);
      try {
        if (offer.work) await client.addToWork(offer.work, ref.key);
        else await client.linkWork([offer.key, ref.key]);
      } catch (err) {
        throw new LecternError(err.code || 'error', `Bookmarked, but not linked: ${err.message}`, err.status || 0);
      }
      state.offer = null;
      state.offerFor = '';
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    await refresh({ text: `Bookmarked and linked with ${offer.title || offer.key} on ${offer.site}.`, code: 'linked' });
  }

  // dismissOffer says the offered Bookmark is not this Series' story; the
  // server does not offer the pair again.
  async function dismissOffer() {
    const offer = state.offer;
    if (state.busy || !offer || !state.ref || state.offerFor !== state.ref.key) return;
    state.busy = true;
    panel.setBusy(true);
    try {
      await client.dismissSuggestion([offer.key, state.ref.key]);
      state.offer = null;
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    panel.status('Not offered again.', { code: 'dismissed', tone: 'ok' });
    renderCurrent();
  }

  async function record(auto) {
    if (state.busy) return;
    state.busy = true;
    panel.setBusy(true);
    try {
      readLocation();
      await ensureRef();
      if (!state.ref) throw state.refError || new LecternError('other-page', 'This page is not a chapter page Lectern knows.');
      if (state.page.kind !== 'chapter' || !state.page.chapter) {
        throw new LecternError('no-chapter', 'Could not read the chapter on this page.');
      }
      await client.putBookmark(state.ref.key, progressBody(state.ref, state.page));
      state.autoDoneFor = state.href;
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    await refresh({ text: `${auto ? 'Recorded automatically' : 'Saved'}: ${state.page.chapter.label}.`, code: auto ? 'auto-recorded' : 'recorded' });
  }

  async function remove(key) {
    if (!key || state.busy) return;
    state.busy = true;
    panel.setBusy(true);
    try {
      await client.deleteBookmark(key);
    } catch (err) {
      showError(err);
      return;
    } finally {
      state.busy = false;
      panel.setBusy(false);
    }
    await refresh({ text: 'Removed.', code: 'removed' });
  }

  let autoTimer = 0;
  function scheduleAutoRecord() {
    if (autoTimer) win.clearTimeout(autoTimer);
    autoTimer = win.setTimeout(async () => {
      autoTimer = 0;
      const href = win.location.href;
      if (!store.settings().autoRecord || !store.hasToken() || state.autoDoneFor === href || state.busy) return;
      readLocation();
      if (state.page.kind !== 'chapter' || !state.page.chapter) return;
      try {
        await ensureRef();
        if (!state.ref) return;
        const { bookmarks } = await client.listBookmarks(library);
        state.bookmarks = bookmarks;
        state.autoDoneFor = href;
        if (shouldAutoRecord(state.page, findBookmark(bookmarks, state.ref.key))) await record(true);
        else if (panel.isOpen()) renderAll();
      } catch (err) {
        showError(err);
      }
    }, AUTO_RECORD_DELAY_MS);
  }

  function navigated() {
    readLocation();
    state.ref = null;
    state.refError = null;
    state.refFor = '';
    state.offer = null;
    state.offerFor = '';
    if (panel.isOpen()) refresh(null);
    if (store.settings().autoRecord) scheduleAutoRecord();
  }

  readLocation();
  renderCurrent();
  if (store.settings().autoRecord) scheduleAutoRecord();

  win.addEventListener('keydown', (e) => {
    if (!isShortcut(e)) return;
    const t = e.target;
    // Alt+L typed into the page's own fields stays theirs.
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName || ''))) return;
    e.preventDefault();
    panel.setOpen(!panel.isOpen());
  });
  win.addEventListener('popstate', () => win.location.href !== state.href && navigated());
  win.setInterval(() => {
    panel.mount();
    if (win.location.href !== state.href) navigated();
  }, WATCH_MS);

  // Last, so a harness that clicks at once finds everything wired.
  const hook = store.testHook();
  if (hook) {
    try {
      hook({ shadowRoot: panel.root, host: panel.host, script, version });
    } catch {
      // A test harness's mistake must not stop the panel.
    }
  }
  return { site: site.site, panel };
}
