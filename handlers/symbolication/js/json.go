package js

import (
	"strconv"

	"errata/handlers/appendjson"
)

// AppendJSON appends the answer as encoding/json writes it, by hand: a
// thousand frames through reflection cost more than resolving them.
// raw_stacktraces is the request's own text, which decoding found valid.
func (out *Response) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"stacktraces":[`...)
	for i, st := range out.Stacktraces {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"frames":[`...)
		for j := range st.Frames {
			if j > 0 {
				b = append(b, ',')
			}
			b = st.Frames[j].appendJSON(b)
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"raw_stacktraces":`...)
	if len(out.RawStacktraces) == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, out.RawStacktraces...)
	}
	b = append(b, `,"errors":[`...)
	for i, e := range out.Errors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"abs_path":`...)
		b = appendjson.String(b, e.AbsPath)
		b = append(b, `,"type":`...)
		b = appendjson.String(b, e.Type)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

func (f *FrameOut) appendJSON(b []byte) []byte {
	b = append(b, `{"function":`...)
	b = appendjson.StringPtr(b, f.Function)
	b = append(b, ',')
	if f.source != nil {
		b = append(b, f.source.json...)
	} else {
		b = append(b, `"filename":`...)
		b = appendjson.StringPtr(b, f.Filename)
		b = append(b, `,"abs_path":`...)
		b = appendjson.StringPtr(b, f.AbsPath)
	}
	b = append(b, `,"lineno":`...)
	b = appendIntPtr(b, f.Lineno)
	b = append(b, `,"colno":`...)
	b = appendIntPtr(b, f.Colno)
	if len(f.PreContext) == 0 && f.ContextLine == nil && len(f.PostContext) == 0 {
		b = append(b, `,"pre_context":[],"context_line":null,"post_context":[],"original_index":`...)
	} else {
		b = append(b, `,"pre_context":`...)
		b = appendStrings(b, f.PreContext)
		b = append(b, `,"context_line":`...)
		b = appendjson.StringPtr(b, f.ContextLine)
		b = append(b, `,"post_context":`...)
		b = appendStrings(b, f.PostContext)
		b = append(b, `,"original_index":`...)
	}
	b = strconv.AppendInt(b, int64(f.OriginalIndex), 10)
	if f.InApp != nil {
		b = append(b, inAppJSON[:len(inAppJSON)-len("false")]...)
		b = strconv.AppendBool(b, *f.InApp)
	}
	if f.Data.Symbolicated {
		b = append(b, `,"data":{"symbolicated":true`...)
	} else {
		b = append(b, `,"data":{"symbolicated":false`...)
	}
	if f.Data.json != nil {
		b = append(b, f.Data.json...)
	} else {
		b = append(b, `,"resolved_with":`...)
		b = appendjson.StringPtr(b, f.Data.ResolvedWith)
		b = append(b, `,"sourcemap":`...)
		b = appendjson.StringPtr(b, f.Data.Sourcemap)
	}
	return append(b, "}}"...)
}

// inAppJSON is the longest JSON of FrameOut.InApp.
const inAppJSON = `,"in_app":false`

func appendIntPtr(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *n, 10)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendjson.String(b, s)
	}
	return append(b, ']')
}
