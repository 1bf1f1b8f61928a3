// Sign-in at / and the home page: a person signs in with their password
// and finds their organizations and errata's addresses for clients.
import { run, audit, check, signIn, expectPath, fixture, base } from './lib.mjs';

await run(async ({ newPage }) => {
  const page = await newPage();
  await page.goto('/');
  await audit(page, 'sign-in');
  check(await page.getByRole('button', { name: 'Sign in' }).isVisible(), 'no Sign in button at /');

  // A wrong password: the form again, with the API's message.
  await page.getByLabel('Email').fill(fixture.email);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  check(await page.getByRole('alert').isVisible(), 'a wrong password shows no error');
  await audit(page, 'sign-in-wrong-password');

  // The same form without its CSRF token (as another site's form would
  // post it) is refused, and signs nobody in.
  await page.goto('/');
  await page.getByLabel('Email').fill(fixture.email);
  await page.getByLabel('Password').fill(fixture.password);
  await page.evaluate(() => document.querySelector('input[name=csrfmiddlewaretoken]').remove());
  const [refused] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    page.getByRole('button', { name: 'Sign in' }).click(),
  ]);
  check(refused.status() === 403, `a sign-in without its CSRF token answered ${refused.status()}, want 403`);
  check((await page.textContent('main')).includes('security token did not match'), 'the refusal does not say why');
  await audit(page, 'sign-in-without-csrf-token');

  await signIn(page, fixture.email, fixture.password);
  expectPath(page, '/', 'after sign-in');
  await audit(page, 'home');
  check(await page.getByRole('link', { name: fixture.orgName }).isVisible(), `no link to ${fixture.orgName}`);
  for (const name of ['Account', 'Security', 'API tokens', 'Sessions']) {
    const nav = page.getByRole('navigation', { name: 'Main' });
    check(await nav.getByRole('link', { name, exact: true }).isVisible(), `no link ${name} on the home page`);
  }
  check((await page.textContent('main')).includes(base + '/api/0/'), 'the home page does not name the API root');

  // A page of a signed-in person, opened signed out, leads to sign-in and
  // back to it.
  const other = await newPage();
  await other.goto('/account/');
  expectPath(other, '/', 'a signed-out visit to /account/');
  check(new URL(other.url()).searchParams.get('next') === '/account/', 'sign-in does not come back to /account/');
});
