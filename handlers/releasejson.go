package handlers

import (
	"encoding/json"
	"strconv"
	"time"

	"errata/handlers/appendjson"
)

// The release shapes are the hottest JSON errata writes (a list page is 50
// of them), so they are encoded by hand rather than through encoding/json's
// reflection. The bytes are exactly encoding/json's, HTML escaping
// included: TestReleaseJSONIsEncodingJSON and FuzzReleaseJSON compare them
// for every golden release, for a release with every field set, and for
// fuzzed ones. A new field of releaseOut or deployOut is a line below, in
// the struct's order (a nested field not worth a case of its own can be
// appended from json.Marshal's output, which escapes as encoding/json does).

// jsonAppender is a value that appends its own JSON, as encoding/json
// would write it, for writeJSON.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

func (r releaseOut) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, r.ID, 10)
	b = appendString(append(b, `,"version":`...), r.Version)
	b = appendString(append(b, `,"shortVersion":`...), r.ShortVersion)
	b = append(b, `,"versionInfo":`...)
	if r.VersionInfo == nil {
		b = append(b, "null"...)
	} else {
		b = r.VersionInfo.appendJSON(b)
	}
	b = appendStringPtr(append(b, `,"ref":`...), r.Ref)
	b = appendStringPtr(append(b, `,"url":`...), r.URL)
	b = appendTime(append(b, `,"dateCreated":`...), r.DateCreated)
	b = appendTimePtr(append(b, `,"dateReleased":`...), r.DateReleased)
	b = appendTimePtr(append(b, `,"dateStarted":`...), r.DateStarted)
	if b, err = appendRaw(append(b, `,"data":`...), r.Data); err != nil {
		return nil, err
	}
	b = appendString(append(b, `,"status":`...), r.Status)
	b = strconv.AppendInt(append(b, `,"newGroups":`...), int64(r.NewGroups), 10)
	b = append(b, `,"owner":`...)
	if r.Owner == nil {
		b = append(b, "null"...)
	} else {
		// Rare: encoding/json's own bytes.
		owner, err := json.Marshal(r.Owner)
		if err != nil {
			return nil, err
		}
		b = append(b, owner...)
	}
	b = strconv.AppendInt(append(b, `,"commitCount":`...), int64(r.CommitCount), 10)
	b = append(b, `,"lastCommit":`...)
	if r.LastCommit == nil {
		b = append(b, "null"...)
	} else {
		b = r.LastCommit.appendJSON(b)
	}
	b = append(b, `,"authors":`...)
	if r.Authors == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range r.Authors {
			if i > 0 {
				b = append(b, ',')
			}
			b = a.appendJSON(b)
		}
		b = append(b, ']')
	}
	b = strconv.AppendInt(append(b, `,"deployCount":`...), int64(r.DeployCount), 10)
	b = append(b, `,"lastDeploy":`...)
	if r.LastDeploy == nil {
		b = append(b, "null"...)
	} else {
		b = r.LastDeploy.appendJSON(b)
	}
	b = appendTimePtr(append(b, `,"firstEvent":`...), r.FirstEvent)
	b = appendTimePtr(append(b, `,"lastEvent":`...), r.LastEvent)
	b = append(b, `,"projects":`...)
	if r.Projects == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range r.Projects {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(append(b, `{"id":`...), p.ID, 10)
			b = appendString(append(b, `,"slug":`...), p.Slug)
			b = appendString(append(b, `,"name":`...), p.Name)
			b = strconv.AppendInt(append(b, `,"newGroups":`...), int64(p.NewGroups), 10)
			b = appendStringPtr(append(b, `,"platform":`...), p.Platform)
			b = append(b, `,"platforms":`...)
			if p.Platforms == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '[')
				for i, platform := range p.Platforms {
					if i > 0 {
						b = append(b, ',')
					}
					b = appendString(b, platform)
				}
				b = append(b, ']')
			}
			b = strconv.AppendBool(append(b, `,"hasHealthData":`...), p.HasHealthData)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func (v *versionInfoOut) appendJSON(b []byte) []byte {
	b = appendStringPtr(append(b, `{"package":`...), v.Package)
	b = appendString(append(b, `,"version":{"raw":`...), v.Version.Raw)
	if p := v.Version.parsedVersion; p != nil {
		b = strconv.AppendUint(append(b, `,"major":`...), p.Major, 10)
		b = strconv.AppendUint(append(b, `,"minor":`...), p.Minor, 10)
		b = strconv.AppendUint(append(b, `,"patch":`...), p.Patch, 10)
		b = appendStringPtr(append(b, `,"pre":`...), p.Pre)
		b = appendStringPtr(append(b, `,"buildCode":`...), p.BuildCode)
		b = strconv.AppendInt(append(b, `,"components":`...), int64(p.Components), 10)
	}
	b = v.Description.appendJSON(append(b, `},"description":`...))
	b = appendStringPtr(append(b, `,"buildHash":`...), v.BuildHash)
	return append(b, '}')
}

