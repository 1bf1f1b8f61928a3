package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"errata/authn"
	"errata/store"
	"errata/store/s3"
)

// adminEnv is what the commands of `errata admin` read and write besides
// the store.
type adminEnv struct {
	ctx       context.Context
	getenv    func(string) string
	stdout    io.Writer
	blobStore *string // the --blob-store flag: where the bytes of uploads live now
}

// adminRun runs a command of `errata admin` on the store.
type adminRun func(st *store.Store) error

// adminCommand declares a command's flags on fs and returns what runs it
// and the flags it requires.
type adminCommand func(fs *flag.FlagSet, env adminEnv) (run adminRun, required []string)

// adminCommands are the commands of `errata admin`, in the order its usage
// names them.
func adminCommands() []struct {
	name string
	cmd  adminCommand
} {
	return []struct {
		name string
		cmd  adminCommand
	}{
		{"create-user", adminCreateUser},
		{"create-org", adminCreateOrg},
		{"create-project", adminCreateProject},
		{"add-member", adminAddMember},
		{"create-environment", adminCreateEnvironment},
		{"create-token", adminCreateToken},
		{"set-password", adminSetPassword},
		{"reset-2fa", adminResetTwoFactor},
		{"end-sessions", adminEndSessions},
		{"storage", adminStorage},
		{"collect", adminCollect},
		{"migrate-blobs", adminMigrateBlobs},
	}
}

// runAdmin runs the bootstrap and maintenance commands of the admin CLI:
// it parses the command's flags, opens the migrated store and runs it.
func runAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	commands := adminCommands()
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	if len(args) == 0 {
		return fmt.Errorf("admin: want %s or %s", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	}
	sub, args := args[0], args[1:]
	i := slices.Index(names, sub)
	if i < 0 {
		return fmt.Errorf("admin: unknown command %q", sub)
	}
	fs := flag.NewFlagSet("admin "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	blobStore := fs.String("blob-store", cmp.Or(getenv("BLOB_STORE"), "postgres"), "where the bytes of uploads live: postgres or s3://BUCKET[/PREFIX] (BLOB_STORE)")
	run, required := commands[i].cmd(fs, adminEnv{ctx: ctx, getenv: getenv, stdout: stdout, blobStore: blobStore})
	dbURL := fs.String("database-url", getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin %s: unexpected argument %q", sub, fs.Arg(0))
	}
	for _, name := range required {
		if fs.Lookup(name).Value.String() == "" {
			return fmt.Errorf("admin %s: --%s is required", sub, name)
		}
	}
	if *dbURL == "" {
		return errors.New("DATABASE_URL is not set")
	}
	blobs, prefix, err := openBlobStore(*blobStore, getenv)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, store.Config{URL: *dbURL, Blobs: blobs, BlobPrefix: prefix})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CheckMigrated(ctx); err != nil {
		if errors.Is(err, store.ErrNotMigrated) {
			return errors.New("the database is not migrated: run `errata migrate` first")
		}
		return err
	}
	if err := run(st); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			what, _, _ := strings.Cut(err.Error(), ": "+store.ErrNotFound.Error())
			return fmt.Errorf("admin %s: %s does not exist", sub, what)
		}
		return fmt.Errorf("admin %s: %w", sub, err)
	}
	return nil
}

// adminCreateUser is `admin create-user --email E [--name N]`; it prints
// the user's id.
func adminCreateUser(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	email, name := fs.String("email", "", "email address"), fs.String("name", "", "display name")
	return func(st *store.Store) error {
		id, err := st.CreateUser(env.ctx, *email, *name)
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("a user with email %q already exists", *email)
		}
		if err == nil {
			fmt.Fprintln(env.stdout, id)
		}
		return err
	}, []string{"email"}
}

// adminCreateOrg is `admin create-org --slug S [--name N] --owner E`; it
// prints the organization's id.
func adminCreateOrg(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	slug, name := fs.String("slug", "", "organization slug"), fs.String("name", "", "display name")
	owner := fs.String("owner", "", "owner's email")
	return func(st *store.Store) error {
		id, err := st.CreateOrganization(env.ctx, *slug, cmp.Or(*name, *slug), *owner)
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("an organization with slug %q already exists", *slug)
		}
		if err == nil {
			fmt.Fprintln(env.stdout, id)
		}
		return err
	}, []string{"slug", "owner"}
}

// adminCreateProject is `admin create-project --org S --slug P [--name N]
// [--platform X]`, the store call of the API's project create made as the
// operator; it prints the project's id.
func adminCreateProject(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	org, slug, name := fs.String("org", "", "organization slug"), fs.String("slug", "", "project slug"), fs.String("name", "", "display name")
	platform := fs.String("platform", "", "the project's platform (javascript, python, ...)")
	return func(st *store.Store) error {
		np := store.NewProject{Slug: *slug, Name: cmp.Or(*name, *slug)}
		if *platform != "" {
			np.Platform = platform
		}
		p, err := st.CreateProject(env.ctx, store.Operator, *org, np)
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("organization %q already has a project %q", *org, *slug)
		}
		if err == nil {
			fmt.Fprintln(env.stdout, p.ID)
		}
		return err
	}, []string{"org", "slug"}
}

