// Package shareddata finds the test data that others wrote, kept beside
// the repository in ../shared/data and never in it, each file or folder
// with its license and the commit it was copied from (docs/testing.md).
//
// It is test support, imported only by tests (the root package's suites,
// handlers/allauth/allauthdoc), as store/storetest is for the database: a
// test whose data is missing fails, it never skips.
package shareddata
