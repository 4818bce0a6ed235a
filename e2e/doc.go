// Package e2e holds the end-to-end tests of mcp-tasks-proxy. It has no code
// of its own: the tests build the real binary once (TestMain), launch it the
// way a legacy MCP host does (stdio, protocol 2025-11-25), and point it at an
// in-process modern server (the demo, or hand-written fault servers) served
// by httptest.
//
//	go-sdk client / raw NDJSON client ──stdio──▶ mcp-tasks-proxy ──HTTP──▶ recorder ─▶ demo.Handler()
//
// Every frame the proxy writes to stdout is checked to be one complete JSON
// object per line, validated against the 2025-11-25 schema and checked for
// leaked modern fields; every body it POSTs upstream is validated against the
// 2026-07-28 schema and its MCP headers are compared with the body. The spec
// schemas are found by internal/schematest (../shared/spec or $MCP_SPEC_DIR);
// without them the tests are skipped locally and fail in CI.
//
// No test synchronizes by sleeping: every wait is on an event (a line on
// stdout, a request seen upstream, a process exit) and is bounded by a
// timeout that fails the test.
package e2e
