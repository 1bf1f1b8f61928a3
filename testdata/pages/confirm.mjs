// Confirming an address: the link of a confirmation mail shows a button
// that names the address; clicking it (the page runs no script: only its
// form can) confirms it. A forged link shows no button.
import { run, audit, check, fixture } from './lib.mjs';

await run(async ({ newPage }) => {
  const page = await newPage();
  const res = await page.goto(fixture.path);
  check(res.status() === 200, `the confirmation page: ${res.status()}`);
  check(!(await page.content()).toLowerCase().includes('<script'), 'the confirmation page has a script');
  await audit(page, 'confirm-email');
  const button = page.getByRole('button', { name: `Confirm ${fixture.email}` });
  check(await button.isVisible(), `no button "Confirm ${fixture.email}"`);
  await button.click();
  check((await page.getByRole('status').textContent()).includes(`${fixture.email} is confirmed`),
    'the page does not say the address is confirmed');
  check(await page.getByRole('heading', { name: 'Email address confirmed' }).isVisible(), 'no heading "Email address confirmed"');
  await audit(page, 'confirm-email-done');

  const forged = await page.goto('/profile/confirm-email/Zm9yZ2Vk.Zm9yZ2Vk/');
  check(forged.status() === 400, `a forged link: ${forged.status()}, want 400`);
  check(await page.getByRole('button').count() === 0, 'a forged link shows a button');
  check((await page.textContent('main')).includes('invalid or has expired'), 'a forged link does not say so');
  await audit(page, 'confirm-email-forged');
});