func (a authorOut) appendJSON(b []byte) []byte {
	b = appendStringPtr(append(b, `{"name":`...), a.Name)
	b = appendString(append(b, `,"email":`...), a.Email)
	return append(b, '}')
}

func (c commitOut) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"id":`...), c.ID)
	b = appendStringPtr(append(b, `,"message":`...), c.Message)
	b = appendTime(append(b, `,"dateCreated":`...), c.DateCreated)
	b = append(b, `,"author":`...)
	if c.Author == nil {
		b = append(b, "null"...)
	} else {
		b = c.Author.appendJSON(b)
	}
	repo := c.Repository
	b = appendString(append(b, `,"repository":{"id":`...), repo.ID)
	b = appendString(append(b, `,"name":`...), repo.Name)
	b = appendStringPtr(append(b, `,"url":`...), repo.URL)
	b = appendString(append(b, `,"provider":{"id":`...), repo.Provider.ID)
	b = appendString(append(b, `,"name":`...), repo.Provider.Name)
	b = appendString(append(b, `},"status":`...), repo.Status)
	b = appendTime(append(b, `,"dateCreated":`...), repo.DateCreated)
	b = appendStringPtr(append(b, `,"integrationId":`...), repo.IntegrationID)
	b = appendStringPtr(append(b, `,"externalSlug":`...), repo.ExternalSlug)
	return append(b, '}', '}')
}

func (d deployOut) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"id":`...), d.ID)
	b = appendString(append(b, `,"environment":`...), d.Environment)
	b = appendStringPtr(append(b, `,"name":`...), d.Name)
	b = appendStringPtr(append(b, `,"url":`...), d.URL)
	b = appendTimePtr(append(b, `,"dateStarted":`...), d.DateStarted)
	b = appendTime(append(b, `,"dateFinished":`...), d.DateFinished)
	return append(b, '}')
}

// appendTime writes t as jsonTime.MarshalText does (timeLayout, in UTC),
// without parsing the layout; years outside 0-9999 take AppendFormat.
func appendTime(b []byte, t jsonTime) []byte {
	u := time.Time(t).UTC()
	b = append(b, '"')
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		b = u.AppendFormat(b, timeLayout)
		return append(b, '"')
	}
	hour, minute, second := u.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), second, 2)
	b = appendDigits(append(b, '.'), u.Nanosecond()/1e6, 3)
	return append(b, 'Z', '"')
}

// appendDigits writes n (0 ≤ n < 10^width, width ≤ 4) in width digits.
func appendDigits(b []byte, n, width int) []byte {
	start := len(b)
	b = append(b, "0000"[:width]...)
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

func appendTimePtr(b []byte, t *jsonTime) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

// appendStringPtr appends *s as a JSON string, or null.
func appendStringPtr(b []byte, s *string) []byte { return appendjson.StringPtr(b, s) }

// appendRaw appends a JSON document as encoding/json writes a
// json.RawMessage (appendjson.Raw).
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) { return appendjson.Raw(b, raw) }

// appendString appends s as a JSON string as encoding/json writes it
// (appendjson.String).
func appendString(b []byte, s string) []byte { return appendjson.String(b, s) }
