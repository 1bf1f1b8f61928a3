-- seed.sql fills a freshly migrated database with the data set of the
-- benchmarks (./dev.sh bench): the organization "bench", owned by
-- bench@errata.localhost, with 20 projects, 200 environments, 50 000
-- releases and 2 000 release files, beside a smaller organization "other"
-- so that every query has rows to leave out. Everything goes through the
-- real schema: releases are linked to projects, environments to projects,
-- deploys to environments, release files to stored files and their parts.
--
-- Release n (1 to 50 000) belongs to project ((n - 1) % 20) + 1, and every
-- fifth also to the next project; its data records n as buildNumber. Two
-- releases share each creation minute, so that pages meet ties in their
-- sort key. Every third release has a deploy, every thirtieth two. The 20
-- newest releases have 100 files each.

INSERT INTO users (email, name) VALUES ('bench@errata.localhost', 'Bench User');
INSERT INTO users (email, name)
SELECT format('user%s@example.com', i), format('User %s', i) FROM generate_series(1, 99) i;

INSERT INTO organizations (slug, name, date_created) VALUES
    ('bench', 'Bench', '2024-01-01T00:00:00Z'),
    ('other', 'Other', '2024-01-01T00:00:00Z');

-- The bench user owns bench; the other users are members of one
-- organization or the other.
INSERT INTO memberships (organization_id, user_id, role)
SELECT o.id, u.id, CASE WHEN u.email = 'bench@errata.localhost' THEN 'owner' ELSE 'member' END
FROM users u
JOIN organizations o ON o.slug = CASE
    WHEN u.email = 'bench@errata.localhost' OR u.id % 2 = 1 THEN 'bench' ELSE 'other' END;

INSERT INTO projects (organization_id, slug, name, date_created)
SELECT o.id, format('project-%s', lpad(p::text, 2, '0')), format('Project %s', p),
    timestamptz '2024-01-01T00:00:00Z' + p * interval '1 day'
FROM organizations o, generate_series(1, 20) p
WHERE o.slug = 'bench' OR p <= 5;

-- Environment e belongs to project ((e - 1) % 20) + 1; every fourth is also
-- used by the next project, and every tenth link is hidden.
INSERT INTO environments (organization_id, name, date_created)
SELECT o.id, format('env-%s', lpad(e::text, 3, '0')),
    timestamptz '2024-02-01T00:00:00Z' + e * interval '1 hour'
FROM organizations o, generate_series(1, 200) e
WHERE o.slug = 'bench' OR e <= 20;

INSERT INTO environment_projects (environment_id, project_id, is_hidden, date_created)
SELECT env.id, p.id, l.e % 10 = 0, env.date_created
FROM (
    SELECT e, ((e - 1) % 20) + 1 AS p FROM generate_series(1, 200) e
    UNION ALL
    SELECT e, (e % 20) + 1 FROM generate_series(4, 200, 4) e
) l
JOIN organizations o ON true
JOIN environments env ON env.organization_id = o.id AND env.name = format('env-%s', lpad(l.e::text, 3, '0'))
JOIN projects p ON p.organization_id = o.id AND p.slug = format('project-%s', lpad(l.p::text, 2, '0'));

INSERT INTO releases (organization_id, version, ref, url, data, date_created, date_released)
SELECT o.id,
    format('project-%s@1.%s.%s+%s', lpad((((n - 1) % 20) + 1)::text, 2, '0'), n / 1000, n % 1000,
        left(md5(o.slug || n), 7)),
    left(encode(sha256((o.slug || n)::bytea), 'hex'), 40),
    'https://git.example.com/' || o.slug || '/commit/' || left(encode(sha256((o.slug || n)::bytea), 'hex'), 40),
    jsonb_build_object('buildNumber', n),
    timestamptz '2024-03-01T00:00:00Z' + (n / 2) * interval '1 minute',
    CASE WHEN n % 7 <> 0 THEN timestamptz '2024-03-01T00:05:00Z' + (n / 2) * interval '1 minute' END
FROM organizations o, generate_series(1, 50000) n
WHERE o.slug = 'bench' OR n <= 1000;

