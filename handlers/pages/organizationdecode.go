package pages

// The organization's list pages read their API answers with the walker
// of releasesdecode.go, field by field, rather than with encoding/json:
// it checks and decodes every field of every item, which made the teams
// page cost 1.6 times the API (handlers/pages' list pages are held to 1.5
// times, docs/performance.md). The rows are still written by html/template.

// orgTeams is a list of teams as the pages show them.
type orgTeams []orgTeam

func (ts *orgTeams) decodeAPI(b []byte) error {
	*ts = (*ts)[:0]
	return jsonArray(b, func(b []byte, i int) (int, error) {
		var t orgTeam
		end, err := jsonObject(b, i, t.field)
		*ts = append(*ts, t)
		return end, err
	})
}

// field reads one field of a team of the API.
func (t *orgTeam) field(k, v []byte) error {
	var err error
	switch string(k) {
	case "slug":
		t.Slug, err = jsonString(v)
	case "name":
		t.Name, err = jsonString(v)
	case "memberCount":
		var n int64
		n, err = jsonInt(v)
		t.MemberCount = int(n)
	case "isMember":
		t.IsMember, err = jsonBool(v)
	}
	return err
}

// orgMembers is a list of members as the pages show them.
type orgMembers []orgMember

func (ms *orgMembers) decodeAPI(b []byte) error {
	*ms = (*ms)[:0]
	return jsonArray(b, func(b []byte, i int) (int, error) {
		var m orgMember
		end, err := jsonObject(b, i, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "id":
				m.ID, err = jsonString(v)
			case "email":
				m.Email, err = jsonString(v)
			case "name":
				m.Name, err = jsonString(v)
			case "orgRole":
				m.OrgRole, err = jsonString(v)
			case "pending":
				m.Pending, err = jsonBool(v)
			case "expired":
				m.Expired, err = jsonBool(v)
			case "user":
				if string(v) == "null" {
					return nil
				}
				m.User = &struct {
					ID string `json:"id"`
				}{}
				err = jsonFields(v, func(k, v []byte) (err error) {
					if string(k) == "id" {
						m.User.ID, err = jsonString(v)
					}
					return err
				})
			}
			return err
		})
		*ms = append(*ms, m)
		return end, err
	})
}

// orgProjects is a list of projects as the pages show them.
type orgProjects []orgProject

func (ps *orgProjects) decodeAPI(b []byte) error {
	*ps = (*ps)[:0]
	return jsonArray(b, func(b []byte, i int) (int, error) {
		var p orgProject
		end, err := jsonObject(b, i, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "slug":
				p.Slug, err = jsonString(v)
			case "name":
				p.Name, err = jsonString(v)
			case "teams":
				var ts orgTeams
				err = ts.decodeAPI(v)
				p.Teams = ts
			case "latestRelease":
				if string(v) == "null" {
					return nil
				}
				p.LatestRelease = &struct {
					Version string `json:"version"`
				}{}
				err = jsonFields(v, func(k, v []byte) (err error) {
					if string(k) == "version" {
						p.LatestRelease.Version, err = jsonString(v)
					}
					return err
				})
			}
			return err
		})
		*ps = append(*ps, p)
		return end, err
	})
}

// jsonBool reads a JSON boolean.
func jsonBool(v []byte) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errJSON
}
