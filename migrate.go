package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"

	"errata/store"
	"errata/worker/ingest"
)

//go:embed schema.sql
var schema string

// runMigrate is `errata migrate`: it applies schema.sql to DATABASE_URL,
// then reads what the symbol routes need of the debug files stored before
// errata read it at assembly. Any number of processes may run it at once,
// on a database that other processes serve (docs/deployment.md): the
// store serializes them (store/migrate.go).
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(cmdMigrate, args, getenv, stderr)
	if err != nil {
		return err
	}
	// The backfill holds the migration lock on one connection while it
	// reads and writes on others.
	if cfg.maxConns == 1 {
		cfg.maxConns = 2
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx, schema); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// What the symbol routes need of the debug files stored before errata
	// read it at assembly (ELF section tables, source bundle indexes):
	// read now, in batches, resumably.
	n, err := st.BackfillSymbolMetadata(ctx, ingest.SectionTable, ingest.SourceIndex)
	if err != nil {
		return fmt.Errorf("migrate: reading the stored debug files for the symbol routes: %w", err)
	}
	if n > 0 {
		fmt.Fprintln(stdout, "read", n, "stored debug files for the symbol routes")
	}
	fmt.Fprintln(stdout, "migrated to schema version", store.SchemaVersion)
	return nil
}
