// Package serve is the HTTP front of the bridge: a 2025-11-25 Streamable
// HTTP server endpoint (/mcp), so that legacy clients that speak MCP over
// HTTP reach the same session core as stdio clients. Each client session
// (Mcp-Session-Id) is one bridge.Session over a Conn of this package.
//
//	POST /mcp   one JSON-RPC message ─▶ Conn.Read ─▶ bridge.Session
//	            its request's frames  ◀─ Conn.Write (Out.Stream = that POST)
//	                                   as application/json (the answer alone)
//	                                   or text/event-stream (progress, logs,
//	                                   the proxy's requests first)
//	GET  /mcp   the session's stream   ◀─ frames of no request (list_changed,
//	            (ids, Last-Event-ID)      resources/updated, requests outside
//	                                      a request)
//	DELETE /mcp end of the session     ─▶ Conn.Read returns io.EOF (drain)
//	GET /healthz, GET /metrics
//
// It owns the HTTP side of the 2025 transport: the session table and ids,
// the streams and their event ids, the replay buffer, the checks of
// Origin, Host, the bearer token and MCP-Protocol-Version, the session
// bounds (count, idleness) and the shutdown of every session, the health
// answer and the metrics.
//
// What it must never do: read or change a frame beyond classifying it
// (request, notification or response, its id and method) and minting the
// transport's own errors; run a session's protocol work (that is
// bridge's); let a request that failed the Origin, Host or token check
// reach a session or the upstream; write to stdout; log a token (only a
// hash of it names the client's identity); leave a POST without exactly
// one answer for its request, unless the client cancelled it.
package serve
