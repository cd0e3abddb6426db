// lectern.js: progressive enhancement only. Every page works without it; it
// adds a theme toggle, confirmation before removals, copying a new token, and
// applying library filters as soon as a menu changes.
(function () {
  'use strict';
  var root = document.documentElement;

  function storedTheme() {
    try { return localStorage.getItem('lectern-theme') || ''; } catch (e) { return ''; }
  }
  function storeTheme(t) {
    try {
      if (t) localStorage.setItem('lectern-theme', t); else localStorage.removeItem('lectern-theme');
    } catch (e) { /* the choice lasts for this page only */ }
  }
  var labels = { '': 'Theme: system', dark: 'Theme: dark', light: 'Theme: light' };
  var next = { '': 'dark', dark: 'light', light: '' };
  function showTheme(btn, t) {
    btn.setAttribute('aria-label', labels[t]);
    btn.title = labels[t];
    btn.textContent = t === 'light' ? '\u2600' : t === 'dark' ? '\u263E' : '\u25D0';
  }
  document.querySelectorAll('[data-theme-toggle]').forEach(function (btn) {
    showTheme(btn, storedTheme());
    btn.hidden = false;
    btn.addEventListener('click', function () {
      var t = next[storedTheme()] || '';
      storeTheme(t);
      if (t) root.setAttribute('data-theme', t); else root.removeAttribute('data-theme');
      showTheme(btn, t);
    });
  });

  // Buttons with data-confirm ask first; without JavaScript they act at once.
  // A library card's Remove carries no text (a thousand cards would repeat
  // it): the question names the card's title.
  document.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('[data-confirm]') : null;
    if (!b) return;
    var q = b.getAttribute('data-confirm');
    if (!q) {
      var card = b.closest('.card');
      var title = card ? card.querySelector('.card-title') : null;
      q = 'Remove \u201c' + (title ? title.textContent : 'this Series') + '\u201d from your library?';
    }
    if (!window.confirm(q)) e.preventDefault();
  });

  document.querySelectorAll('[data-autosubmit]').forEach(function (sel) {
    sel.addEventListener('change', function () {
      if (sel.form) {
        if (sel.form.requestSubmit) sel.form.requestSubmit(); else sel.form.submit();
      }
    });
  });

  document.querySelectorAll('[data-copy]').forEach(function (btn) {
    var target = document.getElementById(btn.getAttribute('data-copy'));
    if (!target || !navigator.clipboard) return;
    btn.hidden = false;
    btn.addEventListener('click', function () {
      navigator.clipboard.writeText(target.textContent.trim()).then(function () {
        btn.textContent = 'Copied';
      }, function () {
        btn.textContent = 'Copy failed: select the token and copy it';
      });
    });
  });
})();
