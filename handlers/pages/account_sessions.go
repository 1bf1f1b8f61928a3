package pages

import (
	"net/http"
	"strconv"
)

// The person's sessions and API tokens (docs/accounts.md): the sign-in
// API's auth/sessions, and /api/0/api-tokens/.

// sessionInfo is a session of GET auth/sessions.
type sessionInfo struct {
	ID         int64   `json:"id"`
	UserAgent  string  `json:"user_agent"`
	IP         string  `json:"ip"`
	CreatedAt  float64 `json:"created_at"`
	LastSeenAt float64 `json:"last_seen_at"`
	IsCurrent  bool    `json:"is_current"`
}

// sessionRow is a session as the sessions page shows it.
type sessionRow struct {
	ID                               string
	UserAgent, IP, Created, LastSeen string
	Current                          bool
}

const sessionsPath = "/_allauth/browser/v1/auth/sessions"

// Sessions serves /account/sessions/: the person's live sessions (device,
// address, when started and last seen, this one marked), a button that
// ends one, and one that ends all but this one (DELETE auth/sessions).
func (p *Pages) Sessions(v *Visit) error {
	if err := signedIn(v); err != nil {
		return err
	}
	var answer struct {
		Data []sessionInfo `json:"data"`
	}
	if _, err := v.Call("GET", sessionsPath, nil, &answer); err != nil {
		return err
	}
	view := View{Title: "Sessions"}
	if v.R.Method == http.MethodPost {
		var end []int64
		switch v.Form("action") {
		case "end":
			id, err := strconv.ParseInt(v.Form("session"), 10, 64)
			if err != nil {
				view.Data = sessionRows(answer.Data)
				return badForm(v, "account_sessions.html", view)
			}
			end = []int64{id}
			view.Notice = "The session is ended."
		case "others":
			end = []int64{}
			for _, s := range answer.Data {
				if !s.IsCurrent {
					end = append(end, s.ID)
				}
			}
			view.Notice = "Your other sessions are signed out."
		default:
			view.Data = sessionRows(answer.Data)
			return badForm(v, "account_sessions.html", view)
		}
		// Ending this session too is signing out: the API answers 401,
		// and the page sends the person to sign in.
		if _, err := v.Call("DELETE", sessionsPath, map[string][]int64{"sessions": end}, &answer); err != nil {
			return err
		}
	}
	view.Data = sessionRows(answer.Data)
	return v.Render("account_sessions.html", view)
}

// sessionRows are the sessions of the API as the page shows them.
func sessionRows(list []sessionInfo) []sessionRow {
	rows := make([]sessionRow, len(list))
	for i, s := range list {
		ua := s.UserAgent
		if ua == "" {
			ua = "Unknown device"
		}
		rows[i] = sessionRow{ID: strconv.FormatInt(s.ID, 10), UserAgent: ua, IP: s.IP,
			Created: epochTime(s.CreatedAt), LastSeen: epochTime(s.LastSeenAt), Current: s.IsCurrent}
	}
	return rows
}
