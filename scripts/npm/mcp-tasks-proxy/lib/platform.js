'use strict';
// Which npm package holds the native binary for this machine, and where the
// binary is. Shared by the postinstall step (install.js) and the fallback
// launcher (bin/mcp-tasks-proxy); scripts/npm/pack.js reads PLATFORMS too.

const path = require('path');

// npm's process.platform/process.arch → the Go target and the package name.
const PLATFORMS = {
  'linux x64': { goos: 'linux', goarch: 'amd64', pkg: '@mcp-tasks-proxy/linux-x64' },
  'linux arm64': { goos: 'linux', goarch: 'arm64', pkg: '@mcp-tasks-proxy/linux-arm64' },
  'darwin x64': { goos: 'darwin', goarch: 'amd64', pkg: '@mcp-tasks-proxy/darwin-x64' },
  'darwin arm64': { goos: 'darwin', goarch: 'arm64', pkg: '@mcp-tasks-proxy/darwin-arm64' },
  'win32 x64': { goos: 'windows', goarch: 'amd64', pkg: '@mcp-tasks-proxy/win32-x64' },
  'win32 arm64': { goos: 'windows', goarch: 'arm64', pkg: '@mcp-tasks-proxy/win32-arm64' },
};

function exeName(platform) {
  return platform === 'win32' ? 'mcp-tasks-proxy.exe' : 'mcp-tasks-proxy';
}

// The path of the native binary, from the platform package that npm
// installed as an optional dependency. Throws an error that says what to do.
function binaryPath(platform = process.platform, arch = process.arch) {
  const key = `${platform} ${arch}`;
  const entry = PLATFORMS[key];
  if (!entry) {
    throw new Error(
      `no prebuilt binary for ${key}; supported: ${Object.keys(PLATFORMS).join(', ')}. ` +
        'Install with Go instead: go install github.com/mcp-tasks-proxy/mcp-tasks-proxy/cmd/mcp-tasks-proxy@latest'
    );
  }
  const sub = `${entry.pkg}/bin/${exeName(platform)}`;
  try {
    return require.resolve(sub, { paths: [path.join(__dirname, '..')] });
  } catch (err) {
    throw new Error(
      `the package ${entry.pkg}, which holds the binary for ${key}, is not installed. ` +
        'It is an optional dependency: install again without --no-optional or --omit=optional ' +
        '(and, with a lock file made on another platform, let npm add it).'
    );
  }
}

module.exports = { PLATFORMS, exeName, binaryPath };
