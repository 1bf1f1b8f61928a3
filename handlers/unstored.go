package handlers

import "encoding/json"

// bodyKeys are the keys of a JSON body, kept by an input's UnmarshalJSON
// so that its handler can refuse the keys of settings errata does not
// store: a key of Sentry's document that would be accepted and dropped is
// silent loss. Keys Sentry does not document are ignored, as everywhere.
type bodyKeys map[string]json.RawMessage

// refuseUnstored returns a 422 naming each of the keys of names that the
// body has, or nil. names is the one list, per operation, of Sentry's
// documented fields that errata has no place for.
func (k bodyKeys) refuseUnstored(names []string) error {
	var errs validationError
	for _, name := range names {
		if _, ok := k[name]; ok {
			errs = append(errs, fieldError{Type: valueErr, Loc: []any{"body", name},
				Msg: "errata does not store this setting"})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}
