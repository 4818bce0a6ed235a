// client.mjs drives an MCP server with the official TypeScript SDK 2.x client
// (@modelcontextprotocol/client) and prints ONE JSON report line on stdout;
// everything else goes to stderr. The e2e tests assert on the report.
//
//	node client.mjs --mode pin|auto --scenario JSON --url URL
//	node client.mjs --mode pin|auto --scenario JSON -- COMMAND [ARG...]
//
// --mode pin   versionNegotiation {mode: {pin: '2026-07-28'}}: server/discover
//              must offer 2026-07-28, no fallback to initialize.
// --mode auto  versionNegotiation {mode: 'auto'}: server/discover first, the
//              2025 initialize handshake when the answer is not modern.
// On stdio the SDK sends the server/discover probe, in both modes, to a
// short-lived sibling process spawned with the same command (stderr
// ignored, stdin closed and SIGTERM once answered), then spawns COMMAND a
// second time for the session. Over HTTP the probe is the first POST.
//
// The scenario is a JSON object; every step is optional and runs in this
// order when present:
//
//	{"stepTimeoutMs": 20000,
//	 "listTools": true,
//	 "echo": {"tool": "echo", "args": {"text": "hi"}},
//	 "resource": {"uri": "demo://readme"},
//	 "prompt": {"name": "greeting", "args": {"name": "Ada"}},
//	 "inputRequired": {"tool": "ask_name", "args": {},
//	                   "reply": {"action": "accept", "content": {"name": "Ada"}}},
//	 "listen": {"filter": {"toolsListChanged": true},
//	            "trigger": {"tool": "touch", "args": {"what": "tools"}},
//	            "expect": "notifications/tools/list_changed"},
//	 "cancel": {"tool": "slow_count", "args": {"n": 50, "delay_ms": 10000},
//	            "abortAfterProgress": true,
//	            "after": {"tool": "echo", "args": {"text": "still here"}}},
//	 "whoami": {"tool": "whoami"}}
//
// The report: {"mode", "transport", "ok", "connect": {...}, "steps":
// {NAME: {...}}, "error"?}. A step that failed has "ok": false and "error":
// {name, code, message}. The exit status is 0 whenever the report was
// printed, 2 on a usage error, 3 when the overall deadline passed (the
// partial report is printed then too).

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import process from 'node:process';

const PINNED = '2026-07-28';

function log(...args) {
    process.stderr.write(`tsclient2: ${args.map(a => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ')}\n`);
}

function usage(msg) {
    process.stderr.write(`tsclient2: ${msg}\nusage: node client.mjs --mode pin|auto --scenario JSON [--deadline-ms N] (--url URL | -- COMMAND [ARG...])\n`);
    process.exit(2);
}

function parseArgs(argv) {
    const out = { mode: undefined, scenario: undefined, url: undefined, command: undefined, args: [], deadlineMs: 120000 };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) usage(`${a} needs a value`);
            return argv[++i];
        };
        switch (a) {
            case '--mode':
                out.mode = next();
                break;
            case '--scenario':
                out.scenario = next();
                break;
            case '--url':
                out.url = next();
                break;
            case '--deadline-ms':
                out.deadlineMs = Number(next());
                break;
            case '--':
                out.command = argv[i + 1];
                out.args = argv.slice(i + 2);
                i = argv.length;
                break;
            default:
                usage(`unknown argument ${a}`);
        }
    }
    if (out.mode !== 'pin' && out.mode !== 'auto') usage('--mode must be pin or auto');
    if ((out.url === undefined) === (out.command === undefined)) usage('give exactly one of --url URL or -- COMMAND');
    if (!Number.isFinite(out.deadlineMs) || out.deadlineMs <= 0) usage('--deadline-ms must be a positive number');
    try {
        out.scenario = JSON.parse(out.scenario ?? '{}');
    } catch (error) {
        usage(`--scenario is not JSON: ${error.message}`);
    }
    return out;
}

/** The fields of an error the report keeps. */
function errorInfo(error) {
    if (error === undefined || error === null) return { name: 'Error', message: String(error) };
    const info = { name: error.name ?? error.constructor?.name ?? 'Error', message: String(error.message ?? error) };
    if (error.code !== undefined) info.code = error.code;
    if (error.data !== undefined) {
        try {
            info.data = JSON.parse(JSON.stringify(error.data));
        } catch {
            // not JSON: left out
        }
    }
    return info;
}

