package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // timezone names are checked against the IANA database wherever errata runs
	"unicode/utf8"

	"errata/store"
)

// maxUserString is the longest name or option value a user can set.
const maxUserString = 255

var userIDPattern = regexp.MustCompile(`^[0-9]{1,19}$`)

// userSubject reads {user_id}, "me" or a decimal id (anything else is
// 422), and returns the subject of every user route, the caller, with
// whether the value named the caller. Routes that check {user_id} answer
// 404 when it did not, once the body is validated; the others ignore it.
func userSubject(r *http.Request) (id int64, self bool, err error) {
	me := caller(r).UserID
	v := r.PathValue("user_id")
	if v == "me" {
		return me, true, nil
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if !userIDPattern.MatchString(v) || perr != nil {
		return 0, false, invalid(typeError, `Input should be "me" or a user id`, "path", "user_id")
	}
	return me, n == me, nil
}

// checkedUser is userSubject for routes without a body: a value that does
// not name the caller is 404.
func checkedUser(r *http.Request) (int64, error) {
	id, self, err := userSubject(r)
	if err == nil && !self {
		err = errNotFound
	}
	return id, err
}

// userOptions are the five display options; null when unset.
type userOptions struct {
	Timezone        *string `json:"timezone"`
	StacktraceOrder *int    `json:"stacktraceOrder"`
	Language        *string `json:"language"`
	Clock24Hours    *bool   `json:"clock24Hours"`
	PreferredTheme  *string `json:"preferredTheme"`
}

// stacktraceOrders are the values of the stacktraceOrder option, as
// GlitchTip and Sentry write them: -1 the default, 1 newest frame last, 2
// newest frame first.
var stacktraceOrders = map[string]int{"-1": -1, "1": 1, "2": 2}

// stacktraceOrderOut is the stored option as the API writes it: an
// integer. A value stored before the option was one (any string) that is
// not one of them reads as unset.
func stacktraceOrderOut(stored *string) *int {
	if stored == nil {
		return nil
	}
	if n, ok := stacktraceOrders[*stored]; ok {
		return &n
	}
	return nil
}

// userOut is a user as the API shows it.
type userOut struct {
	ID              string      `json:"id"`
	Email           string      `json:"email"`
	Username        string      `json:"username"`
	Name            string      `json:"name"`
	DateJoined      jsonTime    `json:"dateJoined"`
	LastLogin       *jsonTime   `json:"lastLogin"`
	IsActive        bool        `json:"isActive"`
	IsSuperuser     bool        `json:"isSuperuser"`
	HasPasswordAuth bool        `json:"hasPasswordAuth"`
	Options         userOptions `json:"options"`
}

func newUserOut(u store.User) userOut {
	return userOut{
		ID:              strconv.FormatInt(u.ID, 10),
		Email:           u.Email,
		Username:        u.Email,
		Name:            u.Name,
		DateJoined:      jsonTime(u.DateJoined),
		LastLogin:       timeOrNil(u.LastLogin),
		IsActive:        u.IsActive,
		IsSuperuser:     u.IsSuperuser,
		HasPasswordAuth: u.HasPasswordAuth,
		Options: userOptions{
			Timezone:        u.Options.Timezone,
			StacktraceOrder: stacktraceOrderOut(u.Options.StacktraceOrder),
			Language:        u.Options.Language,
			Clock24Hours:    u.Options.Clock24Hours,
			PreferredTheme:  u.Options.PreferredTheme,
		},
	}
}

// identityOut is a linked social account.
type identityOut struct {
	ID         string    `json:"id"`
	Provider   string    `json:"provider"`
	UID        string    `json:"uid"`
	Email      *string   `json:"email"`
	Username   *string   `json:"username"`
	DateJoined jsonTime  `json:"dateJoined"`
	LastLogin  *jsonTime `json:"lastLogin"`
}

// userDetailOut is the detail form of a user.
type userDetailOut struct {
	userOut
	Identities []identityOut `json:"identities"`
}

// handleUserList serves GET /api/0/users/: a paginated list holding only
// the caller.
func handleUserList(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		page, err := readPage(r)
		if err != nil {
			return err
		}
		users, info, err := d.Store.Users(r.Context(), caller(r).UserID, page)
		if err != nil {
			return err
		}
		out := make([]userOut, 0, len(users))
		for _, u := range users {
			out = append(out, newUserOut(u))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleUserDetail serves GET /api/0/users/{user_id}/ (not checked): the
// caller's detail with its linked accounts.
func handleUserDetail(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, _, err := userSubject(r)
		if err != nil {
			return err
		}
		u, err := d.Store.UserDetail(r.Context(), id)
		if err != nil {
			return err
		}
		out := userDetailOut{userOut: newUserOut(u.User), Identities: make([]identityOut, 0, len(u.Identities))}
		for _, i := range u.Identities {
			out.Identities = append(out.Identities, identityOut{
				ID: strconv.FormatInt(i.ID, 10), Provider: i.Provider, UID: i.UID,
				Email: i.Email, Username: i.Username,
				DateJoined: jsonTime(i.DateJoined), LastLogin: timeOrNil(i.LastLogin),
			})
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// userIn is the body of PUT on a user; only keys present are assigned.
type userIn struct {
	Name    opt[string]          `json:"name"`
	Options opt[json.RawMessage] `json:"options"`
}

// userOptionsIn is the options object of userIn; only keys present are
// assigned, and null unsets an option.
type userOptionsIn struct {
	Timezone        opt[string]          `json:"timezone"`
	StacktraceOrder opt[json.RawMessage] `json:"stacktraceOrder"`
	Language        opt[string]          `json:"language"`
	Clock24Hours    opt[bool]            `json:"clock24Hours"`
	PreferredTheme  opt[string]          `json:"preferredTheme"`
}

// decodeUserIn reads and validates a UserIn body into an update.
func decodeUserIn(w http.ResponseWriter, r *http.Request) (store.UserUpdate, error) {
	var in userIn
	var up store.UserUpdate
	if err := decodeJSON(w, r, &in); err != nil {
		return up, err
	}
	if in.Name.Set {
		if in.Name.Null {
			return up, invalid(typeError, "Input should be a valid string", "body", "name")
		}
		if utf8.RuneCountInString(in.Name.V) > maxUserString {
			return up, invalid(valueErr, "String should have at most 255 characters", "body", "name")
		}
		up.Name = store.Field[string]{Set: true, Value: in.Name.ptr()}
	}
	if !in.Options.Set {
		return up, nil
	}
	if in.Options.Null {
		return up, invalid(typeError, "Input should be an object", "body", "options")
	}
	var o userOptionsIn
	if err := unmarshalObject(in.Options.V, &o, "body", "options"); err != nil {
		return up, err
	}
	for _, s := range []struct {
		name string
		v    opt[string]
	}{
		{"timezone", o.Timezone}, {"language", o.Language}, {"preferredTheme", o.PreferredTheme},
	} {
		if utf8.RuneCountInString(s.v.V) > maxUserString {
			return up, invalid(valueErr, "String should have at most 255 characters", "body", "options", s.name)
		}
	}
	if tz := o.Timezone; tz.Set && !tz.Null && !validTimezone(tz.V) {
		return up, invalid(valueErr, "Input should be an IANA time zone name", "body", "options", "timezone")
	}
	up.Timezone = field(o.Timezone)
	up.StacktraceOrder = store.Field[string]{Set: o.StacktraceOrder.Set}
	if o.StacktraceOrder.Set && !o.StacktraceOrder.Null {
		// An integer, or its text as Sentry's frontend sends it.
		v := strings.Trim(string(o.StacktraceOrder.V), `"`)
		if _, ok := stacktraceOrders[v]; !ok {
			return up, invalid(valueErr, "Input should be -1, 1 or 2", "body", "options", "stacktraceOrder")
		}
		up.StacktraceOrder.Value = &v
	}
	up.Language = field(o.Language)
	up.Clock24Hours = field(o.Clock24Hours)
	up.PreferredTheme = field(o.PreferredTheme)
	return up, nil
}

// field turns an optional input into a store field.
func field[T any](o opt[T]) store.Field[T] {
	return store.Field[T]{Set: o.Set, Value: o.ptr()}
}

// validTimezone reports whether name is a zone of the IANA database.
func validTimezone(name string) bool {
	if name == "" || name == "Local" {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}

// handleUserUpdate serves PUT /api/0/users/{user_id}/ (checked): it
// assigns the fields of the body present to the caller and returns it.
func handleUserUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, self, err := userSubject(r)
		if err != nil {
			return err
		}
		up, err := decodeUserIn(w, r)
		if err != nil {
			return err
		}
		if !self {
			return errNotFound
		}
		u, err := d.Store.UpdateUser(r.Context(), id, up)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newUserOut(u))
		return nil
	}
}

// handleUserDelete serves DELETE /api/0/users/{user_id}/ (checked): it
// deletes the caller's account with everything of its own, unless the
// caller owns an organization.
func handleUserDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := checkedUser(r)
		if err != nil {
			return err
		}
		err = d.Store.DeleteUser(r.Context(), id)
		if errors.Is(err, store.ErrOrganizationOwner) {
			return badRequest("User is organization owner. Delete organization or transfer ownership first.")
		}
		if err != nil {
			return err
		}
		d.Auth.ForgetUser(id)
		noContent(w)
		return nil
	}
}

// notificationsOut is a user's notification settings.
type notificationsOut struct {
	SubscribeByDefault bool `json:"subscribeByDefault"`
}

// handleNotifications serves GET /api/0/users/{user_id}/notifications/ (not
// checked): the caller's notification settings.
func handleNotifications(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, _, err := userSubject(r)
		if err != nil {
			return err
		}
		u, err := d.Store.User(r.Context(), id)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, notificationsOut{SubscribeByDefault: u.SubscribeByDefault})
		return nil
	}
}

// notificationsIn is the body of PUT on notifications; only keys present are
// assigned.
type notificationsIn struct {
	SubscribeByDefault opt[bool] `json:"subscribeByDefault"`
}

// handleNotificationsUpdate serves PUT
// /api/0/users/{user_id}/notifications/ (not checked): it assigns the keys
// present and returns the settings.
func handleNotificationsUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, _, err := userSubject(r)
		if err != nil {
			return err
		}
		var in notificationsIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		if in.SubscribeByDefault.Null {
			return invalid(typeError, "Input should be a valid boolean", "body", "subscribeByDefault")
		}
		v, err := d.Store.UpdateNotifications(r.Context(), id, in.SubscribeByDefault.ptr())
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, notificationsOut{SubscribeByDefault: v})
		return nil
	}
}
