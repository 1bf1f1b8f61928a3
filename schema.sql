-- schema.sql is the whole data model of errata. `errata migrate` applies it
-- idempotently inside one transaction under an advisory lock; every statement
-- must therefore be safe to run again on a database that already has it.

CREATE TABLE IF NOT EXISTS errata_schema (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS users (
    id                   bigserial PRIMARY KEY,
    email                text NOT NULL,
    name                 text NOT NULL DEFAULT '' CHECK (length(name) <= 255),
    password_hash        text,
    is_active            boolean NOT NULL DEFAULT true,
    is_superuser         boolean NOT NULL DEFAULT false,
    date_joined          timestamptz NOT NULL DEFAULT now(),
    last_login           timestamptz,
    -- The five user options of the API; NULL means unset.
    opt_timezone         text,
    opt_stacktrace_order text,
    opt_language         text,
    opt_clock_24_hours   boolean,
    opt_preferred_theme  text,
    subscribe_by_default boolean NOT NULL DEFAULT true
);
CREATE UNIQUE INDEX IF NOT EXISTS users_email_key ON users (lower(email));

CREATE TABLE IF NOT EXISTS social_accounts (
    id          bigserial PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider    text NOT NULL,
    uid         text NOT NULL,
    email       text,
    username    text,
    date_joined timestamptz NOT NULL DEFAULT now(),
    last_login  timestamptz,
    UNIQUE (provider, uid)
);
CREATE INDEX IF NOT EXISTS social_accounts_user_idx ON social_accounts (user_id);

CREATE TABLE IF NOT EXISTS organizations (
    id           bigserial PRIMARY KEY,
    slug         text NOT NULL UNIQUE,
    name         text NOT NULL,
    date_created timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS projects (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    slug            text NOT NULL,
    name            text NOT NULL,
    date_created    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, slug)
);

CREATE TABLE IF NOT EXISTS memberships (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role            text NOT NULL DEFAULT 'member'
                    CHECK (role IN ('member', 'admin', 'manager', 'owner')),
    date_created    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, user_id)
);
CREATE INDEX IF NOT EXISTS memberships_user_idx ON memberships (user_id, organization_id);

CREATE TABLE IF NOT EXISTS api_tokens (
    id           bigserial PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    scopes       text[] NOT NULL,
    label        text NOT NULL DEFAULT '',
    date_created timestamptz NOT NULL DEFAULT now(),
    last_used    timestamptz
);
CREATE INDEX IF NOT EXISTS api_tokens_user_idx ON api_tokens (user_id);

CREATE TABLE IF NOT EXISTS environments (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    date_created    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, name)
);
CREATE INDEX IF NOT EXISTS environments_page_idx
    ON environments (organization_id, date_created DESC, id DESC);

CREATE TABLE IF NOT EXISTS environment_projects (
    id             bigserial PRIMARY KEY,
    environment_id bigint NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    project_id     bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    is_hidden      boolean NOT NULL DEFAULT false,
    date_created   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, environment_id)
);
CREATE INDEX IF NOT EXISTS environment_projects_env_idx ON environment_projects (environment_id);

CREATE TABLE IF NOT EXISTS releases (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    version         text NOT NULL CHECK (length(version) BETWEEN 1 AND 200),
    ref             text,
    url             text,
    data            jsonb NOT NULL DEFAULT '{}',
    date_created    timestamptz NOT NULL DEFAULT now(),
    date_released   timestamptz,
    date_started    timestamptz,
    UNIQUE (organization_id, version)
);
CREATE INDEX IF NOT EXISTS releases_page_idx
    ON releases (organization_id, date_created DESC, id DESC);

CREATE TABLE IF NOT EXISTS release_projects (
    release_id bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    PRIMARY KEY (release_id, project_id)
);
CREATE INDEX IF NOT EXISTS release_projects_project_idx ON release_projects (project_id, release_id);

CREATE TABLE IF NOT EXISTS deploys (
    id             bigserial PRIMARY KEY,
    release_id     bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    environment_id bigint NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           text,
    url            text,
    date_started   timestamptz,
    date_finished  timestamptz NOT NULL DEFAULT now(),
    date_created   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS deploys_page_idx ON deploys (release_id, date_created DESC, id DESC);

-- Chunks uploaded through chunk-upload, owned by the organization that sent
-- them and named by the SHA-1 of their uncompressed bytes.
CREATE TABLE IF NOT EXISTS file_chunks (
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    sha1            text NOT NULL CHECK (sha1 ~ '^[0-9a-f]{40}$'),
    size            integer NOT NULL CHECK (size >= 0),
    data            bytea NOT NULL,
    date_created    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, sha1)
);

