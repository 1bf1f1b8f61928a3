// Signing in, out and back: a person with TOTP signs in with the password
// then a code (a wrong one is refused), confirms who they are again with
// the password and with a code, signs out, signs in with a recovery code,
// forgets the password and sets a new one by the mail's link (which then
// works no more), and signs in with it.
import { run, audit, check, signIn, expectPath, fixture, totp, mailTo } from './lib.mjs';

// signOut signs out through the link of the navigation and the button.
async function signOut(page) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sign out' }).click();
  expectPath(page, '/auth/logout/', 'the sign-out link');
  await page.getByRole('button', { name: 'Sign out' }).click();
  expectPath(page, '/', 'after signing out');
  check(await page.getByRole('button', { name: 'Sign in' }).isVisible(), 'no sign-in form after signing out');
}

// secondFactor enters code on the second step of sign-in.
async function secondFactor(page, code) {
  await page.getByLabel('Code').fill(code);
  await page.getByRole('button', { name: 'Verify' }).click();
}

await run(async ({ newPage }) => {
  const page = await newPage();

  // The second step: nothing pending, back to sign-in.
  await page.goto('/auth/2fa/');
  expectPath(page, '/', 'the second step without a sign-in pending');

  // Password, then a wrong code, then the TOTP code.
  await signIn(page, fixture.email, fixture.password);
  expectPath(page, '/auth/2fa/', 'after the password of a person with TOTP');
  await audit(page, 'second-factor');
  await secondFactor(page, '00000000');
  expectPath(page, '/auth/2fa/', 'after a wrong code');
  const alert = page.getByRole('alert');
  check(await alert.isVisible() && (await alert.textContent()).includes('Incorrect code'), 'a wrong code shows no "Incorrect code"');
  await audit(page, 'second-factor-wrong-code');
  await secondFactor(page, totp(fixture.secret));
  expectPath(page, '/', 'after the TOTP code');
  check(await page.getByRole('link', { name: 'Acme Corp' }).isVisible(), 'not signed in after the TOTP code');
  await page.goto('/auth/2fa/');
  expectPath(page, '/', 'the second step when signed in');

  // Confirming who one is: a wrong password, the password, a code.
  await page.goto('/account/reauthenticate/?next=/');
  await audit(page, 'reauthenticate');
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Confirm with password' }).click();
  check(await page.getByRole('alert').isVisible(), 'a wrong password shows no error on reauthentication');
  await audit(page, 'reauthenticate-wrong-password');
  await page.getByLabel('Password').fill(fixture.password);
  await page.getByRole('button', { name: 'Confirm with password' }).click();
  expectPath(page, '/', 'after reauthenticating with the password');
  await page.goto('/account/reauthenticate/?next=/auth/logout/');
  // The step after the sign-in's: a code is good once.
  await page.getByLabel('Code').fill(totp(fixture.secret, Date.now() + 30000));
  await page.getByRole('button', { name: 'Confirm with code' }).click();
  expectPath(page, '/auth/logout/', 'after reauthenticating with a code');

  // Signing out.
  await audit(page, 'sign-out');
  await page.getByRole('button', { name: 'Sign out' }).click();
  expectPath(page, '/', 'after signing out');
  await audit(page, 'signed-out');
  await page.goto('/auth/logout/');
  expectPath(page, '/', 'the sign-out page signed out');

  // A recovery code at the second step.
  await signIn(page, fixture.email, fixture.password);
  await secondFactor(page, fixture.recoveryCodes[0]);
  expectPath(page, '/', 'after a recovery code');
  check(await page.getByRole('link', { name: 'Acme Corp' }).isVisible(), 'not signed in after a recovery code');
  await signOut(page);

  // A forgotten password.
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  expectPath(page, '/account/recover/', 'the forgotten password link');
  await audit(page, 'forgotten-password');
  await page.getByLabel('Email').fill(fixture.email);
  await page.getByRole('button', { name: 'Send reset link' }).click();
  check((await page.getByRole('status').textContent()).includes('on its way'), 'no notice that the link is on its way');
  await audit(page, 'forgotten-password-sent');
  let link;
  for (let i = 0; !link; i++) {
    link = /\/reset-password\/[^/\s]+\//.exec(await mailTo(fixture.email, i))?.[0];
  }
  await page.goto(link);
  await audit(page, 'reset-password');
  // The address itself is no password: the API's message, and the form again.
  await page.getByLabel('New password').fill(fixture.email);
  await page.getByRole('button', { name: 'Set password' }).click();
  check(await page.getByRole('alert').isVisible(), 'a refused password shows no error');
  await audit(page, 'reset-password-refused');
  await page.getByLabel('New password').fill(fixture.newPassword);
  await page.getByRole('button', { name: 'Set password' }).click();
  check((await page.getByRole('status').textContent()).includes('Your new password is set'), 'no notice that the password is set');
  await audit(page, 'reset-password-done');
  await page.getByRole('link', { name: 'Sign in', exact: true }).click();
  await signIn(page, fixture.email, fixture.newPassword);
  expectPath(page, '/auth/2fa/', 'after the new password');
  await secondFactor(page, fixture.recoveryCodes[1]);
  expectPath(page, '/', 'after the new password and a recovery code');
  check(await page.getByRole('link', { name: 'Acme Corp' }).isVisible(), 'not signed in with the new password');

  const used = await page.goto(link);
  check(used.status() === 400, `the used reset link: ${used.status()}, want 400`);
  await audit(page, 'reset-password-used');
});
