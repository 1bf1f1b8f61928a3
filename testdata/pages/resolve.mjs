// Resolve a stack trace: a person reaches the page from their home, pastes
// a minified Node trace (innermost frame first) and reads the original
// functions, files and lines in the same order with their source; pastes
// an obfuscated Java trace and reads the program's own; pastes the JSON
// of a request; pastes garbage and is told so.
import { run, audit, check, signIn, expectPath, fixture } from './lib.mjs';

// frames returns the function and place of every frame shown, in order.
async function frames(page) {
  return page.locator('ol.frames > li').evaluateAll((items) => items.map((li) => ({
    status: li.querySelector('.status')?.textContent.trim(),
    function: li.querySelector('.function')?.textContent.trim(),
    where: li.querySelector('.where')?.textContent.trim() ?? '',
    sent: li.querySelector('.sent')?.textContent ?? '',
    current: li.querySelector('pre.context mark')?.textContent ?? null,
  })));
}

async function resolve(page, release, text) {
  await page.getByLabel('Project').selectOption('web');
  await page.getByLabel('Release').fill(release);
  await page.getByLabel('Stack trace', { exact: true }).fill(text);
  // The answer is a long page: read it once it has loaded, not while
  // the browser still parses it.
  await Promise.all([
    page.waitForNavigation({ waitUntil: 'load' }),
    page.getByRole('button', { name: 'Resolve' }).click(),
  ]);
}

await run(async ({ newPage }) => {
  const page = await newPage();
  await signIn(page, fixture.email, fixture.password);
  await page.getByRole('link', { name: fixture.orgName, exact: true }).click();
  await page.getByRole('navigation', { name: 'Organization' }).getByRole('link', { name: 'Resolve a stack trace' }).click();
  expectPath(page, '/organizations/acme/resolve/', 'the link Resolve a stack trace');
  await audit(page, 'resolve');

  // Node's trace of the minified bundle, innermost first.
  await resolve(page, fixture.release, fixture.jsTrace);
  expectPath(page, '/organizations/acme/resolve/', 'after Resolve');
  await audit(page, 'resolve-javascript');
  // Node's own frames (node:internal/...) are shown too, unresolved.
  let got = (await frames(page)).filter((f) => f.sent.includes(fixture.url));
  check(got.length === fixture.jsFrames.length, `${got.length} JavaScript frames shown, want ${fixture.jsFrames.length}`);
  fixture.jsFrames.forEach((want, i) => {
    const f = got[i] || {};
    check(f.status === 'resolved', `frame ${i}: status ${f.status}`);
    check(f.where.endsWith(want.where), `frame ${i}: at ${f.where}, the unminified run printed ${want.where}`);
    // The name at the caller's call site (applyDiscount), else the
    // function around the frame (Cart.applyDiscount), as the unminified
    // run names it.
    if (want.function) {
      check(f.function === want.function || want.function.endsWith('.' + f.function), `frame ${i}: function ${f.function}, want ${want.function}`);
    }
    check(f.sent, `frame ${i}: the minified frame is not shown`);
    const line = want.where.split(':')[1];
    check(f.current && f.current.includes('→') && f.current.includes(line), `frame ${i}: the current line ${line} is not marked: ${f.current}`);
  });
  check((await page.getByLabel('Stack trace', { exact: true }).inputValue()) === fixture.jsTrace, 'the pasted trace is not kept');
  check((await page.getByLabel('Release').inputValue()) === fixture.release, 'the release is not kept');
  check((await page.textContent('main')).includes('unknown discount code BOGUS'), 'the error message is not shown');

  // Without the release, nothing finds the script: the API's error.
  await resolve(page, '', fixture.jsTrace);
  got = (await frames(page)).filter((f) => f.sent.includes(fixture.url));
  check(got.length === fixture.jsFrames.length && got.every((f) => f.status === 'missing_source'), `without a release: ${got.map((f) => f.status)}`);
  await audit(page, 'resolve-javascript-no-release');

  // The obfuscated Java trace: the mapping uploaded for the release.
  await resolve(page, fixture.release, fixture.javaTrace);
  await audit(page, 'resolve-java');
  got = await frames(page);
  check(got.length === fixture.javaFrames.length, `${got.length} Java frames shown, want ${fixture.javaFrames.length}`);
  fixture.javaFrames.forEach((want, i) => {
    const f = got[i] || {};
    check(f.function === want.function && f.where === want.where, `Java frame ${i}: ${f.function} at ${f.where}, want ${want.function} at ${want.where}`);
    check(f.status === 'remapped', `Java frame ${i}: status ${f.status}`);
  });
  const heading = await page.getByRole('heading', { level: 3 }).first().textContent();
  check(heading.includes(fixture.javaException), `the exception is ${heading}, want ${fixture.javaException}`);
  check((await page.textContent('main')).includes(fixture.uuid), 'the mapping used is not named');

  // The JSON of a request to symbolicate-js/, caller first: one frame.
  const first = fixture.jsTrace.split('\n').find((l) => l.includes(fixture.url));
  const [, line, col] = first.match(/:(\d+):(\d+)\)?$/);
  const json = JSON.stringify({ stacktraces: [{ frames: [{ abs_path: fixture.url, lineno: +line, colno: +col }] }], release: fixture.release }, null, 2);
  await resolve(page, '', json);
  await audit(page, 'resolve-json');
  got = await frames(page);
  check(got.length === 1 && got[0].status === 'resolved' && got[0].where.endsWith(fixture.jsFrames[0].where),
    `the JSON request: ${JSON.stringify(got)}`);

  // Garbage: a 400 page with the message, the text kept.
  const res = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    resolve(page, fixture.release, 'this is not a stack trace'),
  ]);
  check(res[0].status() === 400, `garbage answered ${res[0].status()}`);
  const alert = await page.getByRole('alert').textContent();
  check(alert.includes('No stack frames found'), `garbage: ${alert}`);
  check((await page.getByLabel('Stack trace', { exact: true }).inputValue()) === 'this is not a stack trace', 'garbage is not kept');
  await audit(page, 'resolve-garbage');

  // Malformed JSON: the reader's message.
  await resolve(page, '', '{"stacktraces": [');
  check((await page.getByRole('alert').textContent()).includes('JSON'), 'malformed JSON is not named');
  await audit(page, 'resolve-bad-json');
});