-- A stored file is the content behind a release file, kept as ordered parts.
CREATE TABLE IF NOT EXISTS files (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    size            bigint NOT NULL CHECK (size >= 0),
    sha1            text NOT NULL CHECK (sha1 ~ '^[0-9a-f]{40}$'),
    date_created    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS file_parts (
    file_id  bigint NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    position integer NOT NULL CHECK (position >= 0),
    data     bytea NOT NULL,
    PRIMARY KEY (file_id, position)
);

CREATE TABLE IF NOT EXISTS release_files (
    id           bigserial PRIMARY KEY,
    release_id   bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    file_id      bigint NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 1024),
    dist         text,
    headers      jsonb NOT NULL DEFAULT '{}',
    date_created timestamptz NOT NULL DEFAULT now(),
    UNIQUE NULLS NOT DISTINCT (release_id, name, dist)
);
CREATE INDEX IF NOT EXISTS release_files_page_idx
    ON release_files (release_id, date_created DESC, id DESC);

-- Background jobs. A job is inserted in the transaction of the data it acts
-- on; workers claim it with FOR UPDATE SKIP LOCKED and hold a lease.
CREATE TABLE IF NOT EXISTS jobs (
    id           bigserial PRIMARY KEY,
    kind         text NOT NULL,
    -- unique_key makes enqueueing idempotent (for example one assembly per
    -- organization and checksum).
    unique_key   text UNIQUE,
    payload      jsonb NOT NULL DEFAULT '{}',
    state        text NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'running', 'done', 'error')),
    attempts     integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
    run_at       timestamptz NOT NULL DEFAULT now(),
    locked_by    text,
    locked_until timestamptz,
    last_error   text,
    date_created timestamptz NOT NULL DEFAULT now(),
    date_updated timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS jobs_ready_idx ON jobs (run_at, id) WHERE state IN ('queued', 'running');