// adminAddMember is `admin add-member --org S --email E [--role R]`.
func adminAddMember(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	org, email := fs.String("org", "", "organization slug"), fs.String("email", "", "user's email")
	role := fs.String("role", "member", "member, admin, manager or owner")
	return func(st *store.Store) error {
		if !slices.Contains(store.Roles, *role) {
			return fmt.Errorf("unknown role %q (want one of %s)", *role, strings.Join(store.Roles, ", "))
		}
		return st.AddMember(env.ctx, *org, *email, *role)
	}, []string{"org", "email"}
}

// adminCreateEnvironment is `admin create-environment --org S --name N
// [--project P] [--hidden]`; it prints the environment's id.
func adminCreateEnvironment(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	org, name := fs.String("org", "", "organization slug"), fs.String("name", "", "environment name")
	project := fs.String("project", "", "project to link it to")
	hidden := fs.Bool("hidden", false, "hide it in the project")
	return func(st *store.Store) error {
		id, err := st.CreateEnvironment(env.ctx, *org, *name, *project, *hidden)
		if err == nil {
			fmt.Fprintln(env.stdout, id)
		}
		return err
	}, []string{"org", "name"}
}

// adminCreateToken is `admin create-token --email E --scopes s1,s2
// [--label L] [--expires WHEN]`; it prints only the token. WHEN is a
// duration from now (720h) or an RFC 3339 time, in the future.
func adminCreateToken(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	email, scopeList := fs.String("email", "", "user's email"), fs.String("scopes", "", "comma-separated scope names")
	label := fs.String("label", "", "what the token is for")
	expiresFlag := fs.String("expires", "", "when the token stops working: a duration from now (720h) or an RFC 3339 time; never when empty")
	return func(st *store.Store) error {
		scopes := strings.Split(*scopeList, ",")
		if err := authn.CheckScopes(scopes); err != nil {
			return err
		}
		expires, err := tokenExpiry(*expiresFlag, time.Now())
		if err != nil {
			return err
		}
		token, hash := authn.NewToken()
		in := store.TokenInput{Hash: hash, Scopes: scopes, Name: *label, ExpiresAt: expires,
			LastCharacters: token[len(token)-4:]}
		if _, err := st.CreateTokenByEmail(env.ctx, *email, in); err != nil {
			return err
		}
		fmt.Fprintln(env.stdout, token)
		return nil
	}, []string{"email", "scopes"}
}

// tokenExpiry reads create-token's --expires at now: nil when empty.
func tokenExpiry(s string, now time.Time) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if d, derr := time.ParseDuration(s); derr == nil {
		t, err = now.Add(d), nil
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("--expires %q: want a duration (720h) or an RFC 3339 time", s)
	case !t.After(now):
		return nil, fmt.Errorf("--expires %q: the time must be in the future", s)
	}
	return &t, nil
}

// adminSetPassword is `admin set-password --email E`: the password is the
// first line of standard input, without its newline, and must pass the
// rules of a person's new password (authn.CheckNewPassword). It ends every
// session of the user; API tokens keep working.
func adminSetPassword(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	email := fs.String("email", "", "user's email")
	return func(st *store.Store) error {
		id, _, err := st.PasswordHash(env.ctx, *email)
		if err != nil {
			return fmt.Errorf("user %q: %w", *email, err)
		}
		password, err := readPasswordLine(os.Stdin)
		if err != nil {
			return err
		}
		if err := authn.CheckNewPassword(password, *email); err != nil {
			return fmt.Errorf("password refused: %w", err)
		}
		hash, err := authn.HashPassword(password)
		if err != nil {
			return err
		}
		if err := st.SetPassword(env.ctx, id, hash, 0); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "set the password of %s and ended its sessions\n", *email)
		return nil
	}, []string{"email"}
}

// readPasswordLine reads the first line of r without its "\n" or "\r\n"
// (a last line without a newline is read too). It reads at most what the
// longest password allowed can take, four bytes a character, and refuses
// an empty or longer line.
func readPasswordLine(r io.Reader) (string, error) {
	const most = 4*authn.PasswordMaxLength + 2
	line, err := bufio.NewReaderSize(io.LimitReader(r, most), most).ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || err == io.EOF && len(line) == most:
		return "", fmt.Errorf("the password on standard input is longer than %d characters", authn.PasswordMaxLength)
	case err != nil && err != io.EOF:
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	password := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
	if password == "" {
		return "", errors.New("no password: give it as one line of standard input")
	}
	return password, nil
}

