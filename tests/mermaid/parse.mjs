// Parse Mermaid diagrams with Mermaid's own parser: a JSON list of diagram texts on stdin, a JSON list of
// {"ok": true, "type": ...} or {"ok": false, "error": "..."} on stdout, one per diagram, in order.
// Mermaid sanitizes labels with DOMPurify, which needs a DOM: jsdom provides one (no browser is started).
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');

let input = '';
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const text of JSON.parse(input)) {
  try {
    const parsed = await mermaid.parse(text);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    results.push({ ok: false, error: String(error.message || error).split('\n').slice(0, 3).join(' | ') });
  }
}
process.stdout.write(JSON.stringify(results));
