// Build the browser assets into ../static (committed, so the Rust build needs no Node).
// - static/app.js, static/app.css: the probe page bundle (esbuild)
// - static/pieces/cburnett/*.svg: piece images taken from the chessground package's
//   cburnett stylesheet; src/board_svg.rs embeds them for /board.svg.
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// OUT_DIR lets tests/e2e/run.sh build elsewhere and check that static/ is up to date.
const out = process.env.OUT_DIR || join(here, '..', 'static');
mkdirSync(join(out, 'pieces', 'cburnett'), { recursive: true });

await build({
  entryPoints: [join(here, 'src', 'app.js'), join(here, 'src', 'app.css'), join(here, 'src', 'site.css')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020'],
  outdir: out,
  legalComments: 'eof',
  logLevel: 'info',
});

const css = readFileSync(join(here, 'node_modules', 'chessground', 'assets', 'chessground.cburnett.css'), 'utf8');
const re = /piece\.(pawn|knight|bishop|rook|queen|king)\.(white|black)\s*\{\s*background-image:\s*url\('data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)'\)/g;
const letter = { pawn: 'P', knight: 'N', bishop: 'B', rook: 'R', queen: 'Q', king: 'K' };
let n = 0;
for (const m of css.matchAll(re)) {
  const name = (m[2] === 'white' ? 'w' : 'b') + letter[m[1]];
  writeFileSync(join(out, 'pieces', 'cburnett', name + '.svg'), Buffer.from(m[3], 'base64').toString('utf8') + '\n');
  n++;
}
if (n !== 12) throw new Error(`expected 12 cburnett pieces, found ${n}`);
console.log('wrote 12 piece SVGs');
