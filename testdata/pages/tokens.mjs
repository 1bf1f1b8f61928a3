// Sessions and API tokens: a person signed in in three browsers ends one
// other session, then all the others; makes a token (shown once), uses
// it against the API, and revokes it.
import { run, audit, check, signIn, expectPath, fixture, base } from './lib.mjs';

const nav = (page) => page.getByRole('navigation', { name: 'Main' });

await run(async ({ newPage }) => {
  const page = await newPage();
  await signIn(page, fixture.email, fixture.password);
  const second = await newPage({ userAgent: 'second browser' });
  await signIn(second, fixture.email, fixture.password);
  const third = await newPage({ userAgent: 'third browser' });
  await signIn(third, fixture.email, fixture.password);

  // Sessions: three, this one marked; end the second one, then the rest.
  await nav(page).getByRole('link', { name: 'Sessions', exact: true }).click();
  expectPath(page, '/account/sessions/', 'the Sessions link');
  const rows = page.getByRole('row').filter({ has: page.getByRole('cell') });
  check(await rows.count() === 3, `${await rows.count()} sessions listed, want 3`);
  check(await rows.filter({ hasText: '(this session)' }).count() === 1, 'this session is not marked once');
  await audit(page, 'sessions');
  await rows.filter({ hasText: 'second browser' }).getByRole('button', { name: 'End session' }).click();
  check(await page.getByRole('status').isVisible(), 'ending a session shows no notice');
  check(await rows.count() === 2, 'the ended session is still listed');
  await audit(page, 'sessions-one-ended');
  await second.goto('/account/');
  expectPath(second, '/', 'the ended session');
  await third.goto('/account/');
  expectPath(third, '/account/', 'the session left alone');
  await page.getByRole('button', { name: 'Sign out other sessions' }).click();
  check(await rows.count() === 1, 'other sessions are still listed');
  await audit(page, 'sessions-others-ended');
  await third.goto('/account/');
  expectPath(third, '/', 'a session after "Sign out other sessions"');
  await page.goto('/account/');
  expectPath(page, '/account/', 'this session after "Sign out other sessions"');

  // Tokens: none; one made with two scopes, shown once.
  await nav(page).getByRole('link', { name: 'API tokens', exact: true }).click();
  expectPath(page, '/account/api-tokens/', 'the API tokens link');
  await audit(page, 'tokens');
  await page.getByLabel('Name').fill('CI uploads');
  await page.getByLabel('project:releases').check();
  await page.getByLabel('org:read').check();
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = (await page.locator('#new-token').textContent()).trim();
  check(token.length >= 40, `the new token ${JSON.stringify(token)} is short`);
  check(await page.getByRole('status').isVisible(), 'making a token shows no notice');
  const row = () => page.getByRole('row').filter({ hasText: 'CI uploads' });
  check((await row().textContent()).includes(token.slice(-4)), 'the token is not listed with its last characters');
  await audit(page, 'tokens-made');

  // It works as a client's token, with its scopes.
  const res = await fetch(`${base}/api/0/`, { headers: { Authorization: `Bearer ${token}` } });
  const root = await res.json();
  check(root.user && root.user.email === fixture.email, `GET /api/0/ with the token: ${JSON.stringify(root)}`);
  check(JSON.stringify(root.auth && root.auth.scopes) === JSON.stringify(['org:read', 'project:releases']),
    `the token's scopes: ${JSON.stringify(root.auth)}`);
  const orgs = await fetch(`${base}/api/0/organizations/`, { headers: { Authorization: `Bearer ${token}` } });
  check(orgs.status === 200, `GET organizations with the token: ${orgs.status}`);

  // Shown once: not on the next visit.
  await page.goto('/account/api-tokens/');
  check(!(await page.content()).includes(token), 'the token is shown again');
  check(await row().count() === 1, 'the token is not listed');

  // A token without a scope is refused; so is an expiry in the past, the
  // form kept.
  await page.getByLabel('Name').fill('No scope');
  await page.getByRole('button', { name: 'Create token' }).click();
  check(await page.getByRole('alert').isVisible(), 'a token without a scope shows no error');
  await audit(page, 'tokens-no-scope');
  await page.getByLabel('Name').fill('Old one');
  await page.getByLabel('org:read').check();
  await page.getByLabel('Expires').fill('2001-01-01');
  await page.getByRole('button', { name: 'Create token' }).click();
  check(await page.getByRole('alert').isVisible(), 'an expiry in the past shows no error');
  check(await page.getByLabel('Name').inputValue() === 'Old one', 'the refused form does not keep the name');
  check(await page.getByLabel('org:read').isChecked(), 'the refused form does not keep the scopes');
  await audit(page, 'tokens-refused');

  // Revoked: it no longer works.
  await row().getByRole('button', { name: 'Revoke' }).click();
  check(await page.getByRole('status').isVisible(), 'revoking shows no notice');
  check(await row().count() === 0, 'the revoked token is still listed');
  await audit(page, 'tokens-revoked');
  const after = await fetch(`${base}/api/0/organizations/`, { headers: { Authorization: `Bearer ${token}` } });
  check(after.status === 401, `the revoked token: ${after.status}, want 401`);
});
