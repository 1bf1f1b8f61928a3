package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"errata/authn"
	"errata/store"
)

// `errata dev` is `errata serve` for trying errata on one machine: it
// takes a SECRET_KEY of its own when none is set and needs no PUBLIC_URL
// (config.go), migrates the database, creates demo data with a token
// (seedDemo), and prints the mail it would send (runServe).

// devSecretKey is the SECRET_KEY of `errata dev` when none is set.
const devSecretKey = "errata-dev-secret-not-for-production"

// seedDemo creates (or finds again) the demo data of `errata dev` and
// prints a fresh token and a fresh password of the demo user, with curl
// lines to try them.
func seedDemo(ctx context.Context, st *store.Store, addr net.Addr, cfg *config, stdout io.Writer) error {
	const email, org, project = "demo@errata.localhost", "demo", "demo-app"
	if _, err := st.CreateUser(ctx, email, "Demo User"); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("demo user: %w", err)
	}
	if _, err := st.CreateOrganization(ctx, org, "Demo", email); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("demo organization: %w", err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, org, store.NewProject{Slug: project, Name: "Demo App"}); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("demo project: %w", err)
	}
	if _, err := st.CreateEnvironment(ctx, org, "production", project, false); err != nil {
		return fmt.Errorf("demo environment: %w", err)
	}
	token, hash := authn.NewToken()
	if _, err := st.CreateToken(ctx, email, hash, authn.Scopes, "dev"); err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	password, err := demoPassword(ctx, st, email)
	if err != nil {
		return err
	}
	port := addr.(*net.TCPAddr).Port
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if cfg.publicURL == "" {
		cfg.publicURL = base
	}
	fmt.Fprintf(stdout, "errata is serving on %s (organization %q, project %q, user %s)\n", base, org, project, email)
	fmt.Fprintf(stdout, "token: %s\n", token)
	fmt.Fprintf(stdout, "try:   curl -H 'Authorization: Bearer %s' %s/api/0/\n", token, base)
	fmt.Fprintf(stdout, "password of %s: %s\n", email, password)
	fmt.Fprintf(stdout, "browser: open %s/ and sign in as %s with that password\n", base, email)
	fmt.Fprintf(stdout, "sign in: curl -H 'Content-Type: application/json' -d '{\"email\": \"%s\", \"password\": \"%s\"}' %s/_allauth/app/v1/auth/login\n", email, password, base)
	// gdb, valgrind, debuginfod-find and llvm-symbolizer read this
	// variable; libcurl sends the token of the URL as Basic.
	fmt.Fprintf(stdout, "debuginfod: export DEBUGINFOD_URLS=%s\n", strings.Replace(base, "://", "://errata:"+token+"@", 1)+"/debuginfod/"+org)
	return nil
}

// demoPassword gives the demo user a fresh random password and returns it.
func demoPassword(ctx context.Context, st *store.Store, email string) (string, error) {
	b := make([]byte, 12)
	rand.Read(b)
	password := base64.RawURLEncoding.EncodeToString(b)
	hash, err := authn.HashPassword(password)
	if err != nil {
		return "", fmt.Errorf("demo password: %w", err)
	}
	id, _, err := st.PasswordHash(ctx, email)
	if err != nil {
		return "", fmt.Errorf("demo user: %w", err)
	}
	if err := st.SetPassword(ctx, id, hash, 0); err != nil {
		return "", fmt.Errorf("demo password: %w", err)
	}
	return password, nil
}