/** Texts of the text items of a content array. */
function texts(content) {
    return (content ?? []).filter(c => c && c.type === 'text').map(c => c.text);
}

/** A promise that rejects after ms, with a clear message, and its canceller. */
function deadline(ms, what) {
    let timer;
    const promise = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no outcome within ${ms} ms`)), ms);
    });
    return { promise, clear: () => clearTimeout(timer) };
}

async function bounded(ms, what, promise) {
    const d = deadline(ms, what);
    try {
        return await Promise.race([promise, d.promise]);
    } finally {
        d.clear();
    }
}

const opts = parseArgs(process.argv.slice(2));
const scenario = opts.scenario;
const stepTimeout = scenario.stepTimeoutMs ?? 20000;

const report = {
    mode: opts.mode,
    transport: opts.url !== undefined ? 'http' : 'stdio',
    ok: false,
    connect: { ok: false },
    steps: {}
};

let printed = false;
function printReport() {
    if (printed) return;
    printed = true;
    process.stdout.write(JSON.stringify(report) + '\n');
}

const overall = setTimeout(() => {
    report.error = { name: 'Error', message: `the scenario did not finish within ${opts.deadlineMs} ms` };
    printReport();
    process.exit(3);
}, opts.deadlineMs);

// Seen notifications, by method, in order (the listen step waits on them).
const seen = [];
const waiters = [];
function noteNotification(method, params) {
    seen.push({ method, params });
    for (const w of waiters.splice(0)) {
        if (!w(method, params)) waiters.push(w);
    }
}
function waitNotification(method, ms) {
    if (seen.some(n => n.method === method)) return Promise.resolve(true);
    return bounded(
        ms,
        `waiting for ${method}`,
        new Promise(resolve => {
            waiters.push(m => {
                if (m !== method) return false;
                resolve(true);
                return true;
            });
        })
    );
}

const elicitations = [];
const elicitationReply = scenario.inputRequired?.reply ?? { action: 'accept', content: { name: 'Ada' } };

const client = new Client(
    { name: 'mcp-tasks-proxy-e2e-tsclient2', version: '1.0.0' },
    {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: opts.mode === 'pin' ? { pin: PINNED } : 'auto' }
    }
);
client.onerror = error => log('client error:', errorInfo(error));
client.setRequestHandler('elicitation/create', async request => {
    elicitations.push({ mode: request.params?.mode, message: request.params?.message });
    return elicitationReply;
});
for (const method of [
    'notifications/tools/list_changed',
    'notifications/prompts/list_changed',
    'notifications/resources/list_changed',
    'notifications/resources/updated'
]) {
    client.setNotificationHandler(method, notification => noteNotification(method, notification?.params));
}

let transport;
if (opts.url !== undefined) {
    transport = new StreamableHTTPClientTransport(new URL(opts.url));
} else {
    // The whole environment is passed on: the SDK would otherwise give the
    // child only HOME, LOGNAME, PATH, SHELL, TERM and USER.
    transport = new StdioClientTransport({ command: opts.command, args: opts.args, env: { ...process.env }, stderr: 'inherit' });
}

async function step(name, fn) {
    const entry = { ok: false };
    report.steps[name] = entry;
    try {
        Object.assign(entry, await fn(entry));
        entry.ok = true;
    } catch (error) {
        entry.error = errorInfo(error);
        log(`step ${name} failed:`, entry.error);
    }
}

async function callTool(spec, options = {}) {
    return client.callTool({ name: spec.tool, arguments: spec.args ?? {} }, { timeout: stepTimeout, ...options });
}

async function run() {
    try {
        await client.connect(transport, { timeout: stepTimeout });
        report.connect.ok = true;
    } catch (error) {
        report.connect.error = errorInfo(error);
        log('connect failed:', report.connect.error);
    }
    report.connect.era = client.getProtocolEra() ?? null;
    report.connect.protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
    report.connect.serverInfo = client.getServerVersion() ?? null;
    report.connect.discovered = client.getDiscoverResult() !== undefined;
    report.connect.supportedVersions = client.getDiscoverResult()?.supportedVersions ?? null;
    if (!report.connect.ok) return;

    if (scenario.listTools) {
        await step('listTools', async () => {
            const { tools } = await client.listTools(undefined, { timeout: stepTimeout });
            return { names: tools.map(t => t.name) };
        });
    }
    if (scenario.echo) {
        await step('echo', async () => {
            const res = await callTool(scenario.echo);
            return { texts: texts(res.content), isError: res.isError === true };
        });
    }
    if (scenario.resource) {
        await step('resource', async () => {
            const res = await client.readResource({ uri: scenario.resource.uri }, { timeout: stepTimeout });
            return {
                contents: (res.contents ?? []).map(c => ({ uri: c.uri, mimeType: c.mimeType, text: c.text }))
            };
        });
    }
    if (scenario.prompt) {
        await step('prompt', async () => {
            const res = await client.getPrompt({ name: scenario.prompt.name, arguments: scenario.prompt.args ?? {} }, { timeout: stepTimeout });
            return {
                description: res.description,
                messages: (res.messages ?? []).map(m => ({ role: m.role, text: m.content?.type === 'text' ? m.content.text : undefined }))
            };
        });
    }
    if (scenario.inputRequired) {
        await step('inputRequired', async entry => {
            const before = elicitations.length;
            entry.handlerCalls = 0;
            try {
                const res = await callTool(scenario.inputRequired);
                return { texts: texts(res.content), isError: res.isError === true };
            } finally {
                entry.handlerCalls = elicitations.length - before;
                entry.requests = elicitations.slice(before);
            }
        });
    }
    if (scenario.listen) {
        await step('listen', async () => {
            const spec = scenario.listen;
            const out = { acknowledged: false };
            const sub = await client.listen(spec.filter ?? { toolsListChanged: true }, { timeout: stepTimeout });
            out.acknowledged = true;
            out.honoredFilter = sub.honoredFilter;
            try {
                if (spec.trigger) {
                    const res = await callTool(spec.trigger);
                    out.triggerTexts = texts(res.content);
                    if (spec.expect) {
                        out.arrived = await waitNotification(spec.expect, stepTimeout);
                    }
                }
                out.notifications = seen.map(n => n.method);
            } finally {
                await bounded(stepTimeout, 'closing the subscription', sub.close());
                out.closed = await bounded(stepTimeout, 'the subscription to end', sub.closed);
            }
            return out;
        });
    }
    if (scenario.cancel) {
        await step('cancel', async () => {
            const spec = scenario.cancel;
            const out = { progressSeen: 0, rejected: false };
            const ac = new AbortController();
            const reason = 'cancelled by the e2e scenario';
            const started = Date.now();
            let progressTimer;
            const options = { signal: ac.signal, timeout: Math.max(stepTimeout, 60000) };
            if (spec.abortAfterProgress) {
                options.onprogress = () => {
                    out.progressSeen++;
                    if (!ac.signal.aborted) ac.abort(reason);
                };
                // Bounded: without any progress the call is aborted anyway.
                progressTimer = setTimeout(() => {
                    if (!ac.signal.aborted) ac.abort(reason);
                }, stepTimeout);
            } else {
                setImmediate(() => ac.abort(reason));
            }
            try {
                const res = await bounded(stepTimeout * 2, 'the cancelled call to settle', callTool(spec, options));
                out.result = { texts: texts(res.content), isError: res.isError === true };
            } catch (error) {
                out.rejected = ac.signal.aborted;
                out.rejection = errorInfo(error);
            } finally {
                clearTimeout(progressTimer);
            }
            out.aborted = ac.signal.aborted;
            out.elapsedMs = Date.now() - started;
            if (spec.after) {
                try {
                    const res = await callTool(spec.after);
                    out.after = { ok: true, texts: texts(res.content) };
                } catch (error) {
                    out.after = { ok: false, error: errorInfo(error) };
                }
            }
            return out;
        });
    }
    if (scenario.whoami) {
        await step('whoami', async () => {
            const res = await callTool(scenario.whoami);
            return { structuredContent: res.structuredContent ?? null, texts: texts(res.content) };
        });
    }
}

try {
    await run();
    report.ok = report.connect.ok && Object.values(report.steps).every(s => s.ok);
} catch (error) {
    report.error = errorInfo(error);
    log('scenario failed:', report.error);
}
try {
    await bounded(10000, 'closing the client', client.close());
} catch (error) {
    report.closeError = errorInfo(error);
}
clearTimeout(overall);
printReport();
process.exit(0);