-- Schema 4 also: the organization a job works for (NULL: errata's own work,
-- mail and collection), so that workers share themselves fairly between
-- organizations and an organization's queued work is capped; and result,
-- what a job found for the requests that wait on it (a debug file
-- assembly: the checksum of the chunks and each file's outcome). Jobs
-- queued by an earlier version take the organization their payload names.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS organization_id bigint REFERENCES organizations (id) ON DELETE CASCADE;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS result jsonb;
UPDATE jobs j SET organization_id = (j.payload->>'organizationId')::bigint
WHERE j.organization_id IS NULL AND j.state IN ('queued', 'running')
  AND jsonb_typeof(j.payload->'organizationId') = 'number'
  AND EXISTS (SELECT 1 FROM organizations o WHERE o.id = (j.payload->>'organizationId')::bigint);
-- A claim walks the organizations with queued jobs (jobs_queued_idx: each
-- organization's oldest job first) and counts the jobs each runs
-- (jobs_running_idx, a handful of rows).
CREATE INDEX IF NOT EXISTS jobs_queued_idx ON jobs (organization_id, run_at, id) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS jobs_running_idx ON jobs (organization_id) WHERE state = 'running';
-- When a worker last took a job of each organization: of two organizations
-- running as many jobs, the one served longer ago goes first (round robin).
CREATE TABLE IF NOT EXISTS job_turns (
    organization_id bigint PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    last_claimed    timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS email_addresses (
    id           bigserial PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email        text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    is_verified  boolean NOT NULL DEFAULT false,
    is_primary   boolean NOT NULL DEFAULT false,
    date_created timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS email_addresses_user_email_key
    ON email_addresses (user_id, lower(email));
CREATE UNIQUE INDEX IF NOT EXISTS email_addresses_one_primary_key
    ON email_addresses (user_id) WHERE is_primary;
CREATE UNIQUE INDEX IF NOT EXISTS email_addresses_verified_key
    ON email_addresses (lower(email)) WHERE is_verified;

-- Messages waiting to be delivered; a 'mail' job delivers each one.
CREATE TABLE IF NOT EXISTS mail_outbox (
    id           bigserial PRIMARY KEY,
    to_address   text NOT NULL,
    subject      text NOT NULL,
    text_body    text NOT NULL,
    html_body    text NOT NULL,
    date_created timestamptz NOT NULL DEFAULT now(),
    date_sent    timestamptz
);

-- The user a message is for: an unsent message goes with its user. Sent
-- messages keep their recipient and subject, not their text (the link in
-- it carries a key).
ALTER TABLE mail_outbox ADD COLUMN IF NOT EXISTS user_id bigint REFERENCES users (id) ON DELETE CASCADE;
CREATE INDEX IF NOT EXISTS mail_outbox_user_idx ON mail_outbox (user_id);
UPDATE mail_outbox SET text_body = '', html_body = '' WHERE date_sent IS NOT NULL AND text_body <> '';

-- Active recovery codes of a user. The seed is encrypted with a key derived
-- from SECRET_KEY; used_mask has bit i set once code i was used.
CREATE TABLE IF NOT EXISTS recovery_codes (
    user_id        bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    seed_encrypted bytea NOT NULL,
    used_mask      integer NOT NULL DEFAULT 0,
    date_created   timestamptz NOT NULL DEFAULT now()
);

-- Pending recovery-code seeds of RECOVERY_SEED_STORE=postgres: generated by a
-- GET, waiting for the POST that confirms them, possibly on another replica.
-- The seed is encrypted like recovery_codes.seed_encrypted, bound to the user
-- id; a row is dead once expires_at passes and swept in batches.
CREATE TABLE IF NOT EXISTS pending_recovery_seeds (
    user_id        bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    seed_encrypted bytea NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_recovery_seeds_expires_idx ON pending_recovery_seeds (expires_at);

-- A release is open or archived (Sentry's status: sentry-cli releases
-- archive and restore); lists show open releases unless asked otherwise.
ALTER TABLE releases ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'open'
    CHECK (status IN ('open', 'archived'));
-- Lists show open releases unless asked for others: their page and their
-- capped count read this index alone (schema 4).
CREATE INDEX IF NOT EXISTS releases_status_page_idx
    ON releases (organization_id, status, date_created DESC, id DESC);
-- A release's owner: Sentry's owner, a member of the organization named on
-- create; a user's removal leaves the release without one.
ALTER TABLE releases ADD COLUMN IF NOT EXISTS owner_id bigint REFERENCES users (id) ON DELETE SET NULL;

-- Blobs: the content-addressed store of uploaded bytes. A blob is a chunk of
-- an upload, named by the SHA-1 of its bytes and stored once, whatever the
-- number of organizations, files and releases that use it. Its bytes live
-- in the blob store: blob_data below (BLOB_STORE=postgres) or an object
-- store. A blob row is written only after its bytes are stored, and the
-- collector removes the bytes before the row.
CREATE TABLE IF NOT EXISTS blobs (
    sha1         text PRIMARY KEY CHECK (sha1 ~ '^[0-9a-f]{40}$'),
    size         integer NOT NULL CHECK (size >= 0),
    date_created timestamptz NOT NULL DEFAULT now()
);

-- The bytes of blobs when BLOB_STORE=postgres, by key (the SHA-1). They are
-- stored out of line and uncompressed, so that a range is read without
-- reading the whole blob.
CREATE TABLE IF NOT EXISTS blob_data (
    key  text PRIMARY KEY,
    data bytea NOT NULL
);
ALTER TABLE blob_data ALTER COLUMN data SET STORAGE EXTERNAL;

-- Which organization may use which blob: an organization sees and reuses
-- only the blobs it uploaded. date_used is the last upload or assembly
-- request that named the blob; the collector keeps an unreferenced owner
-- row for a grace period after it.
CREATE TABLE IF NOT EXISTS blob_owners (
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    sha1            text NOT NULL REFERENCES blobs (sha1),
    date_used       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, sha1)
);
CREATE INDEX IF NOT EXISTS blob_owners_sha1_idx ON blob_owners (sha1);

-- A file is the ordered list of its blobs: file_blobs. Assembly writes
-- these rows, never the bytes again. The foreign key to blob_owners makes
-- it impossible to collect a blob that a file uses.
ALTER TABLE files ADD COLUMN IF NOT EXISTS date_used timestamptz NOT NULL DEFAULT now();
CREATE TABLE IF NOT EXISTS file_blobs (
    file_id         bigint NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    position        integer NOT NULL CHECK (position >= 0),
    organization_id bigint NOT NULL,
    sha1            text NOT NULL,
    start           bigint NOT NULL CHECK (start >= 0),
    PRIMARY KEY (file_id, position),
    FOREIGN KEY (organization_id, sha1) REFERENCES blob_owners (organization_id, sha1)
);
CREATE INDEX IF NOT EXISTS file_blobs_owner_idx ON file_blobs (organization_id, sha1);
CREATE INDEX IF NOT EXISTS files_org_sha1_idx ON files (organization_id, sha1);

-- A release file is a whole file, or a member of a bundle file: then
-- member_start is where the member's data starts in the bundle,
-- member_csize its stored size and member_method its zip method (0 stored,
-- 8 deflated). size and sha1 are the content's, the member's for a member.
ALTER TABLE release_files ADD COLUMN IF NOT EXISTS member_start bigint;
ALTER TABLE release_files ADD COLUMN IF NOT EXISTS member_csize bigint;
ALTER TABLE release_files ADD COLUMN IF NOT EXISTS member_method smallint;
ALTER TABLE release_files ADD COLUMN IF NOT EXISTS size bigint;
ALTER TABLE release_files ADD COLUMN IF NOT EXISTS sha1 text;
CREATE INDEX IF NOT EXISTS release_files_file_idx ON release_files (file_id);

-- Artifact bundles indexed by the debug ids of their files (source maps
-- after `sentry-cli sourcemaps inject`): the bundle is one stored file and
-- each of its files a row that points into it. A bundle belongs to the
-- projects it was uploaded for, and to a release when it names one.
CREATE TABLE IF NOT EXISTS artifact_bundles (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    bundle_id       text NOT NULL CHECK (length(bundle_id) BETWEEN 1 AND 64),
    file_id         bigint NOT NULL REFERENCES files (id),
    release         text,
    dist            text,
    file_count      integer NOT NULL CHECK (file_count >= 0),
    date_created    timestamptz NOT NULL DEFAULT now(),
    date_modified   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, bundle_id)
);
CREATE INDEX IF NOT EXISTS artifact_bundles_file_idx ON artifact_bundles (file_id);

CREATE TABLE IF NOT EXISTS artifact_bundle_projects (
    artifact_bundle_id bigint NOT NULL REFERENCES artifact_bundles (id) ON DELETE CASCADE,
    project_id         bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    PRIMARY KEY (artifact_bundle_id, project_id)
);
CREATE INDEX IF NOT EXISTS artifact_bundle_projects_project_idx
    ON artifact_bundle_projects (project_id, artifact_bundle_id);

CREATE TABLE IF NOT EXISTS artifact_bundle_files (
    id                 bigserial PRIMARY KEY,
    artifact_bundle_id bigint NOT NULL REFERENCES artifact_bundles (id) ON DELETE CASCADE,
    path               text NOT NULL,
    url                text NOT NULL,
    file_type          text NOT NULL,
    debug_id           uuid,
    headers            jsonb NOT NULL DEFAULT '{}',
    member_start       bigint NOT NULL,
    member_csize       bigint NOT NULL,
    member_method      smallint NOT NULL,
    size               bigint NOT NULL,
    sha1               text NOT NULL,
    UNIQUE (artifact_bundle_id, path)
);
CREATE INDEX IF NOT EXISTS artifact_bundle_files_debug_idx
    ON artifact_bundle_files (debug_id) WHERE debug_id IS NOT NULL;

-- The files and chunks of schema version 1 (file_parts, file_chunks) are
-- moved into blobs by `errata migrate` after this file is applied (see
-- store.Migrate); both tables stay, empty, for older replicas.
UPDATE release_files rf SET size = f.size, sha1 = f.sha1
    FROM files f WHERE f.id = rf.file_id AND rf.sha1 IS NULL;
ALTER TABLE release_files ALTER COLUMN size SET NOT NULL;
ALTER TABLE release_files ALTER COLUMN sha1 SET NOT NULL;

-- Repositories and commits, as sentry-cli's set-commits sends them: a
-- release's commits in order (release_commits), the head commit of each
-- repository in it (release_head_commits, from refs), and on the release
-- its commit count, last commit and authors, kept with the commits so that
-- reading a release needs no count. A commit belongs to a repository of
-- the organization; a repository named by a commit and not yet known is
-- created, with no provider, as Sentry does.
CREATE TABLE IF NOT EXISTS repositories (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    url             text,
    provider        text,
    date_created    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, name)
);
CREATE INDEX IF NOT EXISTS repositories_page_idx
    ON repositories (organization_id, date_created DESC, id DESC);

CREATE TABLE IF NOT EXISTS commit_authors (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email           text NOT NULL,
    name            text,
    UNIQUE (organization_id, email)
);

CREATE TABLE IF NOT EXISTS commits (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    repository_id   bigint NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
    key             text NOT NULL,
    message         text,
    author_id       bigint REFERENCES commit_authors (id) ON DELETE SET NULL,
    date_added      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (repository_id, key)
);

CREATE TABLE IF NOT EXISTS commit_file_changes (
    commit_id bigint NOT NULL REFERENCES commits (id) ON DELETE CASCADE,
    filename  text NOT NULL,
    type      text NOT NULL CHECK (type IN ('A', 'M', 'D')),
    PRIMARY KEY (commit_id, filename)
);
-- Schema 4: an id for each change, the key of the commitfiles list.
ALTER TABLE commit_file_changes ADD COLUMN IF NOT EXISTS id bigserial;
CREATE UNIQUE INDEX IF NOT EXISTS commit_file_changes_id_key ON commit_file_changes (id);

CREATE TABLE IF NOT EXISTS release_commits (
    release_id bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    commit_id  bigint NOT NULL REFERENCES commits (id) ON DELETE CASCADE,
    "order"    integer NOT NULL,
    PRIMARY KEY (release_id, commit_id)
);
CREATE INDEX IF NOT EXISTS release_commits_order_idx ON release_commits (release_id, "order");
CREATE INDEX IF NOT EXISTS release_commits_commit_idx ON release_commits (commit_id);

CREATE TABLE IF NOT EXISTS release_head_commits (
    release_id      bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    repository_id   bigint NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
    commit_id       bigint NOT NULL REFERENCES commits (id) ON DELETE CASCADE,
    previous_commit text,
    PRIMARY KEY (release_id, repository_id)
);

ALTER TABLE releases ADD COLUMN IF NOT EXISTS commit_count integer NOT NULL DEFAULT 0;
ALTER TABLE releases ADD COLUMN IF NOT EXISTS last_commit_id bigint
    REFERENCES commits (id) ON DELETE SET NULL;
ALTER TABLE releases ADD COLUMN IF NOT EXISTS authors bigint[] NOT NULL DEFAULT '{}';

-- Schema 4 also: debug information files of a project (sentry-cli debug-files upload,
-- upload-proguard, dart-symbol-map upload): one row per object of an
-- uploaded file, which is a stored file (a list of blobs) like any other.
-- debug_id is Sentry's form (a lowercase GUID, then "-" and the age when
-- not 0); file_format is Sentry's name of the format (elf, macho, pe, pdb,
-- breakpad, sourcebundle, proguard, dartsymbolmap); data holds the
-- object's type and features. The same file and id in a project is stored
-- once.
CREATE TABLE IF NOT EXISTS debug_files (
    id              bigserial PRIMARY KEY,
    project_id      bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    file_id         bigint NOT NULL REFERENCES files (id),
    checksum        text NOT NULL CHECK (checksum ~ '^[0-9a-f]{40}$'),
    debug_id        text NOT NULL CHECK (length(debug_id) BETWEEN 36 AND 64),
    code_id         text CHECK (length(code_id) <= 64),
    object_name     text NOT NULL CHECK (length(object_name) <= 1024),
    cpu_name        text NOT NULL CHECK (length(cpu_name) <= 40),
    file_format     text NOT NULL CHECK (length(file_format) <= 32),
    data            jsonb NOT NULL DEFAULT '{}',
    date_created    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, checksum, debug_id)
);
CREATE INDEX IF NOT EXISTS debug_files_page_idx ON debug_files (project_id, date_created DESC, id DESC);
CREATE INDEX IF NOT EXISTS debug_files_debug_id_idx ON debug_files (project_id, debug_id);
CREATE INDEX IF NOT EXISTS debug_files_file_idx ON debug_files (file_id);

