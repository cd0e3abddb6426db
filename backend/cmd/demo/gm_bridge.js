// The end-to-end harness's userscript manager, evaluated in an isolated world
// of the Site's page (Page.createIsolatedWorld): its globals, the GM_*
// functions and the panel's closed shadow root are invisible to the page's
// own scripts, as a real manager's content script is.
//
// GM_xmlhttpRequest goes out through the __lecternGM binding, which exists in
// this world only: the Go test performs the request from outside the browser
// (no CORS, like a manager's background page) and answers through
// __lecternGMDone. GM storage is a copy of the test's; writes go back to it.
// Under lectern.testHook the storage holds a function, which a real manager
// (JSON values only) never can: the script hands it the shadow root.
(function (initial, script) {
  'use strict';
  const pending = new Map();
  let seq = 0;
  const store = new Map(Object.entries(initial));
  store.set('lectern.testHook', (h) => { globalThis.__lecternHook = h; });
  const send = (msg) => __lecternGM(JSON.stringify(msg));

  globalThis.__lecternGMDone = (id, r) => {
    const d = pending.get(id);
    pending.delete(id);
    if (!d) return;
    if (r.error) {
      const cb = r.error === 'timeout' ? d.ontimeout : d.onerror;
      if (cb) cb({ error: r.error });
      return;
    }
    if (d.onload) d.onload({ status: r.status, responseText: r.responseText, responseHeaders: r.responseHeaders, finalUrl: r.finalUrl });
  };

  function GM_xmlhttpRequest(d) {
    const id = ++seq;
    pending.set(id, d);
    send({
      op: 'xhr', id, script,
      method: d.method || 'GET', url: String(d.url), headers: d.headers || {},
      data: d.data === undefined || d.data === null ? null : String(d.data),
      timeout: d.timeout || 0, anonymous: !!d.anonymous,
    });
  }
  // Values are copied in and out, as a manager's storage does.
  function GM_getValue(key, fallback) {
    if (!store.has(key)) return fallback;
    const v = store.get(key);
    return typeof v === 'function' ? v : JSON.parse(JSON.stringify(v));
  }
  function GM_setValue(key, value) {
    const v = value === undefined ? null : JSON.parse(JSON.stringify(value));
    store.set(key, v);
    send({ op: 'set', script, key, value: v });
  }

  (function (GM_xmlhttpRequest, GM_getValue, GM_setValue) {
__USERSCRIPT__
  })(GM_xmlhttpRequest, GM_getValue, GM_setValue);
})(__VALUES__, __SCRIPT__);