// adminStorage is `admin storage`: what each organization stores.
func adminStorage(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	return func(st *store.Store) error {
		r, err := st.Storage(env.ctx)
		if err != nil {
			return err
		}
		printStorage(env.stdout, r)
		return nil
	}, nil
}

// adminCollect is `admin collect [--grace D]`: one run of the collector.
func adminCollect(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	grace := fs.Duration("grace", 24*time.Hour, "keep what nothing uses for this long")
	return func(st *store.Store) error {
		c, err := st.Collect(env.ctx, *grace, 0)
		if err == nil {
			fmt.Fprintf(env.stdout, "removed %d files, %d blob ownerships, %d blobs (%d bytes)", c.Files, c.Owners, c.Blobs, c.Bytes)
			if c.Orphans > 0 {
				fmt.Fprintf(env.stdout, ", %d objects without a blob row", c.Orphans)
			}
			fmt.Fprintln(env.stdout)
		}
		return err
	}, nil
}

// adminMigrateBlobs is `admin migrate-blobs --to DEST [--remove-source]`:
// it copies the bytes of every blob from BLOB_STORE to DEST.
func adminMigrateBlobs(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	to := fs.String("to", "", "where the bytes of blobs go: postgres or s3://BUCKET[/PREFIX] (with the S3_* variables)")
	removeSource := fs.Bool("remove-source", false, "remove each blob's bytes from BLOB_STORE once its copy is checked")
	return func(st *store.Store) error {
		same, err := sameBlobStore(*to, *env.blobStore, env.getenv)
		if err != nil {
			return err
		}
		if same {
			return fmt.Errorf("the blobs are in %s already (BLOB_STORE names where they are now)", *to)
		}
		dst, prefix, err := openBlobStore(*to, env.getenv)
		if err != nil {
			return err
		}
		if c, ok := dst.(*s3.Client); ok {
			if err := c.Check(env.ctx); err != nil {
				return fmt.Errorf("%s: %w", *to, err)
			}
		}
		r, err := st.MigrateBlobs(env.ctx, dst, prefix, *removeSource, func(_ string, r store.MigrateStats) {
			if n := r.Copied + r.Present; n > 0 && n%1000 == 0 {
				fmt.Fprintf(env.stdout, "%d blobs done\n", n)
			}
		})
		fmt.Fprintf(env.stdout, "copied %d blobs (%d bytes) to %s, each checked; %d were there already; %d removed from %s\n",
			r.Copied, r.Bytes, *to, r.Present, r.Removed, *env.blobStore)
		if err != nil {
			return fmt.Errorf("%w (run it again to resume)", err)
		}
		return nil
	}, []string{"to"}
}

// adminResetTwoFactor is `admin reset-2fa --email E`, for a person who
// lost their second factor: it removes their TOTP authenticator and
// recovery codes, ends their sessions and mails them a notice. Their next
// sign-in asks for the password alone.
func adminResetTwoFactor(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	email := fs.String("email", "", "user's email")
	return func(st *store.Store) error {
		if err := st.ResetSecondFactors(env.ctx, *email); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "removed the second factors of %s and ended their sessions\n", *email)
		return nil
	}, []string{"email"}
}

// adminEndSessions is `admin end-sessions --email E`: it signs the user out
// everywhere at once. Their API tokens keep working.
func adminEndSessions(fs *flag.FlagSet, env adminEnv) (adminRun, []string) {
	email := fs.String("email", "", "user's email")
	return func(st *store.Store) error {
		n, err := st.EndSessionsByEmail(env.ctx, *email)
		if err == nil {
			fmt.Fprintf(env.stdout, "ended %d sessions of %s\n", n, *email)
		}
		return err
	}, []string{"email"}
}

// printStorage writes the storage report r as plain tables.
func printStorage(w io.Writer, r store.StorageReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "organization\tkind\tfiles\tbytes as uploaded\t")
	for _, u := range r.Uses {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t\n", u.Org, u.Kind, u.Files, u.Bytes)
	}
	fmt.Fprintln(tw, "\t\t\t\t")
	fmt.Fprintln(tw, "organization\tblobs owned\tbytes (each blob once)\t\t")
	for _, o := range r.Owners {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\t\n", o.Org, o.Blobs, o.Bytes)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nblobs stored: %d (%d bytes); awaiting collection: %d blobs no organization owns (%d bytes), %d ownerships no file uses\n",
		r.Blobs, r.Bytes, r.UnownedBlobs, r.UnownedBytes, r.UnusedOwners)
	fmt.Fprint(w, "on disk:")
	for _, t := range slices.Sorted(maps.Keys(r.Tables)) {
		fmt.Fprintf(w, " %s %d", t, r.Tables[t])
	}
	fmt.Fprintln(w)
}