-- The releases a ProGuard mapping was built for, as sentry-cli 2.x's
-- upload-proguard --app-id names them (Sentry's proguard artifact
-- releases). A mapping is known by its UUID, the debug id of its debug
-- file: an association is made only while the project has that mapping,
-- and goes with the last debug file of that UUID.
CREATE TABLE IF NOT EXISTS proguard_artifact_releases (
    id            bigserial PRIMARY KEY,
    project_id    bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    release_name  text NOT NULL CHECK (length(release_name) BETWEEN 1 AND 250),
    proguard_uuid text NOT NULL CHECK (proguard_uuid ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
    date_added    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, proguard_uuid, release_name)
);

-- The deployment this database belongs to, by a random id written once.
-- With an object store, the id is also kept under the store's prefix: a
-- prefix holding another deployment's id is refused, since each one's
-- collector would remove the objects its own database does not name.
CREATE TABLE IF NOT EXISTS deployment (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    id       text NOT NULL
);
INSERT INTO deployment (id) VALUES (gen_random_uuid()::text) ON CONFLICT DO NOTHING;

-- Schema 5: a project's platform (Sentry's name of its SDK platform,
-- "javascript", "python-django"...; NULL when nobody said), set when the
-- project is created or updated through the API; and the page of a
-- repository's commits, newest first (organizations/{org}/repos/{id}/commits/).
ALTER TABLE projects ADD COLUMN IF NOT EXISTS platform text
    CHECK (length(platform) BETWEEN 1 AND 64);
