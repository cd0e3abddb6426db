// The panel: a toggle button and a list, drawn inside a closed shadow root so the
// Site's page cannot reach into it through the DOM. All text is set with
// textContent (titles and labels are hostile input) and every URL is checked to
// be http(s) before it becomes an href or a src.
//
// Stable hooks for tests: every element a test needs carries a data-testid
// (lectern-toggle, lectern-panel, lectern-status, lectern-list, lectern-item,
// lectern-cover, lectern-cover-placeholder, ...); see userscripts/README.md.

import { coverChoice, displayTitle, monogram, unreadBadge } from './bookmarks.js';
import { httpURL } from './util.js';

// Taken at load: the panel's own calls must not go through anything the page
// swaps in later.
const attachShadow = typeof Element === 'function' ? Element.prototype.attachShadow : null;

const CSS = `
:host { all: initial !important; display: block !important; position: fixed !important;
  right: 16px !important; bottom: 16px !important; z-index: 2147483647 !important;
  width: auto !important; height: auto !important; margin: 0 !important; padding: 0 !important; }
* { box-sizing: border-box; }
.lectern { font: 13px/1.35 system-ui, -apple-system, "Segoe UI", sans-serif; color: #e8e6e3; }
button { font: inherit; color: inherit; background: #2b2f36; border: 1px solid #454b55; border-radius: 6px;
  padding: 3px 8px; cursor: pointer; }
button:hover:not(:disabled) { background: #363b44; }
button:disabled { opacity: .5; cursor: default; }
button.primary { background: #2f6f4f; border-color: #3e8d66; }
.toggle { display: block; margin-left: auto; width: 40px; height: 40px; border-radius: 50%; font-weight: 700;
  background: #1d2026; border: 2px solid #3e8d66; box-shadow: 0 2px 8px rgba(0,0,0,.4); }
.toggle[data-alert="true"] { border-color: #c5534b; }
.panel { width: 360px; max-width: calc(100vw - 32px); max-height: min(75vh, 640px); margin-bottom: 8px;
  display: flex; flex-direction: column; background: #1d2026; border: 1px solid #3a3f48; border-radius: 10px;
  box-shadow: 0 6px 24px rgba(0,0,0,.5); overflow: hidden; }
.panel[hidden], .settings[hidden], .current[hidden], [hidden] { display: none !important; }
header { display: flex; gap: 6px; align-items: center; padding: 8px 10px; border-bottom: 1px solid #3a3f48; }
header .name { font-weight: 700; flex: 1; }
header .lib { font-weight: 400; color: #a9b0bb; margin-left: 4px; }
.status { padding: 6px 10px; color: #a9b0bb; min-height: 1em; }
.status:empty { display: none; }
.status[data-tone="error"] { color: #f0b4ae; background: #3a2426; }
.status[data-tone="ok"] { color: #b6e3c8; }
.current { padding: 8px 10px; border-bottom: 1px solid #3a3f48; display: grid; gap: 4px; }
.current .series { font-weight: 600; }
.current .muted, .muted { color: #a9b0bb; }
.current .actions { display: flex; gap: 6px; margin-top: 2px; }
.settings { padding: 8px 10px; border-bottom: 1px solid #3a3f48; display: grid; gap: 6px; }
.settings input.secret { -webkit-text-security: disc; width: 100%; font: inherit; color: inherit; background: #14161a;
  border: 1px solid #454b55; border-radius: 6px; padding: 4px 6px; }
.settings .row { display: flex; gap: 6px; align-items: center; }
.list { list-style: none; margin: 0; padding: 0; overflow-y: auto; flex: 1; }
.item { display: grid; grid-template-columns: 40px 1fr auto; gap: 8px; align-items: center; padding: 6px 10px;
  border-bottom: 1px solid #2a2e35; }
.item[data-current="true"] { background: #23352c; box-shadow: inset 3px 0 0 #3e8d66; }
.cover { width: 40px; height: 56px; border-radius: 4px; overflow: hidden; background: #2b2f36; }
.cover img { display: block; width: 40px; height: 56px; object-fit: cover; }
.placeholder { display: flex; width: 40px; height: 56px; align-items: center; justify-content: center;
  font-weight: 700; letter-spacing: .5px; color: #c9ced6;
  background: repeating-linear-gradient(135deg, #2b2f36 0 6px, #30353d 6px 12px); }
.body { min-width: 0; }
.title { display: block; font-weight: 600; color: #e8e6e3; text-decoration: none; overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; }
a.title:hover { text-decoration: underline; }
.line { color: #a9b0bb; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.line a { color: inherit; }
.side { display: grid; gap: 4px; justify-items: end; }
.badge { background: #3e8d66; color: #fff; border-radius: 9px; padding: 0 6px; font-size: 11px; font-weight: 700; }
.badge:empty { display: none; }
.empty { padding: 12px 10px; color: #a9b0bb; }
.work { color: #b6e3c8; }
.work a, .gone a { color: inherit; }
.gone { color: #f0b4ae; }
.offer { display: flex; flex-wrap: wrap; gap: 4px 6px; align-items: center; padding: 4px 0; }
.offer .muted:empty { display: none; }
footer { padding: 5px 10px; border-top: 1px solid #3a3f48; color: #7f8792; font-size: 11px; }
`;

