// The account pages: a person edits their name, adds an email address and
// confirms it by its message's link, makes it primary and back, removes
// it, changes their notification settings and their password, and signs
// in with the new password (their other session signed out by the change).
import { run, audit, check, signIn, expectPath, fixture, mailTo } from './lib.mjs';

const nav = (page) => page.getByRole('navigation', { name: 'Main' });

await run(async ({ newPage }) => {
  const page = await newPage();
  await signIn(page, fixture.email, fixture.password);
  const other = await newPage(); // another browser of the same person
  await signIn(other, fixture.email, fixture.password);

  // Profile.
  await nav(page).getByRole('link', { name: 'Account', exact: true }).click();
  expectPath(page, '/account/', 'the Account link');
  await audit(page, 'account');
  await page.getByLabel('Name').fill('Ann Example');
  await page.getByRole('button', { name: 'Save name' }).click();
  check(await page.getByRole('status').isVisible(), 'saving the name shows no notice');
  check(await page.getByLabel('Name').inputValue() === 'Ann Example', 'the name field does not hold the new name');
  await audit(page, 'account-saved');
  await page.goto('/');
  check((await page.textContent('main')).includes('Ann Example'), 'the home page does not name the person by the new name');

  // Email addresses: add one, the same again (refused), resend its
  // confirmation, confirm it by the link, make it primary and back,
  // remove it.
  await page.goto('/account/');
  await page.getByRole('link', { name: 'Emails' }).click();
  expectPath(page, '/account/emails/', 'the Emails link');
  await audit(page, 'emails');
  const work = 'ann.work@example.com';
  await page.getByLabel('Email').fill(work);
  await page.getByRole('button', { name: 'Add email' }).click();
  check(await page.getByRole('status').isVisible(), 'adding an address shows no notice');
  const row = () => page.getByRole('row').filter({ hasText: work });
  check((await row().textContent()).includes('Not verified'), 'the new address is not listed as not verified');
  await audit(page, 'emails-added');
  await page.getByLabel('Email').fill(work);
  await page.getByRole('button', { name: 'Add email' }).click();
  check(await page.getByRole('alert').isVisible(), 'adding an address twice shows no error');
  check(await page.getByLabel('Email').inputValue() === work, 'the refused form does not keep the address typed');
  await audit(page, 'emails-twice');
  await mailTo(work, 0);
  await row().getByRole('button', { name: 'Resend confirmation' }).click();
  check(await page.getByRole('status').isVisible(), 'sending the confirmation again shows no notice');
  const mail = await mailTo(work, 1); // the second message
  const link = /https?:\/\/\S+\/profile\/confirm-email\/([^/\s]+)\//.exec(mail);
  check(link, 'the confirmation message holds no link');
  if (link) {
    // The link opens the confirmation page, whose button confirms.
    await page.goto(`/profile/confirm-email/${link[1]}/`);
    await page.getByRole('button', { name: `Confirm ${work}` }).click();
    check((await page.textContent('main')).includes('is confirmed'), 'the confirmation page does not say the address is confirmed');
    await audit(page, 'email-confirmed');
  }
  await page.goto('/account/emails/');
  check(/Verified/.test(await row().textContent()), 'the confirmed address is not listed as verified');
  await audit(page, 'emails-verified');
  await row().getByRole('button', { name: 'Make primary' }).click();
  check(/Primary/.test(await row().textContent()), 'the address made primary is not listed as primary');
  await audit(page, 'emails-primary');
  await page.getByRole('row').filter({ hasText: fixture.email }).getByRole('button', { name: 'Make primary' }).click();
  check(/Primary/.test(await page.getByRole('row').filter({ hasText: fixture.email }).textContent()),
    'the first address is not primary again');
  await row().getByRole('button', { name: 'Remove' }).click();
  check(await row().count() === 0, 'the removed address is still listed');
  await audit(page, 'emails-removed');

  // Notifications.
  await page.goto('/account/');
  await page.getByRole('link', { name: 'Notifications' }).click();
  expectPath(page, '/account/notifications/', 'the Notifications link');
  await audit(page, 'notifications');
  const box = page.getByLabel(/Subscribe to new projects/);
  const was = await box.isChecked();
  await box.setChecked(!was);
  await page.getByRole('button', { name: 'Save' }).click();
  check(await page.getByRole('status').isVisible(), 'saving the notifications shows no notice');
  await audit(page, 'notifications-saved');
  await page.goto('/account/notifications/');
  check(await page.getByLabel(/Subscribe to new projects/).isChecked() === !was, 'the notification setting did not change');

  // Password: a wrong current one, then the change.
  await page.goto('/account/');
  await page.getByRole('link', { name: 'Password' }).click();
  expectPath(page, '/account/password/', 'the Password link');
  await audit(page, 'password');
  const fresh = 'a new passphrase for ann 7';
  await page.getByLabel('Current password').fill('not the password');
  await page.getByLabel('New password').fill(fresh);
  await page.getByRole('button', { name: 'Change password' }).click();
  check(await page.getByRole('alert').isVisible(), 'a wrong current password shows no error');
  await audit(page, 'password-wrong');
  await page.getByLabel('Current password').fill(fixture.password);
  await page.getByLabel('New password').fill(fresh);
  await page.getByRole('button', { name: 'Change password' }).click();
  check(await page.getByRole('status').isVisible(), 'changing the password shows no notice');
  await audit(page, 'password-changed');
  await page.goto('/account/');
  expectPath(page, '/account/', 'this session after the password change');
  await other.goto('/account/');
  expectPath(other, '/', 'the other session after the password change');

  // The new password signs in; the old one no longer does.
  const later = await newPage();
  await signIn(later, fixture.email, fixture.password);
  check(await later.getByRole('alert').isVisible(), 'the old password still signs in');
  await signIn(later, fixture.email, fresh);
  await later.goto('/account/');
  expectPath(later, '/account/', 'a sign-in with the new password');
});
