// _browser.mjs - shared by the browser tests: start examples/web/serve.mjs
// as a child process on a free port, launch Debian's Chromium through
// playwright-core (no browser download) with a fresh profile, collect
// console errors. Not a test file (the leading underscore).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const OUT = join(ROOT, 'test-output', 'browser');
export const CHROMIUM = process.env.TP_CHROMIUM || '/usr/bin/chromium';
export const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
  '--no-first-run', '--disable-component-update', '--disable-sync',
];

/** Why the browser tests cannot run here, or null. */
export async function skipReason() {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing (apt-get install chromium)`;
  try {
    await import('playwright-core');
  } catch {
    return 'npm package playwright-core is not installed (npm ci)';
  }
  if (!existsSync(join(ROOT, 'js/wasm/tensorplay.wasm'))) return 'js/wasm/tensorplay.wasm is not built (bash scripts/build.sh wasi)';
  return null;
}

/** Starts serve.mjs on a free port; resolves to { url, stop() }. */
export function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'examples/web/serve.mjs'), '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    const timer = setTimeout(() => { child.kill(); reject(new Error(`serve.mjs did not start: ${out}${err}`)); }, 10000);
    child.stderr.on('data', (d) => { err += d; });
    child.stdout.on('data', (d) => {
      out += d;
      const m = /at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1],
          stop: () => new Promise((r) => {
            if (child.exitCode !== null) return r();
            child.once('exit', () => r());
            child.kill('SIGTERM');
          }),
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve.mjs exited with ${code}: ${out}${err}`));
    });
  });
}

/** Launches Chromium with a fresh user-data-dir; resolves to { context, close() }. */
export async function launch() {
  const { chromium } = await import('playwright-core');
  const dir = mkdtempSync(join(tmpdir(), 'tp-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A new page that records console errors and uncaught page errors in page.errors. */
export async function newPage(context) {
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(`console.error: ${m.text()}`);
  });
  page.on('pageerror', (e) => page.errors.push(`uncaught: ${e.message}`));
  page.on('crash', () => page.errors.push('the page crashed'));
  return page;
}

/**
 * Waits until the element `selector` has the attribute `attr` and returns
 * its value, with one page.evaluate that awaits a MutationObserver. Use it
 * while a page is loading, when timing matters: Playwright's waitForSelector
 * and waitForFunction inject its selector engine, a 330 KB script, into the
 * page on first use, and evaluating it took about 14 ms of the page's main
 * thread in the middle of the web example's start-up (a Chromium trace),
 * which delayed what that thread does for the worker.
 */
export function waitForAttribute(page, selector, attr, timeoutMs = 30000) {
  return page.evaluate(([selector, attr, timeoutMs]) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${selector}[${attr}] after ${timeoutMs} ms`)), timeoutMs);
    const check = () => {
      const v = document.querySelector(selector)?.getAttribute(attr);
      if (v === null || v === undefined) return false;
      clearTimeout(timer);
      observer.disconnect();
      resolve(v);
      return true;
    };
    const observer = new MutationObserver(check);
    if (!check()) observer.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: [attr] });
  }), [selector, attr, timeoutMs]);
}

export function outDir() {
  mkdirSync(OUT, { recursive: true });
  return OUT;
}
