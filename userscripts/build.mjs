// Builds the two Lectern userscripts from userscripts/src into assets/userscripts/:
//   lectern-manga.user.js  asura, demonic, comix, kagane, mangadex, webtoons
//   lectern-novel.user.js  lightnovelworld, novelfull, royalroad
//
//   node userscripts/build.mjs          write both files
//   node userscripts/build.mjs --check  exit 1 when the committed files are stale
//
// No dependencies: the sources are ES modules restricted to one-line
// `import { a, b as c } from './x.js';` and `export function|const|let|class`,
// which this script turns into one function scope per module inside a single
// IIFE. Node's tests import the same sources directly.
//
// The server replaces __LECTERN_BASE_URL__ and __LECTERN_HOST__ when it serves
// the files; each appears only in the metadata block and in one constant. It
// also writes the @match lines and the added Sites (__LECTERN_ADDED_SITES__,
// one constant) from its live registry.

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const SRC_DIR = join(here, 'src');
export const OUT_DIR = join(here, '..', 'assets', 'userscripts');

export const SCRIPTS = [
  {
    name: 'lectern-manga',
    title: 'Lectern (manga)',
    library: 'manga',
    description: 'Lectern panel on manga Sites: your Bookmarks, Covers and Latest Chapters; record the chapter you read.',
    sites: ['asura', 'demonic', 'comix', 'kagane', 'mangadex', 'webtoons'],
  },
  {
    name: 'lectern-novel',
    title: 'Lectern (novels)',
    library: 'novel',
    description: 'Lectern panel on web novel Sites: your Bookmarks, Covers and Latest Chapters; record the chapter you read.',
    sites: ['lightnovelworld', 'novelfull', 'royalroad'],
  },
];

const NAMESPACE = 'https://github.com/lectern-reader/lectern';

export function packageVersion() {
  const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
  if (typeof pkg.version !== 'string' || !/^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/.test(pkg.version)) {
    throw new Error(`package.json: version ${JSON.stringify(pkg.version)} is not a semantic version`);
  }
  return pkg.version;
}

const importRe = /^import \{([^}]*)\} from '(\.{1,2}\/[^']+\.js)';$/;
const exportRe = /^export (?:async function\*?|function\*?|const|let|class) ([A-Za-z_$][\w$]*)/;
const ident = /^[A-Za-z_$][\w$]*$/;

function moduleId(rel) {
  return 'm_' + rel.replace(/\.js$/, '').replace(/[^A-Za-z0-9]+/g, '_');
}

// transform turns one source module into a function-scoped block. It returns
// the block and the modules it imports (paths relative to src).
function transform(rel, source) {
  const deps = [];
  const exported = [];
  const out = [];
  source.split('\n').forEach((line, i) => {
    const where = `${rel}:${i + 1}`;
    if (/^\s*import\b(?!\s*\()/.test(line)) {
      const m = importRe.exec(line);
      if (!m) throw new Error(`${where}: write imports as one line: import { a, b as c } from './x.js';`);
      const dep = posix.normalize(posix.join(posix.dirname(rel), m[2]));
      if (dep.startsWith('..')) throw new Error(`${where}: import outside src: ${m[2]}`);
      const names = m[1].split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
        const [imported, local = imported] = s.split(/\s+as\s+/).map((x) => x.trim());
        if (!ident.test(imported) || !ident.test(local)) throw new Error(`${where}: bad import name ${s}`);
        return imported === local ? imported : `${imported}: ${local}`;
      });
      deps.push({ dep, names, where });
      out.push(`const { ${names.join(', ')} } = ${moduleId(dep)};`);
      return;
    }
    if (/^export\b/.test(line)) {
      const m = exportRe.exec(line);
      if (!m) throw new Error(`${where}: write exports as export function|const|let|class NAME`);
      exported.push(m[1]);
      out.push(line.slice('export '.length));
      return;
    }
    out.push(line);
  });
  while (out.length && out[out.length - 1] === '') out.pop();
  const block = [
    `// ---- ${rel}`,
    `const ${moduleId(rel)} = (() => {`,
    ...out,
    exported.length ? `return { ${exported.join(', ')} };` : 'return {};',
    '})();',
  ].join('\n');
  return { block, deps, exported };
}

