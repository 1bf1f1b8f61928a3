// Accepting an invitation: a new person makes their account on the
// invitation's page and joins; the used link is 404; a person with an
// account signs in from the page, comes back to it, and joins.
import { run, audit, check, expectPath, fixture } from './lib.mjs';

await run(async ({ newPage }) => {
  const page = await newPage();
  await page.goto(fixture.newcomer);
  check(await page.getByRole('heading', { name: `Join ${fixture.orgName}` }).isVisible(), 'no heading naming the organization');
  await audit(page, 'invitation-new-person');
  // A password the API refuses: its message, and the name kept.
  await page.getByLabel('Name').fill('Nina');
  await page.getByLabel('Password').fill('password');
  await page.getByRole('button', { name: `Join ${fixture.orgName}` }).click();
  check(await page.getByRole('alert').isVisible(), 'a refused password shows no error');
  check(await page.getByLabel('Name').inputValue() === 'Nina', 'the name typed is lost');
  await audit(page, 'invitation-refused-password');
  await page.getByLabel('Password').fill(fixture.newcomerPassword);
  await page.getByRole('button', { name: `Join ${fixture.orgName}` }).click();
  check((await page.getByRole('status').textContent()).includes(`You joined ${fixture.orgName}`), 'no notice of joining');
  await audit(page, 'invitation-joined');
  await page.goto('/');
  check(await page.getByRole('link', { name: fixture.orgName }).isVisible(), 'the new member is not signed in, or not a member');

  const used = await page.goto(fixture.newcomer);
  check(used.status() === 404, `the used invitation: ${used.status()}, want 404`);
  await audit(page, 'invitation-used');

  // A person with an account: sign in first, then join.
  const bob = await newPage();
  await bob.goto(fixture.member);
  await audit(bob, 'invitation-has-account');
  await bob.getByRole('link', { name: 'sign in', exact: true }).click();
  expectPath(bob, '/', 'the invitation\'s sign-in link');
  await bob.getByLabel('Email').fill(fixture.memberEmail);
  await bob.getByLabel('Password').fill(fixture.memberPassword);
  await bob.getByRole('button', { name: 'Sign in' }).click();
  expectPath(bob, fixture.member, 'after signing in from the invitation');
  await audit(bob, 'invitation-signed-in');
  await bob.getByRole('button', { name: 'Join', exact: true }).click();
  check((await bob.getByRole('status').textContent()).includes(`You joined ${fixture.orgName}`), 'no notice of joining when signed in');
  await audit(bob, 'invitation-joined-signed-in');
});
