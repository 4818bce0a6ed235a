#!/usr/bin/env node
'use strict';
// Makes the npm packages of mcp-tasks-proxy and packs them with `npm pack`:
//   - one package per platform, @mcp-tasks-proxy/<os>-<arch>, with the
//     native binary and npm's os/cpu fields, so npm installs only the one
//     that fits;
//   - the main package, mcp-tasks-proxy, with those as optionalDependencies,
//     a postinstall step that puts the binary in place of its command, and a
//     Node launcher as the fallback.
//
// Usage:
//   node scripts/npm/pack.js --version V --out DIR --artifacts dist/artifacts.json [--all]
//   node scripts/npm/pack.js --version V --out DIR --binary linux/amd64=path/to/binary ...
// --all fails unless every platform has a binary (a release); without it,
// the platforms given are packed (a test packs this machine's only). The
// main package always lists every platform. Prints the .tgz paths, one a line.
// DIR holds the main package and this machine's platform package, so that
// `npm install -g DIR/*.tgz` installs offline as it stands; the other
// platforms' packages go to DIR/platforms (npm refuses a package named for
// another platform). Publish both folders.
// No network: `npm pack` of a local folder fetches nothing.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { PLATFORMS, exeName } = require('./mcp-tasks-proxy/lib/platform.js');

const repoRoot = path.resolve(__dirname, '..', '..');
const template = path.join(__dirname, 'mcp-tasks-proxy');
const repository = { type: 'git', url: 'git+https://github.com/mcp-tasks-proxy/mcp-tasks-proxy.git' };
const homepage = 'https://github.com/mcp-tasks-proxy/mcp-tasks-proxy#readme';

function usage(msg) {
  process.stderr.write(`pack.js: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { binaries: {}, all: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      return argv[++i];
    };
    switch (arg) {
      case '--version': opts.version = value(); break;
      case '--out': opts.out = path.resolve(value()); break;
      case '--artifacts': opts.artifacts = path.resolve(value()); break;
      case '--all': opts.all = true; break;
      case '--binary': {
        const m = /^([a-z0-9]+)\/([a-z0-9]+)=(.+)$/.exec(value());
        if (!m) usage('--binary takes GOOS/GOARCH=PATH');
        opts.binaries[`${m[1]}/${m[2]}`] = path.resolve(m[3]);
        break;
      }
      default: usage(`unknown argument ${arg}`);
    }
  }
  if (!opts.version) usage('--version is required');
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(opts.version)) usage(`--version ${opts.version} is not a semver version`);
  if (!opts.out) usage('--out is required');
  if (opts.artifacts) {
    // GoReleaser's dist/artifacts.json: the built binaries, by target.
    const list = JSON.parse(fs.readFileSync(opts.artifacts, 'utf8'));
    const base = path.dirname(path.dirname(opts.artifacts));
    for (const a of list) {
      if (a.type !== 'Binary') continue;
      opts.binaries[`${a.goos}/${a.goarch}`] = path.resolve(base, a.path);
    }
  }
  return opts;
}

function writeJSON(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function copyTree(src, dst) {
  fs.mkdirSync(dst, { recursive: true });
  for (const ent of fs.readdirSync(src, { withFileTypes: true })) {
    const s = path.join(src, ent.name);
    const d = path.join(dst, ent.name);
    if (ent.isDirectory()) copyTree(s, d);
    else fs.copyFileSync(s, d);
  }
}

function npmPack(dir, out) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const res = execFileSync(npm, ['pack', '--json', '--pack-destination', out, '--offline', '--ignore-scripts'], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    shell: process.platform === 'win32',
  });
  return path.join(out, JSON.parse(res)[0].filename);
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  fs.mkdirSync(opts.out, { recursive: true });
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-tasks-proxy-npm-'));
  const tgzs = [];
  try {
    const optionalDependencies = {};
    for (const [key, p] of Object.entries(PLATFORMS)) {
      optionalDependencies[p.pkg] = opts.version;
      const [platform, arch] = key.split(' ');
      const bin = opts.binaries[`${p.goos}/${p.goarch}`];
      if (!bin) {
        if (opts.all) usage(`no binary for ${p.goos}/${p.goarch}`);
        continue;
      }
      const dir = path.join(stage, p.pkg.replace('/', '+'));
      fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
      const exe = path.join(dir, 'bin', exeName(platform));
      fs.copyFileSync(bin, exe);
      fs.chmodSync(exe, 0o755);
      fs.copyFileSync(path.join(repoRoot, 'LICENSE'), path.join(dir, 'LICENSE'));
      fs.writeFileSync(
        path.join(dir, 'README.md'),
        `# ${p.pkg}\n\nThe ${platform} ${arch} binary of [mcp-tasks-proxy](https://www.npmjs.com/package/mcp-tasks-proxy).\n` +
          'Install `mcp-tasks-proxy`, not this package: it picks the package that fits your machine.\n'
      );
      writeJSON(path.join(dir, 'package.json'), {
        name: p.pkg,
        version: opts.version,
        description: `The ${platform} ${arch} binary of mcp-tasks-proxy`,
        license: 'Apache-2.0',
        repository,
        homepage,
        os: [platform],
        cpu: [arch],
        preferUnplugged: true,
        files: ['bin'],
      });
      const here = platform === process.platform && arch === process.arch;
      const dest = here ? opts.out : path.join(opts.out, 'platforms');
      fs.mkdirSync(dest, { recursive: true });
      tgzs.push(npmPack(dir, dest));
    }

    const main = path.join(stage, 'mcp-tasks-proxy');
    copyTree(template, main);
    fs.copyFileSync(path.join(repoRoot, 'LICENSE'), path.join(main, 'LICENSE'));
    fs.chmodSync(path.join(main, 'bin', 'mcp-tasks-proxy'), 0o755);
    writeJSON(path.join(main, 'package.json'), {
      name: 'mcp-tasks-proxy',
      version: opts.version,
      description: 'A stdio MCP bridge to a remote MCP server (Streamable HTTP, tasks, OAuth)',
      license: 'Apache-2.0',
      repository,
      homepage,
      keywords: ['mcp', 'model-context-protocol', 'mcp-remote', 'proxy', 'stdio'],
      bin: { 'mcp-tasks-proxy': 'bin/mcp-tasks-proxy' },
      scripts: { postinstall: 'node install.js' },
      engines: { node: '>=16' },
      files: ['bin', 'lib', 'install.js'],
      optionalDependencies,
    });
    tgzs.push(npmPack(main, opts.out));
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
  for (const t of tgzs) process.stdout.write(`${t}\n`);
}

main();