// bundle orders modules so each comes after what it imports, refusing cycles
// and imports of names a module does not export.
function bundle(entryRel, entrySource) {
  const done = new Map();
  const visiting = new Set();
  const order = [];
  const visit = (rel, source) => {
    if (done.has(rel)) return done.get(rel);
    if (visiting.has(rel)) throw new Error(`import cycle through ${rel}`);
    visiting.add(rel);
    const text = source ?? readFileSync(join(SRC_DIR, rel), 'utf8');
    const t = transform(rel, text);
    for (const d of t.deps) {
      const dt = visit(d.dep);
      for (const n of d.names) {
        const imported = n.split(':')[0].trim();
        if (!dt.exported.includes(imported)) throw new Error(`${d.where}: ${d.dep} does not export ${imported}`);
      }
    }
    visiting.delete(rel);
    done.set(rel, t);
    order.push(t.block);
    return t;
  };
  visit(entryRel, entrySource);
  return order;
}

function metadata(script, version, hosts) {
  const rows = [
    ['name', script.title],
    ['namespace', NAMESPACE],
    ['version', version],
    ['description', script.description],
  ];
  for (const h of hosts) {
    rows.push(['match', `https://${h}/*`]);
    rows.push(['match', `https://www.${h}/*`]);
  }
  rows.push(
    ['grant', 'GM_xmlhttpRequest'],
    ['grant', 'GM_getValue'],
    ['grant', 'GM_setValue'],
    ['connect', '__LECTERN_HOST__'],
    ['downloadURL', `__LECTERN_BASE_URL__/userscripts/${script.name}.user.js`],
    ['updateURL', `__LECTERN_BASE_URL__/userscripts/${script.name}.user.js`],
    ['run-at', 'document-idle'],
    ['noframes', ''],
  );
  const lines = rows.map(([k, v]) => (`// @${k.padEnd(12)} ${v}`).trimEnd());
  return ['// ==UserScript==', ...lines, '// ==/UserScript=='].join('\n');
}

// buildScript returns the text of one userscript.
export async function buildScript(script, version = packageVersion()) {
  const hosts = [];
  for (const s of script.sites) {
    const mod = await import(pathToFileURL(join(SRC_DIR, 'sites', `${s}.js`)).href);
    const adapter = mod[s];
    if (!adapter || adapter.site !== s || adapter.library !== script.library) {
      throw new Error(`sites/${s}.js must export ${s}, an adapter of the ${script.library} Library`);
    }
    hosts.push(...adapter.hosts);
  }
  const entry = [
    `import { start } from './core/main.js';`,
    `import { familySites } from './core/families.js';`,
    ...script.sites.map((s) => `import { ${s} } from './sites/${s}.js';`),
    `start({ script: ${JSON.stringify(script.name)}, version: ${JSON.stringify(version)}, library: ${JSON.stringify(script.library)}, baseURL: LECTERN_BASE_URL, sites: [${script.sites.join(', ')}, ...familySites(LECTERN_ADDED_SITES, ${JSON.stringify(script.library)})] });`,
  ].join('\n');
  const blocks = bundle(`${script.name}.entry.js`, entry);
  return [
    metadata(script, version, hosts),
    '',
    `// Built by userscripts/build.mjs from userscripts/src (version ${version}). Edit the sources, not this file.`,
    '(function () {',
    "'use strict';",
    '',
    '// The deployment this script talks to; the server writes its PUBLIC_BASE_URL here when it serves the file.',
    "const LECTERN_BASE_URL = '__LECTERN_BASE_URL__';",
    '',
    "// The Sites the Owner added from a family, of this script's Library, as JSON; the server writes them here from its live registry.",
    "const LECTERN_ADDED_SITES = '__LECTERN_ADDED_SITES__';",
    '',
    blocks.join('\n\n'),
    '})();',
    '',
  ].join('\n');
}

// buildAll returns { 'lectern-manga.user.js': text, 'lectern-novel.user.js': text }.
export async function buildAll() {
  const version = packageVersion();
  const out = {};
  for (const s of SCRIPTS) out[`${s.name}.user.js`] = await buildScript(s, version);
  return out;
}

async function main(args) {
  const files = await buildAll();
  if (args.includes('--check')) {
    let stale = false;
    for (const [name, text] of Object.entries(files)) {
      let have = '';
      try {
        have = readFileSync(join(OUT_DIR, name), 'utf8');
      } catch {
        have = '';
      }
      if (have !== text) {
        stale = true;
        console.error(`assets/userscripts/${name} is not up to date; run: node userscripts/build.mjs`);
      }
    }
    process.exit(stale ? 1 : 0);
  }
  mkdirSync(OUT_DIR, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    writeFileSync(join(OUT_DIR, name), text);
    console.log(`assets/userscripts/${name}: ${Buffer.byteLength(text)} bytes`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}
