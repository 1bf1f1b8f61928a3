package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
	"errata/store/storetest"
)

// TestAJobThatEndsItsWorkerEveryTimeIsGivenUp: a job whose lease ran out in
// its last attempt (its worker died each time) ends in error instead of
// being claimed again forever; one with attempts left is claimed again.
func TestAJobThatEndsItsWorkerEveryTimeIsGivenUp(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	storetest.Exec(t, db, `
		INSERT INTO jobs (kind, state, attempts, max_attempts, locked_by, locked_until)
		VALUES ('assemble', 'running', 3, 3, 'dead', now() - interval '1 second'),
		       ('assemble', 'running', 1, 3, 'dead', now() - interval '1 second')`)
	j, err := st.ClaimJob(ctx, "alive", []string{"assemble"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if j.Attempts != 2 {
		t.Errorf("claimed the job of attempt %d, want the one with attempts left (now 2)", j.Attempts)
	}
	if _, err := st.ClaimJob(ctx, "alive", []string{"assemble"}, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a second claim: %v, want ErrNotFound", err)
	}
	var state, lastError string
	row := storetest.Pool(t, db).QueryRow(ctx, `SELECT state, last_error FROM jobs WHERE attempts = 3`)
	if err := row.Scan(&state, &lastError); err != nil {
		t.Fatal(err)
	}
	if state != "error" || !strings.Contains(lastError, "given up") {
		t.Errorf("the job out of attempts is %s (%q), want error", state, lastError)
	}
}

// floodDatabase makes organizations 1 (flood) and 2 (other) and queues n
// assemble jobs of the flood, all older than anything queued after.
func floodDatabase(t *testing.T, n int) (*store.Store, string) {
	t.Helper()
	st, db := storetest.NewWithURL(t)
	storetest.Exec(t, db, `
		INSERT INTO organizations (id, slug, name) VALUES (1, 'flood', 'Flood'), (2, 'other', 'Other'), (3, 'third', 'Third')`)
	storetest.Exec(t, db, `
		INSERT INTO jobs (organization_id, kind, run_at)
		SELECT 1, 'assemble', now() - interval '1 hour' + i * interval '1 millisecond' FROM generate_series(1, $1) AS i`, n)
	return st, db
}

// claimOrgs claims n jobs one after the other, finishing each before the
// next claim as a single worker does, and returns the organization of each
// (0: none).
func claimOrgs(t *testing.T, st *store.Store, db string, n int, kinds ...string) []int64 {
	t.Helper()
	ctx := context.Background()
	var orgs []int64
	for range n {
		j, err := st.ClaimJob(ctx, "w", kinds, time.Minute)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := st.FinishJob(ctx, j.ID, "w", nil, nil); err != nil {
			t.Fatal(err)
		}
		var org *int64
		if err := storetest.Pool(t, db).QueryRow(ctx, `SELECT organization_id FROM jobs WHERE id = $1`, j.ID).Scan(&org); err != nil {
			t.Fatal(err)
		}
		if org == nil {
			orgs = append(orgs, 0)
		} else {
			orgs = append(orgs, *org)
		}
	}
	return orgs
}

// TestAnOrganizationsBacklogDoesNotDelayAnothersFirstJob: with thousands of
// an organization's jobs queued before it, another organization's job is
// claimed next but one: organizations take turns, whatever the age of the
// backlog. The order of the claims is asserted, not their time.
func TestAnOrganizationsBacklogDoesNotDelayAnothersFirstJob(t *testing.T) {
	t.Run("one worker, each job finished before the next claim", func(t *testing.T) {
		st, db := floodDatabase(t, 5000)
		storetest.Exec(t, db, `INSERT INTO jobs (organization_id, kind) VALUES (2, 'assemble')`)
		storetest.Exec(t, db, `INSERT INTO jobs (organization_id, kind) VALUES (3, 'assemble'), (3, 'assemble')`)
		got := claimOrgs(t, st, db, 8, "assemble")
		// The flood's oldest job, then the organizations never served,
		// oldest first; then turns among those with jobs left.
		want := []int64{1, 2, 3, 1, 3, 1, 1, 1}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("organizations of the claims (-want +got):\n%s", diff)
		}
	})
	t.Run("jobs still running: the organization running fewer goes first", func(t *testing.T) {
		ctx := context.Background()
		st, db := floodDatabase(t, 5000)
		first, err := st.ClaimJob(ctx, "w1", []string{"assemble"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, db, `INSERT INTO jobs (organization_id, kind) VALUES (2, 'assemble')`)
		second, err := st.ClaimJob(ctx, "w2", []string{"assemble"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var orgs [2]int64
		storetest.Pool(t, db).QueryRow(ctx, `SELECT
			(SELECT organization_id FROM jobs WHERE id = $1), (SELECT organization_id FROM jobs WHERE id = $2)`,
			first.ID, second.ID).Scan(&orgs[0], &orgs[1])
		if orgs != [2]int64{1, 2} {
			t.Errorf("the two claims took jobs of organizations %v, want [1 2]", orgs)
		}
	})
}

// TestMailIsClaimedBeforeAFloodOfAssemblies: a job of no organization
// (mail) queued after thousands of an organization's is claimed first, and
// the claim of unowned jobs alone takes it and never an organization's.
func TestMailIsClaimedBeforeAFloodOfAssemblies(t *testing.T) {
	ctx := context.Background()
	st, db := floodDatabase(t, 5000)
	if _, err := st.ClaimUnownedJob(ctx, "w", []string{"assemble", "mail"}, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the unowned claim with only an organization's jobs queued: %v, want ErrNotFound", err)
	}
	if _, err := st.EnqueueJob(ctx, store.MailJobKind, "", store.MailJob{OutboxID: 1}, 3); err != nil {
		t.Fatal(err)
	}
	if got := claimOrgs(t, st, db, 2, "assemble", "mail"); !cmp.Equal(got, []int64{0, 1}) {
		t.Errorf("organizations of the claims: %v, want the mail's (0) first", got)
	}
	if _, err := st.EnqueueJob(ctx, store.MailJobKind, "", store.MailJob{OutboxID: 2}, 3); err != nil {
		t.Fatal(err)
	}
	j, err := st.ClaimUnownedJob(ctx, "w", []string{"assemble", "mail"}, time.Minute)
	if err != nil || j.Kind != store.MailJobKind {
		t.Errorf("the unowned claim: %+v %v, want the mail job", j, err)
	}
}

// TestTwoWorkersNeverClaimTheSameJob: claims racing over one
// organization's queue take distinct jobs, all of them.
func TestTwoWorkersNeverClaimTheSameJob(t *testing.T) {
	st, _ := floodDatabase(t, 200)
	ctx := context.Background()
	ids := make(chan int64, 200)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", w)
			for {
				j, err := st.ClaimJob(ctx, name, []string{"assemble"}, time.Minute)
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				ids <- j.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("job %d claimed twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 200 {
		t.Errorf("%d jobs claimed, want 200", len(seen))
	}
}

// TestAssembliesTakeTheirOrganizationsTurn: an artifact bundle or release
// assembly request waits for its organization's turn without holding a
// connection, as a debug file assembly does, so that a flood of them never
// takes the pool other organizations need; another organization's request
// does not wait.
func TestAssembliesTakeTheirOrganizationsTurn(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	storetest.Exec(t, db, `
		INSERT INTO users (id, email, name) VALUES (1, 'dev@example.com', 'Dev');
		INSERT INTO organizations (id, slug, name) VALUES (1, 'acme', 'Acme'), (2, 'other', 'Other');
		INSERT INTO memberships (organization_id, user_id, role) VALUES (1, 1, 'owner'), (2, 1, 'owner')`)
	sum := strings.Repeat("ab", 20)
	req := store.AssemblyRequest{Checksum: sum, Chunks: []string{sum}}
	assemblies := map[string]func(ctx context.Context, org string) error{
		"artifact bundle": func(ctx context.Context, org string) error {
			_, err := st.AssembleArtifactBundle(ctx, 1, org, req)
			return err
		},
		"release": func(ctx context.Context, org string) error {
			return st.EnqueueReleaseAssembly(ctx, 1, org, "1.0", req)
		},
	}
	release, err := st.TakeTurnForTest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, assemble := range assemblies {
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- assemble(short, "acme") }()
		time.Sleep(150 * time.Millisecond)
		if n := st.AcquiredConnsForTest(); n != 0 {
			t.Errorf("%s: %d connections held while waiting for the turn, want 0", name, n)
		}
		if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s while acme's turn is taken: %v, want it to wait until its context ends", name, err)
		}
		cancel()
		if err := assemble(ctx, "other"); err != nil {
			t.Errorf("%s of another organization: %v", name, err)
		}
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM jobs WHERE organization_id = 1`); n != 0 {
		t.Errorf("%d jobs of acme enqueued by requests that never had the turn, want 0", n)
	}
	release()
	for name, assemble := range assemblies {
		if err := assemble(ctx, "acme"); err != nil {
			t.Errorf("%s after the turn is released: %v", name, err)
		}
	}
}

// TestAnExpiredLeaseRecordsNoAssemblyResult: a worker whose lease on an
// assemble_dif job ran out, and whose job another worker claimed again,
// neither overwrites the new holder's result nor is given its files.
func TestAnExpiredLeaseRecordsNoAssemblyResult(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	job := store.DifAssemblyJob{OrganizationID: 1, Chunks: []string{strings.Repeat("a", 40)}}
	storetest.Exec(t, db, `INSERT INTO organizations (id, slug, name) VALUES (1, 'acme', 'Acme')`)
	storetest.Exec(t, db, `
		INSERT INTO jobs (organization_id, kind, unique_key, payload, state, attempts, max_attempts, locked_by, locked_until)
		VALUES (1, $1, $2, '{"files": [{"checksum": "x"}]}', 'running', 1, 3, 'old', now() - interval '1 second')`,
		store.DifAssembleJobKind, store.DifJobKeyForTest(job.OrganizationID, job.Chunks))
	j, err := st.ClaimJob(ctx, "new", []string{store.DifAssembleJobKind}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	result := func() *string {
		var sha1 *string
		if err := storetest.Pool(t, db).QueryRow(ctx, `SELECT result->>'sha1' FROM jobs WHERE id = $1`, j.ID).Scan(&sha1); err != nil {
			t.Fatal(err)
		}
		return sha1
	}

	files, err := st.RecordDifAssembly(store.WithJobLease(ctx, j.ID, "old"), job, store.DifAssemblyResult{SHA1: "old"})
	if err != nil || files != nil {
		t.Errorf("the old worker's record: files %v, err %v; want none", files, err)
	}
	if got := result(); got != nil {
		t.Errorf("the old worker recorded %q on the new holder's job", *got)
	}
	files, err = st.RecordDifAssembly(store.WithJobLease(ctx, j.ID, "new"), job, store.DifAssemblyResult{SHA1: "new"})
	if err != nil || len(files) != 1 {
		t.Errorf("the new holder's record: files %v, err %v; want the job's one file", files, err)
	}
	if got := result(); got == nil || *got != "new" {
		t.Errorf("result after the holder's record: %v, want new", got)
	}
}
