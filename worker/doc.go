// Package worker runs errata's background jobs (artifact assembly, debug
// file assembly, the collector of unused uploads, mail).
//
// The packages below it are libraries of both the request handlers and
// the jobs, not parts of the runner: dif (with dif/proguard and
// dif/sourcemap) reads the file formats errata is sent (object files,
// DWARF, PDB, Breakpad, source bundles, ProGuard mappings, source maps);
// its packages are leaves that import nothing of errata and never touch
// the store or HTTP. ingest turns what dif reads in a debug file into the
// store's records of it, for the files/dsyms/ handler and for
// DifAssembler alike. mail delivers the outbox's messages.
//
// Guarantees: a job is a row in PostgreSQL, written before the request that
// asked for it is answered, so an accepted job is never lost. The channel of
// a Worker only wakes it early; a worker that was asleep, stopped or crashed
// finds the job on its next poll. A job is claimed with FOR UPDATE SKIP
// LOCKED under a lease that the running worker renews, so several processes
// on one database never run the same job at once, and a job whose worker
// died runs again once its lease runs out; a function runs with its lease in
// its context (store.WithJobLease), so what it records on its job is refused
// once the job is another worker's. Organizations take turns (see
// store.ClaimJob), and a slot of its own runs the jobs of no organization
// (mail, collection) so that they never wait behind an organization's. Failed runs are retried with
// exponential backoff until max attempts, then the job ends in state error
// with the last error as its detail.
//
// Because a job can run again after a crash, every job function must be
// idempotent. The runner must not know what jobs do: functions are
// registered by kind. It counts each run's recorded outcome (done, retried,
// failed) by kind for /metrics.
//
// assemble.go holds Assembler.Run: it makes uploaded chunks into one stored
// file, the bundle, and indexes its members as release files or by debug
// id (see its doc comment); stream.go reads the members in the same pass
// that checks the bundle's checksum. It reads and writes only through the
// store and knows nothing of HTTP; its errors are written for the client
// that uploaded the bundle, because the artifact-bundle endpoint shows them
// as the assembly's detail. difassemble.go holds DifAssembler.Run: it
// makes one chunk list of an organization into a stored file, hashes it
// once, and for each requested file of that checksum reads its objects
// with package dif and stores them as debug files of its project; its
// errors are shown by difs/assemble the same way. collect.go holds Collector.Run, which calls the
// store's collector, and Collector.Schedule, which enqueues it every
// interval.
package worker
