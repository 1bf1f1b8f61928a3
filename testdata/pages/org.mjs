// An organization's pages: its owner finds it from the home page, reads
// the storage it uses, invites a colleague and reads the invitation's
// link on the page, changes the colleague's role, makes a team, puts a
// member and a project on it, and makes a project; a member sees the
// members but no invitation form, and is refused by the API; another
// organization's page, by its address, is the 404 page.
import { run, audit, check, signIn, expectPath, fixture } from './lib.mjs';

await run(async ({ newPage }) => {
  const page = await newPage();
  await signIn(page, fixture.email, fixture.password);
  expectPath(page, '/', 'after sign-in');
  await page.getByRole('link', { name: fixture.orgName }).click();
  expectPath(page, '/organizations/acme/', 'the organization\'s link');
  await audit(page, 'home');
  const orgNav = page.getByRole('navigation', { name: 'Organization' });
  for (const name of ['Members', 'Teams', 'Projects', 'Releases', 'Debug files', 'Resolve a stack trace']) {
    check(await orgNav.getByRole('link', { name, exact: true }).isVisible(), `no link ${name} on the organization's page`);
  }
  check(await page.getByRole('heading', { name: 'Storage used' }).isVisible(), 'no storage used');
  const home = await page.textContent('main');
  check(/You are an owner/.test(home), 'the owner\'s role is not shown');
  check(/release files/.test(home) && /32 bytes/.test(home) && /1 blob,/.test(home), `the release file is not in the storage: ${home}`);
  check(/quota of 1\.0 MiB/.test(home), 'the quota is not shown');

  // Members: invite a colleague; the page shows the invitation's link.
  await orgNav.getByRole('link', { name: 'Members', exact: true }).click();
  expectPath(page, '/organizations/acme/members/', 'Members');
  await audit(page, 'members');
  await page.getByLabel('Email').fill(fixture.member);
  await page.getByLabel('Role').selectOption('admin');
  await page.getByRole('button', { name: 'Invite' }).click();
  check(await page.getByRole('alert').isVisible(), 'inviting a member again shows no error');
  check(await page.getByLabel('Role').inputValue() === 'admin', 'the refused form lost its role');
  check(await page.getByLabel('Email').inputValue() === fixture.member, 'the refused form lost its address');
  await audit(page, 'members-invite-refused');
  await page.getByLabel('Email').fill(fixture.colleague);
  await page.getByLabel('Role').selectOption('member');
  await page.getByRole('button', { name: 'Invite' }).click();
  await audit(page, 'members-invited');
  const link = await page.locator('.secret code').textContent().catch(() => '');
  check(/\/accept-invite\/acme\/\d+\/[^/]+\/$/.test(link), `no invitation link on the page: ${link}`);
  check(await page.getByRole('cell', { name: fixture.colleague }).isVisible(), 'the invitation is not listed');
  // The link is the invitation's: the API reads it for a signed-out person.
  const invited = await newPage();
  const answer = await invited.request.get('/api' + '/0' + new URL(link).pathname);
  check(answer.ok() && (await answer.json()).email === fixture.colleague, `the invitation link answers ${answer.status()}`);

  // The colleague's page: change the role.
  await page.getByRole('link', { name: fixture.colleague }).click();
  await audit(page, 'member');
  check((await page.textContent('main')).includes('/accept-invite/acme/'), 'the member page shows no invitation link');
  await page.getByLabel('Role').selectOption('admin');
  await page.getByRole('button', { name: 'Save' }).click();
  check(await page.getByRole('status').isVisible(), 'saving the role shows no notice');
  check(await page.getByLabel('Role').inputValue() === 'admin', 'the role did not change');
  await audit(page, 'member-role-saved');
  await page.getByRole('button', { name: 'Remove' }).click();
  expectPath(page, '/organizations/acme/members/', 'after removing a member');
  check(!(await page.getByRole('link', { name: fixture.colleague }).isVisible()), 'the removed colleague is still listed');
  await audit(page, 'members-removed');

  // Teams: create one, add the member and the project web.
  await orgNav.getByRole('link', { name: 'Teams', exact: true }).click();
  await audit(page, 'teams');
  await page.getByLabel('Name').fill('Frontend');
  await page.getByRole('button', { name: 'Create team' }).click();
  expectPath(page, '/organizations/acme/teams/frontend/', 'a new team');
  await audit(page, 'team');
  await page.getByLabel('Member').selectOption({ label: fixture.member });
  await page.getByRole('button', { name: 'Add member' }).click();
  check(await page.getByRole('link', { name: fixture.member }).isVisible(), 'the member is not on the team');
  await page.getByLabel('Project').selectOption('web');
  await page.getByRole('button', { name: 'Add project' }).click();
  check(await page.getByRole('cell', { name: 'web', exact: true }).first().isVisible(), 'the project is not the team\'s');
  await audit(page, 'team-filled');
  await page.getByRole('button', { name: `Remove ${fixture.member} from the team` }).click();
  check(!(await page.getByRole('link', { name: fixture.member }).isVisible()), 'the member is still on the team');

  // Projects: create one.
  await orgNav.getByRole('link', { name: 'Projects', exact: true }).click();
  await audit(page, 'projects');
  await page.getByLabel('Name').fill('Mobile App');
  await page.getByRole('button', { name: 'Create project' }).click();
  check(await page.getByRole('status').isVisible(), 'creating a project shows no notice');
  check(await page.getByRole('cell', { name: 'mobile-app' }).isVisible(), 'the new project is not listed');
  check(await page.getByRole('link', { name: 'Releases of Web' }).isVisible(), 'no link to the releases of web');
  await audit(page, 'projects-created');
  await page.getByLabel('Name').fill('Second');
  await page.getByLabel('Slug').fill('mobile-app');
  await page.getByRole('button', { name: 'Create project' }).click();
  check(await page.getByRole('alert').isVisible(), 'a slug taken shows no error');
  check(await page.getByLabel('Name').inputValue() === 'Second', 'the refused form lost its name');
  await audit(page, 'projects-refused');

  // Another organization's pages, by their address: the 404 page.
  for (const path of ['/organizations/rival/', '/organizations/rival/members/', '/organizations/rival/teams/',
    '/organizations/rival/projects/']) {
    const res = await page.goto(path);
    check(res.status() === 404, `${path}: ${res.status()}, want 404`);
  }
  await audit(page, 'rival-404');

  // A member sees the members, without the invitation form; the API
  // refuses a change of role.
  const mel = await newPage();
  await signIn(mel, fixture.member, fixture.password);
  await mel.goto('/organizations/acme/members/');
  await audit(mel, 'members-as-member');
  check(await mel.getByRole('cell', { name: fixture.email }).isVisible(), 'a member does not see the members');
  check(!(await mel.getByRole('button', { name: 'Invite' }).isVisible()), 'a member is shown the invitation form');
  check(!(await mel.getByLabel('Email').isVisible()), 'a member is shown the Email field');
  await mel.goto('/organizations/acme/teams/');
  check(!(await mel.getByRole('button', { name: 'Create team' }).isVisible()), 'a member is shown the team form');
  await audit(mel, 'teams-as-member');
});