INSERT INTO release_projects (release_id, project_id)
SELECT r.id, p.id
FROM (
    SELECT r.id, r.organization_id, l.p
    FROM releases r,
        LATERAL (SELECT (r.data ->> 'buildNumber')::int AS n) b,
        LATERAL (SELECT ((b.n - 1) % 20) + 1 AS p
                 UNION ALL
                 SELECT (b.n % 20) + 1 WHERE b.n % 5 = 0) l
) r
JOIN organizations o ON o.id = r.organization_id
JOIN projects p ON p.organization_id = o.id
    AND p.slug = format('project-%s', lpad((CASE WHEN o.slug = 'bench' THEN r.p ELSE ((r.p - 1) % 5) + 1 END)::text, 2, '0'));

-- A deploy goes to an environment of the release's first project.
INSERT INTO deploys (release_id, environment_id, name, url, date_started, date_finished, date_created)
SELECT r.id, env.id, format('deploy %s.%s', b.n, d.k), NULL,
    r.date_created + d.k * interval '10 minutes',
    r.date_created + d.k * interval '10 minutes' + interval '2 minutes',
    r.date_created + d.k * interval '10 minutes' + interval '2 minutes'
FROM releases r
JOIN organizations o ON o.id = r.organization_id AND o.slug = 'bench'
CROSS JOIN LATERAL (SELECT (r.data ->> 'buildNumber')::int AS n) b
CROSS JOIN LATERAL (SELECT 1 AS k WHERE b.n % 3 = 0 UNION ALL SELECT 2 WHERE b.n % 30 = 0) d
JOIN environments env ON env.organization_id = o.id
    AND env.name = format('env-%s', lpad((((b.n - 1) % 20) + 1 + 20 * ((b.n / 20 + d.k) % 10))::text, 3, '0'));

-- 100 files in each of the 20 newest releases of bench: a minified script
-- and its source map, 1 KiB each, stored as one part.
CREATE TEMPORARY TABLE seed_files AS
SELECT r.id AS release_id, r.organization_id, r.date_created, b.n, k,
    left(encode(sha256(format('file %s %s', b.n, k)::bytea), 'hex'), 40) AS sha1
FROM releases r
JOIN organizations o ON o.id = r.organization_id AND o.slug = 'bench'
CROSS JOIN LATERAL (SELECT (r.data ->> 'buildNumber')::int AS n) b
CROSS JOIN generate_series(1, 100) k
WHERE b.n > 49980;

INSERT INTO files (organization_id, size, sha1, date_created)
SELECT organization_id, 1024, sha1, date_created + k * interval '1 second' FROM seed_files;

-- Each file is one blob of 1 KiB. PostgreSQL has no SHA-1 function, so the
-- seed names each blob by its file's made-up checksum, not by the SHA-1 of
-- its bytes: the read-path benchmarks list files and never download them.
INSERT INTO blob_data (key, data)
SELECT sha1, decode(repeat(left(sha1, 32), 64), 'hex') FROM seed_files;
INSERT INTO blobs (sha1, size) SELECT sha1, 1024 FROM seed_files;
INSERT INTO blob_owners (organization_id, sha1) SELECT organization_id, sha1 FROM seed_files;
INSERT INTO file_blobs (file_id, position, organization_id, sha1, start)
SELECT f.id, 0, f.organization_id, f.sha1, 0 FROM files f JOIN seed_files s USING (sha1);

INSERT INTO release_files (release_id, file_id, name, dist, headers, date_created, size, sha1)
SELECT s.release_id, f.id,
    format('~/static/js/chunk-%s.min.js%s', (s.k + 1) / 2, CASE WHEN s.k % 2 = 0 THEN '.map' ELSE '' END),
    NULL,
    CASE WHEN s.k % 2 = 1
        THEN jsonb_build_object('Content-Type', 'application/javascript',
            'Sourcemap', format('chunk-%s.min.js.map', (s.k + 1) / 2))
        ELSE jsonb_build_object('Content-Type', 'application/json') END,
    s.date_created + s.k * interval '1 second', 1024, s.sha1
FROM seed_files s JOIN files f USING (sha1);

DROP TABLE seed_files;
