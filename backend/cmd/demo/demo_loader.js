// Lectern demo loader: served by `make demo` only, never by `lectern serve`.
//
// A userscript manager cannot be installed into a browser from a script, so
// the demo's fixture Sites put the built userscript into every page they
// serve, with stand-ins for the three GM_* functions it uses:
//   GM_xmlhttpRequest  sends the request to this page's own origin under
//                      /__lectern-demo/api/..., where the demo fixture server
//                      passes it on to Lectern. Same origin, so Lectern's API
//                      needs no CORS and has none.
//   GM_getValue/SetValue  a copy of the script's storage written into this
//                      file by the demo server, and written back to it.
// Unlike a real manager, this runs in the page's own JavaScript world: the
// page can read the token here. That is acceptable only because every page
// is a local fixture; a real install keeps the token out of the page.
(function () {
  'use strict';
  const SCRIPT = __SCRIPT__;
  const ORIGIN = __ORIGIN__;
  const values = __VALUES__;
  const own = Object.prototype.hasOwnProperty;

  function GM_getValue(key, fallback) {
    return own.call(values, key) ? values[key] : fallback;
  }

  function GM_setValue(key, value) {
    values[key] = value;
    fetch('/__lectern-demo/gm?script=' + encodeURIComponent(SCRIPT), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ key, value }),
      credentials: 'omit',
    }).catch(() => {});
  }

  function GM_xmlhttpRequest(d) {
    let u = null;
    try {
      u = new URL(d.url);
    } catch {
      u = null;
    }
    // A real manager refuses hosts outside @connect; the demo proxy only
    // knows Lectern's API.
    if (!u || u.origin !== ORIGIN || !u.pathname.startsWith('/api/')) {
      setTimeout(() => d.onerror && d.onerror({ error: 'refused' }), 0);
      return;
    }
    const ctl = new AbortController();
    let timedOut = false;
    const timer = d.timeout ? setTimeout(() => { timedOut = true; ctl.abort(); }, d.timeout) : 0;
    fetch('/__lectern-demo' + u.pathname + u.search, {
      method: d.method || 'GET',
      headers: d.headers || {},
      body: d.data,
      credentials: 'omit',
      cache: 'no-store',
      signal: ctl.signal,
    }).then(async (r) => {
      const text = await r.text();
      clearTimeout(timer);
      let headers = '';
      r.headers.forEach((v, k) => { headers += k + ': ' + v + '\r\n'; });
      if (d.onload) d.onload({ status: r.status, responseText: text, responseHeaders: headers, finalUrl: r.redirected ? r.url : d.url });
    }).catch(() => {
      clearTimeout(timer);
      const cb = timedOut ? d.ontimeout : d.onerror;
      if (cb) cb({});
    });
  }

  (function (GM_xmlhttpRequest, GM_getValue, GM_setValue) {
__USERSCRIPT__
  })(GM_xmlhttpRequest, GM_getValue, GM_setValue);
})();
