// The committed userscripts: up to date with the sources, with the metadata the
// userscript managers and the server rely on, and free of what must never be
// in them.

import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import vm from 'node:vm';

import { OUT_DIR, SCRIPTS, SRC_DIR, buildAll, packageVersion } from '../build.mjs';

const built = await buildAll();
const committed = Object.fromEntries(Object.keys(built).map((name) => [name, readFileSync(join(OUT_DIR, name), 'utf8')]));

function meta(text) {
  const block = text.slice(text.indexOf('// ==UserScript=='), text.indexOf('// ==/UserScript==') + 18);
  const rows = [];
  for (const line of block.split('\n')) {
    const m = /^\/\/ @(\S+)(?:\s+(.*))?$/.exec(line);
    if (m) rows.push([m[1], m[2] || '']);
  }
  return rows;
}
const values = (rows, key) => rows.filter(([k]) => k === key).map(([, v]) => v);

test('assets/userscripts holds exactly the two built files, up to date with the sources', () => {
  assert.deepEqual(Object.keys(built).sort(), ['lectern-manga.user.js', 'lectern-novel.user.js']);
  assert.deepEqual(readdirSync(OUT_DIR).sort(), ['lectern-manga.user.js', 'lectern-novel.user.js']);
  for (const [name, text] of Object.entries(built)) {
    assert.ok(committed[name] === text, `assets/userscripts/${name} is stale: run node userscripts/build.mjs`);
  }
});

test('the metadata names, matches, grants and update URLs as the server expects', () => {
  const hostsOf = {
    'lectern-manga': ['asurascans.com', 'asuracomic.net', 'demonicscans.org', 'comix.to', 'comix.ws', 'kagane.to', 'kagane.org', 'mangadex.org', 'webtoons.com'],
    'lectern-novel': ['lightnovelworld.com', 'lightnovelworld.co', 'novelfull.com', 'novelfull.net', 'royalroad.com'],
  };
  for (const s of SCRIPTS) {
    const text = committed[`${s.name}.user.js`];
    const rows = meta(text);
    assert.equal(values(rows, 'name').length, 1);
    assert.equal(values(rows, 'namespace').length, 1);
    assert.deepEqual(values(rows, 'version'), [packageVersion()]);
    const want = hostsOf[s.name].flatMap((h) => [`https://${h}/*`, `https://www.${h}/*`]);
    assert.deepEqual(values(rows, 'match').sort(), want.sort());
    assert.deepEqual(values(rows, 'grant'), ['GM_xmlhttpRequest', 'GM_getValue', 'GM_setValue']);
    assert.deepEqual(values(rows, 'connect'), ['__LECTERN_HOST__']);
    assert.deepEqual(values(rows, 'downloadURL'), [`__LECTERN_BASE_URL__/userscripts/${s.name}.user.js`]);
    assert.deepEqual(values(rows, 'updateURL'), [`__LECTERN_BASE_URL__/userscripts/${s.name}.user.js`]);
    assert.deepEqual(values(rows, 'run-at'), ['document-idle']);
    assert.deepEqual(values(rows, 'noframes'), ['']);
    assert.ok(text.startsWith('// ==UserScript==\n'));
  }
});

test('the placeholders appear in the metadata and in one constant only', () => {
  for (const [name, text] of Object.entries(committed)) {
    const body = text.slice(text.indexOf('// ==/UserScript=='));
    assert.equal(text.split('__LECTERN_HOST__').length - 1, 1, name);
    assert.equal(text.split('__LECTERN_BASE_URL__').length - 1, 3, name);
    assert.equal(body.split('__LECTERN_BASE_URL__').length - 1, 1, name);
    assert.match(body, /^const LECTERN_BASE_URL = '__LECTERN_BASE_URL__';$/m, name);
  }
});

test('what the server writes in yields a script that parses and points at the deployment', () => {
  for (const [name, text] of Object.entries(committed)) {
    const served = text.replaceAll('__LECTERN_BASE_URL__', 'https://lectern.example.net').replaceAll('__LECTERN_HOST__', 'lectern.example.net');
    assert.doesNotThrow(() => new vm.Script(served, { filename: name }));
    assert.match(served, /^\/\/ @connect\s+lectern\.example\.net$/m);
    assert.match(served, new RegExp(`^// @updateURL\\s+https://lectern\\.example\\.net/userscripts/${name.replace('.', '\\.')}$`, 'm'));
  }
});

test('each script carries only its own Library\'s Sites', () => {
  const manga = committed['lectern-manga.user.js'];
  const novel = committed['lectern-novel.user.js'];
  for (const s of ['asura', 'demonic', 'comix', 'kagane']) {
    assert.match(manga, new RegExp(`^// ---- sites/${s}\\.js$`, 'm'));
    assert.doesNotMatch(novel, new RegExp(`sites/${s}\\.js`));
  }
  for (const s of ['lightnovelworld', 'novelfull']) {
    assert.match(novel, new RegExp(`^// ---- sites/${s}\\.js$`, 'm'));
    assert.doesNotMatch(manga, new RegExp(`sites/${s}\\.js`));
  }
  assert.match(manga, /library: "manga"/);
  assert.match(novel, /library: "novel"/);
});

// Patterns that must never appear in a built script: page storage and cookies
// (the token lives in GM storage only), HTML parsing of strings (text goes in
// with textContent), and any reading of Cover images or metadata (the backend
// acquires Covers).
const FORBIDDEN = [
  /localStorage/, /sessionStorage/, /document\.cookie/, /indexedDB/,
  /innerHTML/, /outerHTML/, /insertAdjacentHTML/, /document\.write/, /\beval\s*\(/, /new Function/, /DOMParser/,
  /og:image/i, /twitter:image/i, /itemprop/i, /meta\[/i, /rel=["']?image_src/i, /coverUrl/, /poster/i, /data-src/,
  /querySelector(?:All)?\(\s*['"`][^'"`]*\b(?:img|meta|picture|source|figure)\b/,
  /getElementsByTagName\(\s*['"`](?:img|meta)/,
  /\.images\b/,
];

test('the built scripts use no page storage, no HTML parsing and no Cover scraping', () => {
  for (const [name, text] of Object.entries(committed)) {
    for (const re of FORBIDDEN) assert.doesNotMatch(text, re, `${name} matches ${re}`);
  }
});

test('the sources under src say the same: the check above is not defeated by the build', () => {
  const walk = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
  const files = walk(SRC_DIR);
  assert.ok(files.length >= 14, `found ${files.length} source files`);
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    for (const re of FORBIDDEN) assert.doesNotMatch(text, re, `${f} matches ${re}`);
    assert.ok(!text.includes('__LECTERN_'), `${f} must not hold a placeholder: the build owns them`);
  }
});

test('on a page no Site of the script claims, the script does nothing at all', () => {
  for (const [name, text] of Object.entries(committed)) {
    const calls = [];
    const gm = (fn) => (...args) => {
      calls.push(fn);
      return args[1];
    };
    const context = vm.createContext({
      window: { location: { hostname: 'example.org', href: 'https://example.org/' } },
      URL,
      GM_xmlhttpRequest: gm('xhr'),
      GM_getValue: gm('getValue'),
      GM_setValue: gm('setValue'),
    });
    assert.doesNotThrow(() => vm.runInContext(text, context, { filename: name }));
    assert.deepEqual(calls, [], name);
  }
});
