// Releases and debug files: a person finds the organization's releases
// from the home page, pages through them, searches one whose version
// needs escaping, opens it and sees its files, deploys and commits; finds
// a project's debug files; and gets the 404 page for another
// organization's release.
import { run, audit, check, signIn, expectPath, fixture } from './lib.mjs';

await run(async ({ newPage }) => {
  const page = await newPage();
  const releases = `/organizations/${fixture.org}/releases/`;
  await signIn(page, fixture.email, fixture.password);
  expectPath(page, '/', 'after sign-in');

  // Home → the organization → Releases.
  await page.getByRole('link', { name: fixture.orgName }).click();
  expectPath(page, `/organizations/${fixture.org}/`, `the link ${fixture.orgName}`);
  await audit(page, 'organization');
  await page.getByRole('navigation', { name: 'Organization' }).getByRole('link', { name: 'Releases', exact: true }).click();
  expectPath(page, releases, 'the Releases link');
  await audit(page, 'releases');
  const rows = page.locator('main table tbody tr');
  check(await rows.count() === 50, `the first page shows ${await rows.count()} releases, want the API's 50`);
  check(await page.getByRole('link', { name: fixture.version, exact: true }).isVisible(),
    `the newest release ${fixture.version} is not on the first page`);

  // The second page, by the API's cursor, and back.
  await page.getByRole('link', { name: 'Next page' }).click();
  await audit(page, 'releases-page-2');
  check(await rows.count() === fixture.releases - 50, `the second page shows ${await rows.count()} releases, want ${fixture.releases - 50}`);
  check(await page.getByRole('link', { name: '1.0.0', exact: true }).isVisible(), 'the oldest release is not on the second page');
  check(await page.getByRole('link', { name: 'Next page' }).count() === 0, 'the last page links to a next one');
  await page.getByRole('link', { name: 'Previous page' }).click();
  check(await rows.count() === 50, 'the previous page is not the first');

  // Search by a part of the version.
  await page.getByLabel('Version contains').fill('beta');
  await page.getByRole('button', { name: 'Search' }).click();
  await audit(page, 'releases-search');
  check(await rows.count() === 1, `the search for "beta" shows ${await rows.count()} releases, want 1`);

  // The release: its version escaped in its address, its file, deploy and commit.
  await page.getByRole('link', { name: fixture.version, exact: true }).click();
  const segments = new URL(page.url()).pathname.split('/');
  check(decodeURIComponent(segments[segments.length - 2]) === fixture.version, `the release's address ${page.url()} does not name ${fixture.version}`);
  await audit(page, 'release');
  check(await page.getByRole('heading', { level: 1 }).textContent() === `Release ${fixture.version}`,
    `the release's heading is ${await page.getByRole('heading', { level: 1 }).textContent()}`);
  const main = await page.textContent('main');
  for (const [what, want] of [['file', fixture.file], ['deploy', fixture.environment], ['commit', fixture.commit], ['author', fixture.author]]) {
    check(main.includes(want), `the release page does not show its ${what} ${want}`);
  }
  check(!main.includes('Long story'), 'the release page shows more than the first line of a commit message');

  // Debug files: choose the project.
  await page.getByRole('navigation', { name: 'Organization' }).getByRole('link', { name: 'Debug files' }).click();
  expectPath(page, `/organizations/${fixture.org}/debug-files/`, 'the Debug files link');
  await audit(page, 'debug-files');
  await page.getByLabel('Project').selectOption('web');
  await page.getByRole('button', { name: 'Show' }).click();
  await audit(page, 'debug-files-web');
  check(new URL(page.url()).searchParams.get('project') === 'web', `the Show button led to ${page.url()}`);
  const difs = await page.textContent('main');
  check(difs.includes(fixture.debugFile) && difs.includes(fixture.debugID),
    `the debug files of web do not show ${fixture.debugFile} ${fixture.debugID}`);

  // Another organization's release, by its address: the API's 404.
  const rival = await page.goto(fixture.rivalRelease);
  check(rival.status() === 404, `another organization's release answered ${rival.status()}, want 404`);
  check(!(await page.textContent('main')).includes('9.9.9'), "the 404 page shows the other organization's release");
  await audit(page, 'release-of-another-organization');

  // A version cannot hold "/": its address is a clear 4xx, not an error.
  const slash = await page.goto(releases + '1.0%2Fbeta/');
  check(slash.status() >= 400 && slash.status() < 500, `a version with "/" answered ${slash.status()}`);
  await audit(page, 'release-version-with-slash');
});
