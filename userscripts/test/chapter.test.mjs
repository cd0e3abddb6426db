import test from 'node:test';
import assert from 'node:assert/strict';

import { chapterInText, numberFrom, parseChapterNumber } from '../src/core/chapter.js';

test('parseChapterNumber reads the number a label shows, as the backend does', () => {
  const cases = [
    ['Chapter 105', 105],
    ['Ch. 12.5 - The Return', 12.5],
    ['ch.7', 7],
    ['Episode 3', 3],
    ['Vol. 2 Chapter 10', 10],
    ['Chapter #44', 44],
    ['42', 42],
    ['  #9 extra', 9],
    ['CHAPTER 0', 0],
    ['Prologue', null],
    ['Season 2', null],
    ['', null],
    [undefined, null],
    ['Chapter1', null],
    ['Chapter 1,234', 1234],
    ['Chapter: 12', 12],
    ['Chapter - 7', 7],
    ['第105话', 105],
    ['第 12.5 章 Title', 12.5],
    ['12.5 - Title', 12.5],
    ['Vol. 2', null],
    ['Chapter 1234567', null],
    ['Chapter 2000000', null],
    ['Chapter 1,000,001', null],
  ];
  for (const [label, want] of cases) assert.equal(parseChapterNumber(label), want, String(label));
});

test('parseChapterNumber ignores what follows the first 512 characters', () => {
  assert.equal(parseChapterNumber('x'.repeat(520) + ' Chapter 5'), null);
});

test('chapterInText finds the chapter words inside a longer title', () => {
  assert.deepEqual(chapterInText('Solo Leveling Chapter 105 - Asura Scans'), { label: 'Chapter 105', number: 105, index: 14 });
  assert.deepEqual(chapterInText('Nano Machine - Ch. 7.5 | Site'), { label: 'Ch. 7.5', number: 7.5, index: 15 });
  assert.deepEqual(chapterInText('全职觉醒 第57话 - Comix'), { label: '第57话', number: 57, index: 5 });
  assert.equal(chapterInText('Solo Leveling | Asura Scans'), null);
});

test('numberFrom accepts only numbers as written in a URL', () => {
  assert.equal(numberFrom('105'), 105);
  assert.equal(numberFrom('10.5'), 10.5);
  assert.equal(numberFrom('10-5'), null);
  assert.equal(numberFrom('1e3'), null);
  assert.equal(numberFrom(''), null);
  assert.equal(numberFrom(undefined), null);
});