CREATE INDEX IF NOT EXISTS commits_repository_page_idx
    ON commits (repository_id, date_added DESC, id DESC);

-- Still schema 5 (added in place, idempotent): what the symbol routes
-- (debuginfod, symbol server) need of a debug file, read once when it is
-- assembled: the section table of an ELF object, as rows [name, type,
-- flags, offset, size, damaged]; the JSON false when the table is beyond
-- the readers' budget; NULL when it has not been read (rows stored before
-- the column, which errata migrate reads, or another format). And the
-- lookup by code id (a build id) across an organization's projects.
ALTER TABLE debug_files ADD COLUMN IF NOT EXISTS sections jsonb;
-- Likewise the sources of a source bundle, by canonical path: where each
-- lies in the bundle, [offset, compressed size, size, method, CRC-32]
-- (false: beyond the budget; NULL: not read).
ALTER TABLE debug_files ADD COLUMN IF NOT EXISTS sources jsonb;
CREATE INDEX IF NOT EXISTS debug_files_code_id_idx ON debug_files (code_id) WHERE code_id IS NOT NULL;

-- Schema 6: people sign in (docs/accounts.md). A session is kept by the
-- SHA-256 of its id, never the id; state 'mfa' is a sign-in that passed its
-- password and waits for the second factor, 'authenticated' a signed-in one.
-- authenticated_at is the last time its person proved who they are
-- (password, second factor, reauthentication): recent authentication is
-- judged by it. totp_secret_encrypted holds a TOTP secret offered for
-- enrolment, sealed like recovery seeds, until the person confirms it.
CREATE TABLE IF NOT EXISTS sessions (
    id                    bigserial PRIMARY KEY,
    id_hash               bytea NOT NULL UNIQUE CHECK (length(id_hash) = 32),
    user_id               bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client                text NOT NULL CHECK (client IN ('browser', 'app')),
    state                 text NOT NULL CHECK (state IN ('mfa', 'authenticated')),
    created_at            timestamptz NOT NULL DEFAULT now(),
    last_seen_at          timestamptz NOT NULL DEFAULT now(),
    authenticated_at      timestamptz NOT NULL DEFAULT now(),
    expires_at            timestamptz NOT NULL,
    user_agent            text NOT NULL DEFAULT '' CHECK (length(user_agent) <= 512),
    ip                    text NOT NULL DEFAULT '' CHECK (length(ip) <= 64),
    totp_secret_encrypted bytea
);
CREATE INDEX IF NOT EXISTS sessions_user_idx ON sessions (user_id);
CREATE INDEX IF NOT EXISTS sessions_expires_idx ON sessions (expires_at);

