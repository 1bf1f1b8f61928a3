package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"errata/authn"
	"errata/store"
)

// The API tokens of a person (docs/accounts.md): a signed-in session that
// authenticated recently lists, makes and deletes the caller's own tokens;
// routes.go's recentSession rule keeps tokens off these routes.

// apiTokenOut is an API token as its owner sees it, in the shape of
// Sentry's: never the secret, but for Token in the answer that makes it.
type apiTokenOut struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Scopes      []string  `json:"scopes"`
	DateCreated jsonTime  `json:"dateCreated"`
	ExpiresAt   *jsonTime `json:"expiresAt"`
	LastUsed    *jsonTime `json:"lastUsed"`
	// TokenLastCharacters is null for the tokens made before errata kept
	// them.
	TokenLastCharacters *string `json:"tokenLastCharacters"`
	Token               string  `json:"token,omitempty"`
}

func newAPITokenOut(t store.Token) apiTokenOut {
	out := apiTokenOut{
		ID:          strconv.FormatInt(t.ID, 10),
		Name:        t.Name,
		Scopes:      t.Scopes,
		DateCreated: jsonTime(t.DateCreated),
		ExpiresAt:   timeOrNil(t.ExpiresAt),
		LastUsed:    timeOrNil(t.LastUsed),
	}
	if t.LastCharacters != "" {
		out.TokenLastCharacters = &t.LastCharacters
	}
	return out
}

// apiTokenIn is the body of POST /api/0/api-tokens/.
type apiTokenIn struct {
	Name      opt[string]   `json:"name"`
	Scopes    opt[[]string] `json:"scopes"`
	ExpiresAt opt[string]   `json:"expiresAt"`
}

// maxTokenNameLen is the longest name of a token, Sentry's.
const maxTokenNameLen = 255

// handleAPITokens serves GET /api/0/api-tokens/: the caller's tokens,
// newest first, paginated.
func handleAPITokens(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		page, err := readPage(r)
		if err != nil {
			return err
		}
		ts, info, err := d.Store.UserTokens(r.Context(), caller(r).UserID, page)
		if err != nil {
			return err
		}
		out := make([]apiTokenOut, len(ts))
		for i, t := range ts {
			out[i] = newAPITokenOut(t)
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleAPITokenCreate serves POST /api/0/api-tokens/: a new token of the
// caller, whose secret the answer shows this once. Its scopes must exist
// and be granted by one of the caller's roles; its expiry, when given,
// must be in the future. The user is sent a security notice.
func handleAPITokenCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		c := caller(r)
		var body apiTokenIn
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
		name, err := text(body.Name, false, maxTokenNameLen, "body", "name")
		if err != nil {
			return err
		}
		scopes, err := tokenScopes(body.Scopes)
		if err != nil {
			return err
		}
		expires, err := parseTime(body.ExpiresAt, "expiresAt")
		if err != nil {
			return err
		}
		if expires != nil && !expires.After(d.Now()) {
			return badRequest("Expiration date must be in the future")
		}
		for _, s := range scopes {
			// A session's scopes here are the union of its roles' over
			// its organizations (authn.ScopesIn, applied by authorize).
			if !slices.Contains(c.Scopes, s) {
				return badRequest(fmt.Sprintf("None of your roles grants the scope %s", s))
			}
		}
		token, hash := authn.NewToken()
		in := store.TokenInput{Hash: hash, Scopes: scopes, ExpiresAt: expires,
			LastCharacters: token[len(token)-4:]}
		if name != nil {
			in.Name = *name
		}
		t, err := d.Store.CreateUserToken(r.Context(), c.UserID, in)
		if err != nil {
			return err
		}
		notifyMail(d)
		out := newAPITokenOut(t)
		out.Token = token
		writeJSON(w, r, d.Log, http.StatusCreated, out)
		return nil
	}
}

// maxScopeLen bounds a scope name in a request: the longest is 16
// characters, and an error message names the scope it refuses.
const maxScopeLen = 64

// tokenScopes checks the scopes field of a new token: a list of known
// scope names, returned sorted without repeats.
func tokenScopes(o opt[[]string]) ([]string, error) {
	if !o.Set || o.Null {
		return nil, invalid(missing, "Field required", "body", "scopes")
	}
	for i, s := range o.V {
		if len(s) > maxScopeLen {
			return nil, invalid(valueErr, "String should have at most 64 characters", "body", "scopes", i)
		}
	}
	if err := authn.CheckScopes(o.V); err != nil {
		return nil, badRequest("Invalid scopes: " + err.Error())
	}
	scopes := slices.Clone(o.V)
	slices.Sort(scopes)
	return slices.Compact(scopes), nil
}

// handleAPITokenDelete serves DELETE /api/0/api-tokens/{token_id}/: it
// deletes one of the caller's tokens; another's is 404.
func handleAPITokenDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := strconv.ParseInt(r.PathValue("token_id"), 10, 64)
		if err != nil || id <= 0 {
			return invalid(typeError, "Input should be a valid integer", "path", "token_id")
		}
		return deleteAPIToken(d, w, r, id)
	}
}

// handleAPITokenDeleteByBody serves Sentry's DELETE /api/0/api-tokens/
// with {"tokenId": id}, the id a number or a string of digits, as
// handleAPITokenDelete does.
func handleAPITokenDeleteByBody(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var in struct {
			TokenID opt[json.RawMessage] `json:"tokenId"`
		}
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		if !in.TokenID.Set || in.TokenID.Null {
			return invalid(missing, "Field required", "body", "tokenId")
		}
		id, ok := decodeTokenID(in.TokenID.V)
		if !ok {
			return invalid(typeError, "Input should be a valid integer", "body", "tokenId")
		}
		return deleteAPIToken(d, w, r, id)
	}
}

// decodeTokenID reads a token id sent as a JSON number or string: a
// positive decimal integer.
func decodeTokenID(raw json.RawMessage) (int64, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}

// deleteAPIToken deletes the caller's token id and forgets it from this
// process's token cache, so that it stops working at once here.
func deleteAPIToken(d Deps, w http.ResponseWriter, r *http.Request, id int64) error {
	if err := d.Store.DeleteUserToken(r.Context(), caller(r).UserID, id); err != nil {
		return err
	}
	d.Auth.ForgetToken(id)
	noContent(w)
	return nil
}
