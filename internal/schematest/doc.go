// Package schematest is a test-only helper: it validates JSON-RPC frames and
// golden vectors against the MCP JSON Schemas that live outside this
// repository, in <repo>/../shared/spec/schema (or $MCP_SPEC_DIR/schema).
//
// It must only be imported from _test.go files (or from other test helpers);
// production code never depends on it. The schema files are never copied into
// the repository: they are located at run time by [SpecDir]. When they are
// missing, tests are skipped locally and fail in CI (env CI non-empty).
//
// # Schemas
//
// Three schema files are used, all JSON Schema draft 2020-12 with every type
// under $defs. They are named by the constants [Schema2025] ("2025-11-25", the
// legacy client side), [Schema2026] ("2026-07-28", the modern server side) and
// [SchemaExtTasks] ("ext-tasks", the io.modelcontextprotocol/tasks extension).
//
// # Typical use
//
//	v := schematest.Load(t)
//	if err := v.ValidateClientBound(line, "initialize"); err != nil {
//		t.Error(err)
//	}
//	if err := v.ValidateUpstream(postBody); err != nil {
//		t.Error(err)
//	}
//
// [Validator.Validate] checks one instance against one named $defs entry; the
// frame helpers [Validator.ValidateClientBound], [Validator.ValidateUpstream]
// and [Validator.ValidateUpstreamResult] classify a JSON-RPC frame
// (request / notification / result / error) and pick the defs themselves.
// [CheckLegacyClean] adds explicit checks for modern-only fields that
// the (permissive) 2025 schema cannot catch. [LoadVector] reads the golden
// vectors in spec/examples and [Validator.ValidateVector] runs their embedded
// "validate" checks.
package schematest
