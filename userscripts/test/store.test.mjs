import test from 'node:test';
import assert from 'node:assert/strict';

import { TEST_HOOK, checkToken, createStore } from '../src/core/store.js';
import { gmShim } from './helpers.mjs';

test('the token is kept in GM storage, trimmed, and survives a new page load', () => {
  const { gm, values } = gmShim();
  const s = createStore(gm);
  assert.equal(s.hasToken(), false);
  s.setToken('  lt_abcdefgh12345678  \n');
  assert.equal(s.token(), 'lt_abcdefgh12345678');
  assert.equal(values.get('lectern.token'), 'lt_abcdefgh12345678');
  // A new page load reads the same storage.
  assert.equal(createStore(gm).token(), 'lt_abcdefgh12345678');
  s.clearToken();
  assert.equal(createStore(gm).hasToken(), false);
});

test('a malformed token is refused with a reason and the old one is kept', () => {
  const { gm } = gmShim();
  const s = createStore(gm);
  s.setToken('lt_good-token-1234');
  for (const bad of ['', '   ', 'two words here', 'lt_abc\r\nX-Evil: 1', 'short', 'x'.repeat(1025), 'lt_ünïcode-token', undefined, 42]) {
    assert.throws(() => s.setToken(bad), Error, JSON.stringify(bad));
  }
  assert.equal(s.token(), 'lt_good-token-1234');
  assert.equal(checkToken('lt_' + 'a'.repeat(100)), 'lt_' + 'a'.repeat(100));
});

test('saving or forgetting a token drops the lists kept for the previous one', () => {
  const { gm } = gmShim();
  const s = createStore(gm);
  s.setCache('manga', { base: 'https://l.test', etag: '"1"', body: '[]' });
  s.setCache('novel', { base: 'https://l.test', etag: '"2"', body: '[]' });
  s.setToken('lt_first-token-123');
  assert.equal(s.cache('manga'), null);
  assert.equal(s.cache('novel'), null);
  s.setCache('manga', { base: 'https://l.test', etag: '"3"', body: '[]' });
  assert.deepEqual(s.cache('manga'), { base: 'https://l.test', etag: '"3"', body: '[]' });
  s.clearToken();
  assert.equal(s.cache('manga'), null);
});

test('settings default, persist, and ignore values of the wrong type', () => {
  const { gm, values } = gmShim();
  const s = createStore(gm);
  assert.deepEqual(s.settings(), { autoRecord: false });
  s.setSettings({ autoRecord: true, unknown: 'x' });
  assert.deepEqual(createStore(gm).settings(), { autoRecord: true });
  s.setSettings({ autoRecord: 'yes' });
  assert.deepEqual(s.settings(), { autoRecord: true });
  values.set('lectern.settings', 'garbage');
  assert.deepEqual(s.settings(), { autoRecord: false });
  values.set('lectern.settings', { autoRecord: 1 });
  assert.deepEqual(s.settings(), { autoRecord: false });
});

test('a storage that throws reads as empty rather than breaking the panel', () => {
  const s = createStore({ getValue: () => { throw new Error('storage gone'); }, setValue: () => {} });
  assert.equal(s.token(), '');
  assert.deepEqual(s.settings(), { autoRecord: false });
  assert.equal(s.cache('manga'), null);
});

test('the test hook is only ever a function placed by the GM shim', () => {
  const { gm, values } = gmShim();
  const s = createStore(gm);
  assert.equal(s.testHook(), null);
  // What a real manager can hold is JSON: never a function.
  gm.setValue(TEST_HOOK, { onShadowRoot: 'x' });
  assert.equal(s.testHook(), null);
  const hook = () => {};
  values.set(TEST_HOOK, hook);
  assert.equal(s.testHook(), hook);
});
