// `sunset --version` (-V): the version of the package this file was installed from. `--verbose` adds what
// runs it — where it is installed, which node, and whether node got the options the `sunset` command's
// shebang gives it (a wrapper or `node …/cli.js` typed by hand drops them): the line to paste in a bug report.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from './common.js';

export interface PackageInfo {
  name: string;
  version: string;
  /** The folder holding package.json: the checkout, or <prefix>/lib/node_modules/sunset when installed. */
  root: string;
}

/**
 * The nearest package.json above this module, as Node finds a module's package: the same from the compiled
 * dist/src/cli/ and from src/cli/ under tsx, in a checkout or installed (npm always packs package.json).
 */
export function packageInfo(from = dirname(fileURLToPath(import.meta.url))): PackageInfo {
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8'));
      return { name: String(pkg.name), version: String(pkg.version), root: dir };
    }
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export interface Runtime {
  execPath: string;
  nodeVersion: string;
  execArgv: readonly string[];
  env: NodeJS.ProcessEnv;
}

/** The text of `sunset --version [--verbose]`. Pure, for tests. */
export function versionText(
  pkg: PackageInfo,
  o: { verbose: boolean; rt: Runtime; nodeOptions: readonly string[]; nodeEnv: readonly string[] },
): string {
  if (!o.verbose) return pkg.version;
  // in the shebang's order: the environment, then node's options
  const missing = [
    ...o.nodeEnv.filter((kv) => o.rt.env[kv.slice(0, kv.indexOf('='))] !== kv.slice(kv.indexOf('=') + 1)),
    ...o.nodeOptions.filter((opt) => !o.rt.execArgv.includes(opt)),
  ];
  const options = missing.length
    ? `missing ${missing.join(' ')}: run sunset as the \`sunset\` command (its first line gives node them), or by \`sunset service print\`'s unit (docs/operations.md)`
    : `${[...o.nodeEnv, ...o.nodeOptions].join(' ')} (as the sunset command runs it)`;
  return [
    `${pkg.name} ${pkg.version}`,
    `  package at    ${pkg.root}`,
    `  node          ${o.rt.nodeVersion} ${o.rt.execPath}`,
    `  node options  ${options}`,
  ].join('\n');
}

/** `sunset --version [--verbose]`, `sunset -V [-v]`. */
export async function versionCommand(args: string[], rt: Runtime): Promise<string> {
  const extra = args.filter((a) => a !== '--verbose' && a !== '-v');
  if (extra.length) throw new UsageError(`--version takes only --verbose (-v), not ${extra.join(' ')}`);
  const verbose = args.length > 0;
  // the options live beside the unit that repeats them; loaded only when asked for
  const { NODE_OPTIONS, NODE_ENV } = verbose ? await import('./service.js') : { NODE_OPTIONS: [], NODE_ENV: [] };
  return versionText(packageInfo(), { verbose, rt, nodeOptions: NODE_OPTIONS, nodeEnv: NODE_ENV });
}
