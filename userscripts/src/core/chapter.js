// Reading a chapter label and number from what a Site shows. The patterns follow
// the backend's ParseChapterNumber (backend/internal/latest/label.go) so that the
// number a client sends and the number a Poll finds compare as equals.

// A chapter number: digits, optionally grouped by thousands ("1,234"), with an
// optional decimal part ("12.5"). Larger than a million is an id or a year.
const NUMBER = String.raw`(\d{1,3}(?:,\d{3})+|\d{1,6})(?:\.(\d{1,3}))?`;
const MAX_NUMBER = 1e6;
const chapterWord = new RegExp(String.raw`\b(?:chapter|chap|ch|episode|ep)\b\.?[\s:#-]{0,3}` + NUMBER + String.raw`\b`, 'i');
const cjkNumber = new RegExp(String.raw`第\s*` + NUMBER + String.raw`\s*[话話章回]`);
const bareNumber = new RegExp('^#?' + NUMBER + String.raw`(?:$|[^\d.,]|\.(?:$|\D))`);

function matchNumber(m) {
  const n = Number(m[1].replace(/,/g, '') + (m[2] ? '.' + m[2] : ''));
  return Number.isFinite(n) && n <= MAX_NUMBER ? n : null;
}

// parseChapterNumber reads the chapter number from a label: "Chapter 105" → 105,
// "Ch. 12.5 - Title" → 12.5, "Vol. 2 Chapter 10" → 10, "Chapter 1,234" → 1234,
// "第105话" → 105, "42" → 42. It returns null when there is none ("Prologue",
// "Vol. 2"): a guess would make unread badges lie.
export function parseChapterNumber(label) {
  if (typeof label !== 'string') return null;
  const s = label.slice(0, 512);
  const m = chapterWord.exec(s) || cjkNumber.exec(s) || bareNumber.exec(s.trim());
  return m ? matchNumber(m) : null;
}

// chapterInText finds the chapter words inside a longer text such as a document
// title ("Solo Leveling Chapter 105 - Asura Scans") and returns them with their
// number and position, or null.
export function chapterInText(text) {
  if (typeof text !== 'string') return null;
  const s = text.slice(0, 512);
  const m = chapterWord.exec(s) || cjkNumber.exec(s);
  if (!m) return null;
  const number = matchNumber(m);
  if (number === null) return null;
  return { label: m[0].trim(), number, index: m.index };
}

// numberFrom turns a number as written in a URL ("105", "10.5") into a number,
// or null when it is not one.
export function numberFrom(s) {
  if (typeof s !== 'string' || !/^\d{1,6}(?:\.\d{1,3})?$/.test(s)) return null;
  return Number(s);
}
