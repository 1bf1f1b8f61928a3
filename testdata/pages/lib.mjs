// The browser tests' common code (run by pages_test.go): headless Debian
// Chromium driven by playwright-core, axe-core's WCAG 2.1 A and AA rules
// on every page a flow sees, a screenshot of each, and the checks every
// page answer must pass (its Content-Security-Policy).
import { createRequire } from 'node:module';
import { readFileSync, readdirSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createHmac } from 'node:crypto';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE);
const axeSource = readFileSync(process.env.AXE_CORE, 'utf8');
const jsQR = require(process.env.JSQR);
const { PNG } = require(process.env.PNGJS);

// base is errata's address; fixture is what the Go test made for the flow.
export const base = process.env.ERRATA_URL;
export const fixture = JSON.parse(process.env.PAGES_FIXTURE || '{}');
const flow = process.env.PAGES_FLOW;
const screenshots = process.env.ERRATA_SCREENSHOTS;
export const CSP = "default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const failures = [];
let shots = 0;

// fail records a failure; the flow goes on, and exits 1 at its end.
export function fail(msg) {
  failures.push(msg);
  console.error('FAIL: ' + msg);
}

// check fails with msg unless cond holds.
export function check(cond, msg) {
  if (!cond) fail(msg);
}

// launch starts Chromium with a context of its own (its own cookies),
// checking every page answer of errata's for the CSP header and failing
// on every console error (a CSP violation is one).
export async function launch() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return { browser, newPage: (opts) => newPage(browser, opts) };
}

// newPage opens a page in a new context (a new visitor: no cookies).
export async function newPage(browser, opts = {}) {
  const context = await browser.newContext({ baseURL: base, ...opts });
  const page = await context.newPage();
  page.on('response', (res) => {
    if (res.request().resourceType() === 'document' && res.url().startsWith(base)) {
      const csp = res.headers()['content-security-policy'];
      check(csp === CSP, `${res.url()}: Content-Security-Policy ${JSON.stringify(csp)}`);
    }
  });
  page.on('console', (msg) => {
    // A page's own status (a form answered 400) is no error of the page.
    const own = msg.text().startsWith('Failed to load resource') && msg.location().url === page.url();
    if (msg.type() === 'error' && !own) fail(`console error on ${page.url()}: ${msg.text()} (${msg.location().url})`);
  });
  page.on('pageerror', (err) => fail(`script error on ${page.url()}: ${err}`));
  return page;
}

// audit runs axe-core's WCAG 2.1 A and AA rules on the page and keeps a
// screenshot of it named name.
export async function audit(page, name) {
  await page.waitForLoadState('load');
  await page.evaluate(axeSource);
  const result = await page.evaluate(() =>
    // eslint-disable-next-line no-undef
    axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }));
  for (const v of result.violations) {
    fail(`${name} (${page.url()}): axe ${v.id}: ${v.help}: ` +
      v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', '));
  }
  mkdirSync(screenshots, { recursive: true });
  shots++;
  await page.screenshot({ path: join(screenshots, `${flow}-${String(shots).padStart(2, '0')}-${name}.png`), fullPage: true });
}

// expectPath fails unless the page is at path (without the query).
export function expectPath(page, path, what) {
  const u = new URL(page.url());
  check(u.pathname === path, `${what}: at ${u.pathname}${u.search}, want ${path}`);
}

// signIn signs email in with password through the sign-in page.
export async function signIn(page, email, password) {
  await page.goto('/');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState('load');
}

// readQR reads the QR code of a PNG image (a screenshot) with jsQR,
// null when it finds none.
export function readQR(png) {
  const img = PNG.sync.read(png);
  const found = jsQR(new Uint8ClampedArray(img.data), img.width, img.height);
  return found ? found.data : null;
}

// totp is the RFC 6238 code of the base32 secret at time (ms).
export function totp(secret, time = Date.now()) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of secret.replace(/=+$/, '').toUpperCase()) {
    bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  }
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(time / 30000)));
  const h = createHmac('sha1', key).update(counter).digest();
  const o = h[h.length - 1] & 0xf;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1000000).padStart(6, '0');
}

// mailTo waits up to 20 s for a message to address in the Maildir of the
// test's SMTP server, and returns its text with quoted-printable undone.
export async function mailTo(address, seen = 0) {
  const dir = process.env.MAILDIR;
  for (let i = 0; i < 200; i++) {
    const found = [];
    for (const sub of ['new', 'cur']) {
      let names = [];
      try { names = readdirSync(join(dir, sub)); } catch { /* not yet made */ }
      for (const n of names.sort()) {
        const raw = readFileSync(join(dir, sub, n), 'latin1');
        const to = /^To: *(.*)$/mi.exec(raw);
        if (to && to[1].includes(address)) found.push(raw);
      }
    }
    if (found.length > seen) {
      return found[seen].replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no message to ${address}`);
}

// run runs a flow: fn gets the browser; the process exits 1 when a check
// failed or fn threw.
export async function run(fn) {
  const { browser, newPage: open } = await launch();
  try {
    await fn({ browser, newPage: open });
  } catch (err) {
    fail(`the flow stopped: ${err.stack || err}`);
  } finally {
    await browser.close();
  }
  console.log(`${flow}: ${shots} pages audited, ${failures.length} failures`);
  process.exit(failures.length ? 1 : 0);
}