// Events that would tell the page what the Reader types or pastes into the
// panel (the token input above all). They are composed, so without this they
// would bubble out of the shadow root to the page's listeners.
const CONTAINED = ['keydown', 'keyup', 'keypress', 'beforeinput', 'input', 'change', 'paste', 'copy', 'cut',
  'compositionstart', 'compositionupdate', 'compositionend', 'focusin', 'focusout'];

function el(doc, tag, props = {}, children = []) {
  const e = doc.createElement(tag);
  if (props.className) e.className = props.className;
  if (props.testid) e.setAttribute('data-testid', props.testid);
  if (props.text !== undefined) e.textContent = props.text;
  if (props.attrs) for (const [k, v] of Object.entries(props.attrs)) e.setAttribute(k, v);
  for (const c of children) if (c) e.appendChild(c);
  return e;
}

// safeLink makes a link when url is http(s), else plain text.
function safeLink(doc, url, text, props = {}) {
  const u = httpURL(url);
  if (!u) return el(doc, 'span', { ...props, text });
  const a = el(doc, 'a', { ...props, text });
  a.href = u.href;
  a.rel = 'noopener noreferrer';
  return a;
}

// isShortcut is Alt+L (Option+L on a Mac: the key code, not the character).
export function isShortcut(e) {
  return e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey && e.code === 'KeyL';
}

