// stdio-relay.mjs URL is a minimal 2026-07-28 stdio server for the e2e
// tests: it relays every JSON-RPC request line from stdin to the Streamable
// HTTP server at URL (one POST each, with MCP-Protocol-Version from the
// request's _meta, Mcp-Method and Mcp-Name) and writes the answer, or each
// message of an event-stream answer, to stdout as one line. A
// notifications/cancelled from the client aborts the POST of the request it
// names (on HTTP, closing the stream is the cancellation); other
// notifications are dropped. It lets client.mjs exercise its stdio path
// against the demo without the proxy.

import process from 'node:process';
import readline from 'node:readline';

const url = process.argv[2];
if (!url) {
    process.stderr.write('usage: node stdio-relay.mjs URL\n');
    process.exit(2);
}
const inflight = new Map(); // JSON of the request id → AbortController
const log = (...a) => process.stderr.write(`stdio-relay: ${a.join(' ')}\n`);
const write = line => process.stdout.write(line.trim() + '\n');

function nameOf(method, params) {
    if (method === 'tools/call' || method === 'prompts/get') return params?.name;
    if (method === 'resources/read') return params?.uri;
    return undefined;
}

async function relay(line, msg) {
    const key = JSON.stringify(msg.id);
    const headers = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-method': msg.method,
        'mcp-protocol-version': msg.params?._meta?.['io.modelcontextprotocol/protocolVersion'] ?? '2026-07-28'
    };
    const name = nameOf(msg.method, msg.params);
    if (typeof name === 'string') headers['mcp-name'] = name;
    const ac = new AbortController();
    inflight.set(key, ac);
    try {
        const res = await fetch(url, { method: 'POST', headers, body: line, signal: ac.signal });
        if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
            const decoder = new TextDecoder();
            let buf = '';
            for await (const chunk of res.body) {
                buf += decoder.decode(chunk, { stream: true }).replaceAll('\r\n', '\n');
                let i;
                while ((i = buf.indexOf('\n\n')) >= 0) {
                    const event = buf.slice(0, i);
                    buf = buf.slice(i + 2);
                    const data = event
                        .split('\n')
                        .filter(l => l.startsWith('data:'))
                        .map(l => l.slice(5).replace(/^ /, ''))
                        .join('\n');
                    if (data.trim() !== '') write(data);
                }
            }
        } else {
            const text = await res.text();
            if (text.trim() !== '') write(text);
        }
    } catch (error) {
        log(`request ${key} ended: ${error.name}`);
    } finally {
        inflight.delete(key);
    }
}

readline.createInterface({ input: process.stdin }).on('line', line => {
    let msg;
    try {
        msg = JSON.parse(line);
    } catch {
        log('not JSON:', line);
        return;
    }
    if (msg.id === undefined || msg.id === null) {
        if (msg.method === 'notifications/cancelled') inflight.get(JSON.stringify(msg.params?.requestId))?.abort();
        return;
    }
    if (typeof msg.method !== 'string') return; // a response: nothing asks the client anything
    relay(line, msg);
}).on('close', () => process.exit(0));
