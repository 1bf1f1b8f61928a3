package pages

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// apiToken is a token of GET /api/0/api-tokens/.
type apiToken struct {
	ID                  string     `json:"id"`
	Name                string     `json:"name"`
	Scopes              []string   `json:"scopes"`
	DateCreated         time.Time  `json:"dateCreated"`
	ExpiresAt           *time.Time `json:"expiresAt"`
	LastUsed            *time.Time `json:"lastUsed"`
	TokenLastCharacters *string    `json:"tokenLastCharacters"`
	Token               string     `json:"token"`
}

// tokenRow is a token as the tokens page shows it.
type tokenRow struct {
	ID, Name, Scopes, Created, Expires, LastUsed, Last string
}

// scopeOption is a scope the form offers.
type scopeOption struct {
	Name    string
	Checked bool
}

// tokensView is the API tokens page.
type tokensView struct {
	Tokens []tokenRow
	Pager  Pager
	// Scopes are those the person's roles grant, the ones a token may
	// have; Name and Expires are what the form holds.
	Scopes        []scopeOption
	Name, Expires string
	// New is the token just made, shown this once.
	New     string
	NewName string
}

const tokensPath = "/api/0/api-tokens/"

// APITokens serves /account/api-tokens/: the person's tokens (never their
// secret: the last characters), a form that makes one with a name, scopes
// among those the person's roles grant, and an optional day of expiry
// (POST /api/0/api-tokens/), whose answer shows the new token this once,
// and a button per token that revokes it (DELETE
// /api/0/api-tokens/{id}/). The API needs a recent sign-in for all of it.
func (p *Pages) APITokens(v *Visit) error {
	var tokens []apiToken
	pager, err := v.List(tokensPath, &tokens)
	if err != nil {
		return err
	}
	var root struct {
		Auth *struct {
			Scopes []string `json:"scopes"`
		} `json:"auth"`
	}
	if _, err := v.Call("GET", "/api/0/", nil, &root); err != nil {
		return err
	}
	var granted []string
	if root.Auth != nil {
		granted = root.Auth.Scopes
	}
	view := View{Title: "API tokens"}
	data := tokensView{Pager: pager, Scopes: scopeOptions(granted, nil)}
	// refused shows the create form again as the person filled it, with
	// msg as its error.
	refused := func(status int, msg string) error {
		data.Tokens = tokenRows(tokens)
		data.Name, data.Expires = v.Form("name"), v.Form("expires")
		data.Scopes = scopeOptions(granted, v.R.PostForm["scopes"])
		view.Error, view.Data = msg, data
		return v.RenderStatus(status, "account_tokens.html", view)
	}
	if v.R.Method == http.MethodPost {
		switch v.Form("action") {
		case "create":
			// None checked is an empty list, which the API refuses by
			// name.
			body := map[string]any{"name": v.Form("name"), "scopes": append([]string{}, v.R.PostForm["scopes"]...)}
			if expires := v.Form("expires"); expires != "" {
				day, err := time.Parse(time.DateOnly, expires)
				if err != nil {
					return refused(http.StatusBadRequest, "Expires should be a date, as 2030-12-31.")
				}
				body["expiresAt"] = day.UTC().Format(time.RFC3339)
			}
			var made apiToken
			_, err := v.Call("POST", tokensPath, body, &made)
			if fe, ok := correctable(err); ok {
				return refused(fe.Status, fe.Detail)
			}
			if err != nil {
				return err
			}
			data.New, data.NewName = made.Token, made.Name
			view.Notice = "Your new token is made. Copy it now: errata shows it only this once."
		case "revoke":
			if _, err := v.Call("DELETE", tokensPath+url.PathEscape(v.Form("id"))+"/", nil, nil); err != nil {
				return err
			}
			view.Notice = "The token is revoked; it no longer works."
		default:
			data.Tokens = tokenRows(tokens)
			view.Data = data
			return badForm(v, "account_tokens.html", view)
		}
		tokens = nil
		if data.Pager, err = v.List(tokensPath, &tokens); err != nil {
			return err
		}
	}
	data.Tokens = tokenRows(tokens)
	view.Data = data
	return v.Render("account_tokens.html", view)
}

// scopeOptions are the scopes of granted as the form's checkboxes, those
// of chosen checked.
func scopeOptions(granted, chosen []string) []scopeOption {
	opts := make([]scopeOption, len(granted))
	for i, s := range granted {
		opts[i] = scopeOption{Name: s, Checked: slices.Contains(chosen, s)}
	}
	return opts
}

// tokenRows are the tokens as the page shows them.
func tokenRows(tokens []apiToken) []tokenRow {
	rows := make([]tokenRow, len(tokens))
	for i, t := range tokens {
		r := tokenRow{ID: t.ID, Name: t.Name, Scopes: strings.Join(t.Scopes, " "),
			Created: shownTime(t.DateCreated), Expires: "never", LastUsed: "never"}
		if r.Name == "" {
			r.Name = "(no name)"
		}
		if t.ExpiresAt != nil {
			r.Expires = shownTime(*t.ExpiresAt)
		}
		if t.LastUsed != nil {
			r.LastUsed = shownTime(*t.LastUsed)
		}
		if t.TokenLastCharacters != nil {
			r.Last = "…" + *t.TokenLastCharacters
		}
		rows[i] = r
	}
	return rows
}
