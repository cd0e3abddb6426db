// The userscript manager's API, taken from the script's own scope. The page's
// scripts cannot reach these functions; everything the token touches goes
// through them.

/* global GM_xmlhttpRequest, GM_getValue, GM_setValue */

// gmFromScope returns the granted GM_* functions, or null when the script runs
// without a userscript manager that grants them.
export function gmFromScope() {
  if (typeof GM_xmlhttpRequest !== 'function' || typeof GM_getValue !== 'function' || typeof GM_setValue !== 'function') {
    return null;
  }
  return { xhr: GM_xmlhttpRequest, getValue: GM_getValue, setValue: GM_setValue };
}

// gmRequest runs one GM_xmlhttpRequest and settles with
// { status, text, headers (raw block), finalUrl }, or with status 0 and a
// reason when the request never got an answer.
export function gmRequest(xhr, { method, url, headers, body, timeout }) {
  return new Promise((resolve) => {
    const failed = (reason) => () => resolve({ status: 0, text: '', headers: '', finalUrl: '', reason });
    try {
      xhr({
        method,
        url,
        headers,
        data: body,
        timeout,
        // The API authenticates with the Bearer token alone; the deployment's own
        // cookies (a web UI session) have no business riding along.
        anonymous: true,
        onload: (r) => resolve({
          status: typeof r.status === 'number' ? r.status : 0,
          text: typeof r.responseText === 'string' ? r.responseText : '',
          headers: typeof r.responseHeaders === 'string' ? r.responseHeaders : '',
          finalUrl: typeof r.finalUrl === 'string' ? r.finalUrl : '',
          reason: '',
        }),
        onerror: failed('error'),
        ontimeout: failed('timeout'),
        onabort: failed('abort'),
      });
    } catch {
      failed('error')();
    }
  });
}