// mountPanel draws the panel into doc and returns its view. handlers are the
// controller's: refresh, record, removeCurrent, remove(key), saveToken(value),
// clearToken, setAutoRecord(bool), toggled(open).
export function mountPanel(doc, { script, version, library, handlers }) {
  const host = doc.createElement('div');
  const root = attachShadow.call(host, { mode: 'closed' });
  const sheet = typeof CSSStyleSheet === 'function' && 'adoptedStyleSheets' in root ? new CSSStyleSheet() : null;
  if (sheet) {
    // A constructed sheet is not an inline <style>, so a Site's CSP that
    // forbids inline styles does not strip the panel bare.
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } else {
    root.appendChild(el(doc, 'style', { text: CSS }));
  }

  const libName = library === 'novel' ? 'Novels' : 'Manga';
  const toggle = el(doc, 'button', { className: 'toggle', testid: 'lectern-toggle', text: 'L',
    attrs: { type: 'button', title: 'Lectern (Alt+L)', 'aria-expanded': 'false', 'aria-label': 'Lectern panel (Alt+L)' } });

  const refreshBtn = el(doc, 'button', { testid: 'lectern-refresh', text: 'Refresh', attrs: { type: 'button' } });
  const settingsBtn = el(doc, 'button', { testid: 'lectern-settings-toggle', text: 'Settings', attrs: { type: 'button' } });
  const closeBtn = el(doc, 'button', { testid: 'lectern-close', text: '×', attrs: { type: 'button', 'aria-label': 'Close' } });
  const status = el(doc, 'div', { className: 'status', testid: 'lectern-status', attrs: { role: 'status', 'data-code': '' } });

  const curSeries = el(doc, 'div', { className: 'series', testid: 'lectern-current-series' });
  const curChapter = el(doc, 'div', { className: 'muted', testid: 'lectern-current-chapter' });
  const curProgress = el(doc, 'div', { className: 'muted', testid: 'lectern-current-progress' });
  const recordBtn = el(doc, 'button', { className: 'primary', testid: 'lectern-bookmark-chapter', text: 'Bookmark this chapter', attrs: { type: 'button' } });
  const removeCurBtn = el(doc, 'button', { testid: 'lectern-remove-current', text: 'Remove', attrs: { type: 'button' } });
  // The Work line of a Bookmark in a Work, the gone line, and the offer to
  // link a Series not held yet to a Bookmark of the same story.
  const curWork = el(doc, 'div', { className: 'work', testid: 'lectern-work-line' });
  const curGone = el(doc, 'div', { className: 'gone', testid: 'lectern-gone' });
  const offerText = el(doc, 'span', { testid: 'lectern-offer-text' });
  const offerEvidence = el(doc, 'span', { className: 'muted', testid: 'lectern-offer-evidence' });
  const offerBtn = el(doc, 'button', { className: 'primary', testid: 'lectern-offer-link', text: 'Link', attrs: { type: 'button' } });
  const offerNo = el(doc, 'button', { testid: 'lectern-offer-dismiss', text: 'Not the same', attrs: { type: 'button' } });
  const offer = el(doc, 'div', { className: 'offer', testid: 'lectern-offer' }, [offerText, offerEvidence, offerBtn, offerNo]);
  const current = el(doc, 'section', { className: 'current', testid: 'lectern-current' }, [
    curSeries, curChapter, curProgress, curWork, curGone, offer, el(doc, 'div', { className: 'actions' }, [recordBtn, removeCurBtn]),
  ]);

  // A text field masked by CSS rather than type=password: a password field would
  // invite the browser's password manager to save the token for the Site's
  // origin and later autofill it into the Site's own login form.
  const tokenInput = el(doc, 'input', { className: 'secret', testid: 'lectern-token-input',
    attrs: { type: 'text', autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false', 'data-lpignore': 'true', 'data-1p-ignore': 'true',
      'data-form-type': 'other', placeholder: 'Paste your Lectern token', 'aria-label': 'Lectern token' } });
  const tokenSave = el(doc, 'button', { className: 'primary', testid: 'lectern-token-save', text: 'Save token', attrs: { type: 'submit' } });
  const tokenClear = el(doc, 'button', { testid: 'lectern-token-clear', text: 'Forget token', attrs: { type: 'button' } });
  const tokenState = el(doc, 'div', { className: 'muted', testid: 'lectern-token-state' });
  const autoBox = el(doc, 'input', { testid: 'lectern-auto-record', attrs: { type: 'checkbox' } });
  const settings = el(doc, 'form', { className: 'settings', testid: 'lectern-settings', attrs: { autocomplete: 'off' } }, [
    el(doc, 'div', { className: 'muted', text: 'Token (from your Lectern token page). It is kept by your userscript manager and sent only to Lectern.' }),
    tokenInput,
    el(doc, 'div', { className: 'row' }, [tokenSave, tokenClear]),
    tokenState,
    el(doc, 'label', { className: 'row' }, [autoBox, el(doc, 'span', { text: 'Record Progress automatically when a chapter of a bookmarked Series opens (never moves Progress back).' })]),
    el(doc, 'div', { className: 'muted', text: 'Shortcut: Alt+L opens and closes this panel.' }),
  ]);
  settings.hidden = true;

  const list = el(doc, 'ul', { className: 'list', testid: 'lectern-list' });
  const versions = el(doc, 'footer', { testid: 'lectern-versions' });

  const panel = el(doc, 'section', { className: 'panel', testid: 'lectern-panel', attrs: { 'data-state': 'idle', 'aria-label': 'Lectern' } }, [
    el(doc, 'header', {}, [
      el(doc, 'span', { className: 'name', text: 'Lectern' }, [el(doc, 'span', { className: 'lib', text: libName })]),
      refreshBtn, settingsBtn, closeBtn,
    ]),
    status, current, settings, list, versions,
  ]);
  panel.hidden = true;

  const wrap = el(doc, 'div', { className: 'lectern', testid: 'lectern-root' }, [panel, toggle]);
  root.appendChild(wrap);

  let open = false;
  const setOpen = (v) => {
    open = v;
    panel.hidden = !v;
    toggle.setAttribute('aria-expanded', String(v));
    handlers.toggled(v);
  };

  for (const type of CONTAINED) {
    wrap.addEventListener(type, (e) => {
      if (type === 'keydown' && isShortcut(e)) {
        e.preventDefault();
        setOpen(!open);
      } else if (type === 'keydown' && e.key === 'Escape' && open) {
        setOpen(false);
        toggle.focus();
      }
      e.stopPropagation();
    });
  }

  toggle.addEventListener('click', () => setOpen(!open));
  closeBtn.addEventListener('click', () => setOpen(false));
  refreshBtn.addEventListener('click', () => handlers.refresh());
  settingsBtn.addEventListener('click', () => {
    settings.hidden = !settings.hidden;
  });
  recordBtn.addEventListener('click', () => handlers.record());
  removeCurBtn.addEventListener('click', () => handlers.removeCurrent());
  offerBtn.addEventListener('click', () => handlers.linkOffer());
  offerNo.addEventListener('click', () => handlers.dismissOffer());
  settings.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = tokenInput.value;
    // The token leaves the DOM at once: it is never rendered back.
    tokenInput.value = '';
    handlers.saveToken(value);
  });
  tokenClear.addEventListener('click', () => {
    tokenInput.value = '';
    handlers.clearToken();
  });
  autoBox.addEventListener('change', () => handlers.setAutoRecord(autoBox.checked));
  list.addEventListener('click', (e) => {
    const t = e.target;
    if (t && t.getAttribute && t.getAttribute('data-testid') === 'lectern-remove') {
      const item = t.closest('[data-testid="lectern-item"]');
      if (item) handlers.remove(item.getAttribute('data-key'));
    }
  });

  // drawLine draws work.js segments into box, hidden when there are none.
  function drawLine(box, segs) {
    box.hidden = !segs;
    const frag = doc.createDocumentFragment();
    for (const s of segs || []) {
      frag.appendChild(s.url !== undefined ? safeLink(doc, s.url, s.text, { testid: s.testid }) : doc.createTextNode(s.text));
    }
    box.replaceChildren(frag);
  }

  function coverBox(b) {
    const box = el(doc, 'div', { className: 'cover' });
    const c = coverChoice(b);
    const placeholder = () => el(doc, 'span', { className: 'placeholder', testid: 'lectern-cover-placeholder', text: monogram(b.title, b.key), attrs: { 'aria-hidden': 'true' } });
    if (!c.src) {
      box.appendChild(placeholder());
      return box;
    }
    const img = el(doc, 'img', { testid: 'lectern-cover', attrs: { alt: '', loading: 'lazy', decoding: 'async', width: '40', height: '56', referrerpolicy: 'no-referrer' } });
    // Set before src, so a load that fails at once still swaps in the
    // placeholder instead of leaving a broken-image glyph.
    img.addEventListener('error', () => img.replaceWith(placeholder()), { once: true });
    img.src = c.src;
    box.appendChild(img);
    return box;
  }

  function item(b, currentKey, currentTitle) {
    const li = el(doc, 'li', { className: 'item', testid: 'lectern-item', attrs: { 'data-key': b.key, 'data-current': String(b.key === currentKey) } });
    const title = displayTitle(b, b.key === currentKey ? currentTitle : '');
    const progress = el(doc, 'div', { className: 'line', testid: 'lectern-progress' });
    progress.appendChild(el(doc, 'span', { text: 'Read: ' }));
    if (b.work && b.work_chapter) {
      // In a Work, Progress is the Work's, wherever it was read.
      progress.appendChild(safeLink(doc, b.work_chapter_url, b.work_chapter));
      progress.appendChild(el(doc, 'span', { text: ` on ${b.work_progress_site}`, testid: 'lectern-progress-site' }));
    } else {
      progress.appendChild(b.chapter ? safeLink(doc, b.chapter_url, b.chapter) : el(doc, 'span', { text: '—' }));
    }
    const latest = el(doc, 'div', { className: 'line', testid: 'lectern-latest' });
    // Two Bookmarks of one Work share a title: the Site tells them apart.
    latest.appendChild(el(doc, 'span', { text: b.work && b.site ? `${b.site} latest: ` : 'Latest: ' }));
    latest.appendChild(b.latest_chapter ? safeLink(doc, b.latest_chapter_url, b.latest_chapter) : el(doc, 'span', { text: 'not known yet' }));
    li.appendChild(coverBox(b));
    const gone = b.gone ? el(doc, 'div', { className: 'line gone', testid: 'lectern-item-gone', text: 'Gone' + (b.gone_reason ? ': ' + b.gone_reason : '') }) : null;
    if (b.work) li.setAttribute('data-work', b.work);
    li.appendChild(el(doc, 'div', { className: 'body' }, [
      safeLink(doc, b.series_url, title, { className: 'title', testid: 'lectern-title', attrs: { title } }),
      progress, latest, gone,
    ]));
    li.appendChild(el(doc, 'div', { className: 'side' }, [
      el(doc, 'span', { className: 'badge', testid: 'lectern-unread', text: unreadBadge(b), attrs: { title: 'Unread' } }),
      el(doc, 'button', { testid: 'lectern-remove', text: 'Remove', attrs: { type: 'button' } }),
    ]));
    return li;
  }

  return {
    host,
    root,
    isOpen: () => open,
    setOpen,
    mount() {
      if (!host.isConnected) doc.documentElement.appendChild(host);
    },
    setState(s) {
      panel.setAttribute('data-state', s);
    },
    setBusy(busy) {
      for (const b of [refreshBtn, recordBtn, removeCurBtn, offerBtn, offerNo, tokenSave, tokenClear]) b.disabled = busy || b.dataset.off === 'true';
    },
    status(text, { code = '', tone = '' } = {}) {
      status.textContent = text;
      status.setAttribute('data-code', code);
      status.setAttribute('data-tone', tone);
      toggle.setAttribute('data-alert', String(tone === 'error'));
    },
    versions(server) {
      versions.textContent = `${script} ${version} · server ${server || 'unknown'}`;
    },
    settings({ hasToken, autoRecord }) {
      tokenState.textContent = hasToken ? 'A token is saved.' : 'No token saved.';
      autoBox.checked = autoRecord;
    },
    showSettings() {
      settings.hidden = false;
    },
    // current draws the "this page" section. v: { hidden, series, chapter,
    // progress, canRecord, canRemove, work, gone, offer } (describeCurrent).
    current(v) {
      current.hidden = !!v.hidden;
      curSeries.textContent = v.series || '';
      curChapter.textContent = v.chapter || '';
      curProgress.textContent = v.progress || '';
      recordBtn.dataset.off = String(!v.canRecord);
      recordBtn.disabled = !v.canRecord;
      removeCurBtn.hidden = !v.canRemove;
      removeCurBtn.dataset.off = String(!v.canRemove);
      drawLine(curWork, v.work);
      drawLine(curGone, v.gone);
      offer.hidden = !v.offer;
      offerText.textContent = v.offer ? v.offer.text : '';
      offerEvidence.textContent = v.offer && v.offer.evidence ? `(${v.offer.evidence})` : '';
      for (const b of [offerBtn, offerNo]) {
        b.dataset.off = String(!v.offer);
        b.disabled = !v.offer;
      }
    },
    // currentTitle is the title the page shows for currentKey's Series.
    list(bookmarks, currentKey, currentTitle = '') {
      const frag = doc.createDocumentFragment();
      if (bookmarks.length === 0) {
        frag.appendChild(el(doc, 'li', { className: 'empty', testid: 'lectern-empty', text: `No ${libName.toLowerCase()} Bookmarks yet.` }));
      }
      let cur = null;
      for (const b of bookmarks) {
        const li = item(b, currentKey, currentTitle);
        if (b.key === currentKey) cur = li;
        frag.appendChild(li);
      }
      list.replaceChildren(frag);
      if (cur && open) cur.scrollIntoView({ block: 'nearest' });
    },
  };
}
