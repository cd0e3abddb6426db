// boot.js runs synchronously in <head>, before any Cover <img> is parsed, for
// the two things that cannot wait: the Reader's chosen theme (no flash of the
// wrong one) and catching Cover load errors (an error fired before a deferred
// script ran would be missed).
(function () {
  'use strict';
  try {
    var theme = localStorage.getItem('lectern-theme');
    if (theme === 'light' || theme === 'dark') document.documentElement.setAttribute('data-theme', theme);
  } catch (e) { /* storage may be disabled; the system theme applies */ }

  // A Cover that fails to load is removed so the monogram placeholder under
  // it shows, exactly as the userscript panel swaps one in.
  document.addEventListener('error', function (e) {
    var img = e.target;
    if (img && img.tagName === 'IMG' && img.hasAttribute('data-cover')) {
      var box = img.parentNode;
      img.remove();
      if (box && box.classList) box.classList.add('cover-failed');
    }
  }, true);
})();
