'use strict';
// postinstall: put the native binary in place of the JS launcher at
// bin/mcp-tasks-proxy, as esbuild does, so that the installed command (the
// global symlink, node_modules/.bin, npx) is the binary itself: no Node
// process on the stdio path and no Node start-up. A hard link when the two
// files share a file system, else a copy. The binary is checked with
// --version first; on any failure the JS launcher stays and still works.
//
// Not on Windows: there npm's shims run `node bin/mcp-tasks-proxy`, made
// when the JS file was in place, so the launcher must stay.

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { binaryPath } = require('./lib/platform.js');

const launcher = path.join(__dirname, 'bin', 'mcp-tasks-proxy');
const version = require('./package.json').version;

function main() {
  if (process.platform === 'win32') return;
  let bin;
  try {
    bin = binaryPath();
  } catch (err) {
    warn(err.message);
    return;
  }
  const tmp = `${launcher}.${process.pid}.tmp`;
  try {
    rm(tmp);
    try {
      fs.linkSync(bin, tmp);
    } catch (err) {
      fs.copyFileSync(bin, tmp);
    }
    fs.chmodSync(tmp, 0o755);
    const out = execFileSync(tmp, ['--version'], { encoding: 'utf8', timeout: 10000, stdio: ['ignore', 'pipe', 'pipe'] });
    if (!out.includes(version)) {
      throw new Error(`${bin} --version printed ${JSON.stringify(out.trim())}, not version ${version}`);
    }
    fs.renameSync(tmp, launcher);
  } catch (err) {
    rm(tmp);
    warn(`kept the Node launcher: ${err.message}`);
  }
}

function rm(file) {
  try {
    fs.unlinkSync(file);
  } catch (err) {
    // Not there.
  }
}

function warn(msg) {
  process.stderr.write(`mcp-tasks-proxy postinstall: ${msg}\n`);
}

main();