-- Throttling: one row per counted event (a failed password, a reset
-- request...) in a bucket named by its rule and subject; replicas share
-- them. Rows older than the longest window are swept.
CREATE TABLE IF NOT EXISTS throttle_events (
    bucket text NOT NULL CHECK (length(bucket) <= 400),
    at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS throttle_events_bucket_idx ON throttle_events (bucket, at);
CREATE INDEX IF NOT EXISTS throttle_events_at_idx ON throttle_events (at);

-- A user's TOTP authenticator: the secret sealed with a key derived from
-- SECRET_KEY and bound to the user, and the last accepted 30 s step: a code
-- of a step not later than it is refused (no replay).
CREATE TABLE IF NOT EXISTS totp_authenticators (
    user_id          bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret_encrypted bytea NOT NULL,
    last_step        bigint NOT NULL,
    date_created     timestamptz NOT NULL DEFAULT now(),
    last_used_at     timestamptz
);
ALTER TABLE recovery_codes ADD COLUMN IF NOT EXISTS last_used_at timestamptz;

-- An API token may expire; one made by a person through the API is named
-- by them (label) and remembers its last four characters.
ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS expires_at timestamptz;
ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS last_characters text NOT NULL DEFAULT ''
    CHECK (length(last_characters) <= 4);

-- A throttle event is known by its id: an attempt that turns out to be no
-- failure (the right password) takes its own event back, and only it.
ALTER TABLE throttle_events ADD COLUMN IF NOT EXISTS id bigserial PRIMARY KEY;

-- Schema 7: members, invitations and teams (docs/members.md). A
-- membership is a person's (user_id) or, while its invitation waits, an
-- address's (user_id NULL, email set): Sentry's pending member, whose id
-- stays when the invitation is accepted. The invitation's token is kept by
-- its SHA-256 (by which it is found and spent), single-use (cleared when
-- accepted), until invite_expires_at.
ALTER TABLE memberships ALTER COLUMN user_id DROP NOT NULL;
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS email text CHECK (length(email) BETWEEN 3 AND 254);
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS invite_token_hash bytea UNIQUE
    CHECK (length(invite_token_hash) = 32);
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS invite_expires_at timestamptz;
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS inviter_id bigint REFERENCES users (id) ON DELETE SET NULL;
-- The invitation's token itself, sealed like recovery seeds under a key
-- derived from SECRET_KEY and bound to the membership id, so that owners
-- and managers can be shown the link again; cleared with the hash.
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS invite_token_sealed bytea;
CREATE UNIQUE INDEX IF NOT EXISTS memberships_pending_email_key
    ON memberships (organization_id, lower(email)) WHERE user_id IS NULL;
-- Sentry's require2FA: members without TOTP are refused the organization's
-- routes until they enrol.
ALTER TABLE organizations ADD COLUMN IF NOT EXISTS require_2fa boolean NOT NULL DEFAULT false;

-- Teams group an organization's members (with a team role: Sentry's
-- contributor or admin, NULL for the default) and its projects.
CREATE TABLE IF NOT EXISTS teams (
    id              bigserial PRIMARY KEY,
    organization_id bigint NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    slug            text NOT NULL CHECK (length(slug) BETWEEN 1 AND 50),
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    date_created    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, slug)
);
CREATE TABLE IF NOT EXISTS team_members (
    team_id       bigint NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    membership_id bigint NOT NULL REFERENCES memberships (id) ON DELETE CASCADE,
    role          text CHECK (role IN ('contributor', 'admin')),
    date_created  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, membership_id)
);
CREATE INDEX IF NOT EXISTS team_members_membership_idx ON team_members (membership_id);
CREATE TABLE IF NOT EXISTS project_teams (
    project_id   bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    team_id      bigint NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    date_created timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, team_id)
);
CREATE INDEX IF NOT EXISTS project_teams_team_idx ON project_teams (team_id);

-- Version 1: the first schema; 2: blobs, files as blob lists, indexed
-- bundles; 3: repositories and commits; 4: ids of commit file changes,
-- debug files, proguard artifact releases; 5: the deployment's id, project
-- platforms, the commit page of a repository; 6: sessions, throttling, TOTP,
-- token expiry; 7: members, invitations, teams.
INSERT INTO errata_schema (version) VALUES (1), (2), (3), (4), (5), (6), (7) ON CONFLICT DO NOTHING;
