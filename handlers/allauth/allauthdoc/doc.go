// Package allauthdoc holds errata's sign-in API to django-allauth's
// OpenAPI document of its headless API (allauth/headless/spec/doc/openapi.yaml
// of pennersr/django-allauth at tag 65.16.1, MIT, as JSON), kept beside the
// repository with the shared test data (shareddata), never in it. Check
// validates one answer against it: the operation of its method and concrete
// path, a documented status, and the body against that response's schema,
// with a validator of the JSON Schema keywords the document uses; a keyword
// or format it does not know fails.
//
// A few answers errata gives are named nowhere in the document
// (docs/accounts.md): departures lists each, with why, and the documented
// answer whose shape it has, if any. Check holds those to that shape;
// CheckExcusing also lets the rest (the CSRF refusal, the throttle's 429,
// ...) pass unchecked.
//
// It is test support, imported only by tests (handlers/allauth's, whose
// client checks every answer it gets, and the root package's
// TestAllauthConformance), as store/storetest is for the database. A
// missing or unreadable document fails the test; it never skips.
package allauthdoc
