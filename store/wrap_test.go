package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestWrapMapsEveryOutageToErrUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	missingSocket, err := pgconn.Connect(context.Background(), "host=/nonexistent/errata-socket-dir user=postgres sslmode=disable connect_timeout=1")
	if err == nil {
		missingSocket.Close(context.Background())
		t.Fatal("connecting to a missing socket succeeded")
	}
	tests := []struct {
		name string
		err  error
		want error // nil: the error stays as it is
	}{
		{"a missing socket is unavailable", err, ErrUnavailable},
		{"a refused connection is unavailable", refused, ErrUnavailable},
		{"end of file is unavailable", fmt.Errorf("receive message failed: %w", io.EOF), ErrUnavailable},
		{"an unexpected end of file is unavailable", fmt.Errorf("receive message failed: %w", io.ErrUnexpectedEOF), ErrUnavailable},
		{"a closed connection is unavailable", fmt.Errorf("query: %w", pgconn.ErrConnClosed), ErrUnavailable},
		{"a reset connection is unavailable", fmt.Errorf("write: %w", syscall.ECONNRESET), ErrUnavailable},
		{"a broken pipe is unavailable", fmt.Errorf("write: %w", syscall.EPIPE), ErrUnavailable},
		{"a deadline is unavailable", context.DeadlineExceeded, ErrUnavailable},
		{"admin shutdown is unavailable", &pgconn.PgError{Code: "57P01"}, ErrUnavailable},
		{"crash shutdown is unavailable", &pgconn.PgError{Code: "57P02"}, ErrUnavailable},
		{"cannot connect now is unavailable", &pgconn.PgError{Code: "57P03"}, ErrUnavailable},
		{"a connection failure is unavailable", &pgconn.PgError{Code: "08006"}, ErrUnavailable},
		{"too many connections is unavailable", &pgconn.PgError{Code: "53300"}, ErrUnavailable},
		{"a statement timeout is unavailable", &pgconn.PgError{Code: "57014"}, ErrUnavailable},
		{"a unique violation is a conflict", &pgconn.PgError{Code: "23505"}, ErrConflict},
		{"no rows is not found", pgx.ErrNoRows, ErrNotFound},
		{"a syntax error stays itself", &pgconn.PgError{Code: "42601"}, nil},
		{"an error without a code stays itself", &pgconn.PgError{}, nil},
		{"a plain error stays itself", errors.New("boom"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := wrap(tc.err)
			if !errors.Is(got, tc.err) {
				t.Errorf("wrap(%v) = %v, which lost the cause", tc.err, got)
			}
			for _, kind := range []error{ErrUnavailable, ErrConflict, ErrNotFound} {
				if errors.Is(got, kind) != (kind == tc.want) {
					t.Errorf("wrap(%v) = %v: errors.Is %v is %v, want %v", tc.err, got, kind, !(kind == tc.want), kind == tc.want)
				}
			}
		})
	}
}

// TestPoolRecoversFromATerminatedConnection kills the backend of the pool's
// only connection, as a PostgreSQL restart does: the next call fails with
// ErrUnavailable, and the one after succeeds on a new connection.
func TestPoolRecoversFromATerminatedConnection(t *testing.T) {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Fatal("DATABASE_URL is not set: run the tests with ./dev.sh test, which starts PostgreSQL")
	}
	ctx := context.Background()
	st, err := Open(ctx, Config{URL: url, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)

	for round := 1; round <= 2; round++ {
		var pid int
		if err := st.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1, 5000)`, pid); err != nil {
			t.Fatal(err)
		}
		// A context far longer than any retry: the failure must come
		// from the store, not from the context running out.
		pingCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err := st.Ping(pingCtx)
		cancel()
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: Ping on a terminated connection = %v, want ErrUnavailable", round, err)
		}
		if err := st.Ping(ctx); err != nil {
			t.Fatalf("round %d: Ping after the failure = %v, want a new connection", round, err)
		}
	}
}
