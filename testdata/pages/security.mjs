// Two-factor authentication and recovery codes: a person turns TOTP on by
// the secret the page shows (a QR code of it beside), sees the recovery
// codes made with it, regenerates them through the generate-and-confirm,
// and turns TOTP off.
import { run, audit, check, signIn, expectPath, fixture, totp, readQR } from './lib.mjs';

await run(async ({ newPage }) => {
  const page = await newPage();
  await signIn(page, fixture.email, fixture.password);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Security', exact: true }).click();
  expectPath(page, '/account/security/', 'the Security link');
  await audit(page, 'security-off');
  check((await page.textContent('main')).includes('Two-factor authentication is off'), 'the page does not say two-factor is off');

  // Enrolment: the secret in text and the QR code.
  await page.getByRole('link', { name: 'Set up two-factor authentication' }).click();
  expectPath(page, '/account/security/totp/', 'the set-up link');
  await audit(page, 'totp');
  const secret = (await page.locator('#totp-secret').textContent()).trim();
  check(/^[A-Z2-7]{32}$/.test(secret), `the secret ${JSON.stringify(secret)} is not 32 characters of upper-case base32`);
  const qr = page.getByRole('img', { name: /QR code/ });
  check(await qr.isVisible(), 'no QR code image');
  const box = await qr.boundingBox();
  check(box && box.width >= 150 && box.width === box.height, `the QR code is ${JSON.stringify(box)}`);
  // An authenticator app reads the code as drawn: jsQR reads the
  // screenshot of it.
  const uri = readQR(await qr.screenshot());
  check(uri && uri.startsWith('otpauth://totp/') && new URL(uri).searchParams.get('secret') === secret,
    `the QR code reads ${JSON.stringify(uri)}, not the otpauth:// address of ${secret}`);
  // The same session is offered the same secret again.
  await page.goto('/account/security/totp/');
  check((await page.locator('#totp-secret').textContent()).trim() === secret, 'a second visit offers another secret');

  // A wrong code, then the app's.
  const code = totp(secret);
  const wrong = String((Number(code) + 500000) % 1000000).padStart(6, '0');
  await page.getByLabel('Code', { exact: true }).fill(wrong);
  await page.getByRole('button', { name: 'Activate' }).click();
  check(await page.getByRole('alert').isVisible(), 'a wrong code shows no error');
  check((await page.locator('#totp-secret').textContent()).trim() === secret, 'a wrong code changes the secret');
  await audit(page, 'totp-wrong-code');
  await page.getByLabel('Code', { exact: true }).fill(totp(secret));
  await page.getByRole('button', { name: 'Activate' }).click();
  expectPath(page, '/account/security/recovery-codes/', 'after activation');
  check(await page.getByRole('status').isVisible(), 'activation shows no notice');
  const codesOf = async () => (await page.locator('ol.codes li').allTextContents()).map((s) => s.trim());
  const first = await codesOf();
  check(first.length === 10 && first.every((c) => /^\d{8}$/.test(c)), `the recovery codes after activation: ${first}`);
  await audit(page, 'recovery-codes');

  await page.goto('/account/security/');
  check((await page.textContent('main')).includes('Two-factor authentication is on'), 'the page does not say two-factor is on');
  check((await page.textContent('main')).includes('10 of your 10 recovery codes'), 'the page does not count 10 recovery codes');
  await audit(page, 'security-on');

  // New codes: generated, a wrong confirmation, then one of them.
  await page.getByRole('link', { name: 'See or make recovery codes' }).click();
  await page.getByRole('button', { name: 'Generate new codes' }).click();
  const fresh = await codesOf();
  check(fresh.length === 10 && fresh.every((c) => !first.includes(c)), `the new codes: ${fresh}`);
  await audit(page, 'recovery-codes-new');
  await page.getByLabel('Code', { exact: true }).fill(first[0]);
  await page.getByRole('button', { name: 'Save these codes' }).click();
  check(await page.getByRole('alert').isVisible(), 'an old code confirms the new set');
  check(JSON.stringify(await codesOf()) === JSON.stringify(fresh), 'the refused confirmation does not show the new codes again');
  await audit(page, 'recovery-codes-wrong');
  await page.getByLabel('Code', { exact: true }).fill(fresh[3]);
  await page.getByRole('button', { name: 'Save these codes' }).click();
  expectPath(page, '/account/security/recovery-codes/', 'after saving the codes');
  check(await page.getByRole('status').isVisible(), 'saving the codes shows no notice');
  check(JSON.stringify(await codesOf()) === JSON.stringify(fresh), 'the saved codes are not the unused ones');
  await audit(page, 'recovery-codes-saved');

  // Off.
  await page.goto('/account/security/');
  await page.getByRole('button', { name: 'Turn off two-factor' }).click();
  check(await page.getByRole('status').isVisible(), 'turning two-factor off shows no notice');
  check((await page.textContent('main')).includes('Two-factor authentication is off'), 'two-factor is still on');
  check((await page.textContent('main')).includes('You have no recovery codes'), 'recovery codes are left');
  await audit(page, 'security-turned-off');
});
