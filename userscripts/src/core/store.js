// What the script keeps between page loads, all in the userscript manager's own
// storage (GM_getValue/GM_setValue), which the Site's page cannot read. Nothing
// goes to the page's web storage or cookies, where the Site's scripts could read it.

const TOKEN = 'lectern.token';
const SETTINGS = 'lectern.settings';
const CACHE = 'lectern.cache.';

// TEST_HOOK is read, never written. A userscript manager only stores JSON
// values, so it can never hold a function; the end-to-end harness's GM_getValue
// shim returns one here to be handed the panel's closed shadow root. The page
// cannot plant it: it has no access to the script's storage.
export const TEST_HOOK = 'lectern.testHook';

export const DEFAULT_SETTINGS = Object.freeze({ autoRecord: false });

// checkToken returns the token to keep, or throws an Error whose message tells
// the Reader what is wrong. A token goes into an HTTP header, so anything that
// is not printable ASCII without spaces is refused rather than sent.
export function checkToken(raw) {
  const t = typeof raw === 'string' ? raw.trim() : '';
  if (t === '') throw new Error('Paste a token first.');
  if (!/^[\x21-\x7e]+$/.test(t)) throw new Error('That does not look like a Lectern token (spaces or unusual characters).');
  if (t.length < 8 || t.length > 1024) throw new Error('That does not look like a Lectern token (wrong length).');
  return t;
}

export function createStore(gm) {
  const get = (k, d) => {
    try {
      const v = gm.getValue(k, d);
      return v === undefined ? d : v;
    } catch {
      return d;
    }
  };
  const set = (k, v) => gm.setValue(k, v);

  return {
    token() {
      const t = get(TOKEN, '');
      return typeof t === 'string' ? t : '';
    },
    hasToken() {
      return this.token() !== '';
    },
    // setToken keeps a checked token and drops the cached lists, which belong
    // to whoever the previous token named.
    setToken(raw) {
      const t = checkToken(raw);
      set(TOKEN, t);
      this.clearCaches();
    },
    clearToken() {
      set(TOKEN, '');
      this.clearCaches();
    },
    settings() {
      const s = get(SETTINGS, null);
      const out = { ...DEFAULT_SETTINGS };
      if (s && typeof s === 'object' && typeof s.autoRecord === 'boolean') out.autoRecord = s.autoRecord;
      return out;
    },
    setSettings(patch) {
      const next = { ...this.settings() };
      if (patch && typeof patch.autoRecord === 'boolean') next.autoRecord = patch.autoRecord;
      set(SETTINGS, next);
      return next;
    },
    // cache holds the last Bookmarks reply for a Library: { base, etag, body }.
    cache(library) {
      const c = get(CACHE + library, null);
      if (!c || typeof c !== 'object' || typeof c.etag !== 'string' || typeof c.body !== 'string' || typeof c.base !== 'string') {
        return null;
      }
      return c;
    },
    setCache(library, c) {
      set(CACHE + library, { base: c.base, etag: c.etag, body: c.body });
    },
    clearCaches() {
      set(CACHE + 'manga', null);
      set(CACHE + 'novel', null);
    },
    testHook() {
      const h = get(TEST_HOOK, null);
      return typeof h === 'function' ? h : null;
    },
  };
}
