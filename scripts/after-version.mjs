// Runs after `changeset version` (part of `npm run release`): the portcullis command prints its
// version from a constant, because one source file cannot read package.json from both the ESM
// and the CommonJS build; this writes the version changesets just chose into that constant.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageDir } from './build-stamp.mjs';

const { version } = JSON.parse(readFileSync(join(packageDir('cli'), 'package.json'), 'utf8'));
const file = join(packageDir('cli'), 'src', 'version.ts');
const source = readFileSync(file, 'utf8');
const next = source.replace(/VERSION = '[^']*'/, `VERSION = '${version}'`);
if (!next.includes(`VERSION = '${version}'`)) throw new Error(`${file} holds no VERSION constant`);
writeFileSync(file, next);
