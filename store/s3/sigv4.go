package s3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Signature Version 4, as AWS documents it ("Create a signed AWS API
// request") and as S3 applies it: the path is encoded once and not
// normalized, the query and headers are sorted, and the payload hash is
// the hex SHA-256 of the body or the literal UNSIGNED-PAYLOAD.

const (
	sigAlgorithm  = "AWS4-HMAC-SHA256"
	amzDateFormat = "20060102T150405Z"
	// unsignedPayload stands for the body's hash when the body is streamed
	// (PutObject): the signature then covers the method, path, query and
	// headers, not the bytes. Over plain http the bytes are protected only
	// by TCP; the store checks every blob's SHA-1 where it matters (an
	// assembly hashes what it reads; migrate-blobs checks each copy).
	unsignedPayload = "UNSIGNED-PAYLOAD"
	// emptyPayloadHash is the SHA-256 of no bytes.
	emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// signer signs requests with one key pair for one region and service.
type signer struct {
	accessKeyID string
	secret      Secret
	region      string
	service     string
}

// awsEscape percent-encodes s as Signature Version 4 wants: every byte but
// the unreserved ones (A-Z a-z 0-9 - . _ ~), in upper-case hex; '/' stays
// as it is when keepSlash.
func awsEscape(s string, keepSlash bool) string {
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/' && keepSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexdigits[c>>4])
			b.WriteByte(hexdigits[c&15])
		}
	}
	return b.String()
}

// canonicalQuery is query with each name and value encoded, sorted by name
// then value, as both the canonical request and the URL carry it.
func canonicalQuery(query url.Values) string {
	var pairs [][2]string
	for k, vs := range query {
		for _, v := range vs {
			pairs = append(pairs, [2]string{awsEscape(k, false), awsEscape(v, false)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i][0] != pairs[j][0] {
			return pairs[i][0] < pairs[j][0]
		}
		return pairs[i][1] < pairs[j][1]
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p[0] + "=" + p[1])
	}
	return b.String()
}

// canonicalHeaders returns the canonical header block of header (which
// must hold Host) and the list of signed header names. Every header given
// is signed; values are trimmed, inner runs of spaces become one, and the
// values of a repeated header are joined by commas in their order.
func canonicalHeaders(header http.Header) (block, signed string) {
	names := make([]string, 0, len(header))
	values := make(map[string][]string, len(header))
	for k, vs := range header {
		name := strings.ToLower(k)
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		for _, v := range vs {
			values[name] = append(values[name], strings.Join(strings.Fields(v), " "))
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(strings.Join(values[name], ","))
		b.WriteByte('\n')
	}
	return b.String(), strings.Join(names, ";")
}

// canonicalRequest is the canonical request of a request to the encoded
// path escapedPath with query, header (Host included) and payloadHash,
// and the signed header names.
func canonicalRequest(method, escapedPath string, query url.Values, header http.Header, payloadHash string) (creq, signed string) {
	block, signed := canonicalHeaders(header)
	if escapedPath == "" {
		escapedPath = "/"
	}
	return strings.Join([]string{method, escapedPath, canonicalQuery(query), block, signed, payloadHash}, "\n"), signed
}

// scope is the credential scope of a signature made at t.
func (s signer) scope(t time.Time) string {
	return t.UTC().Format("20060102") + "/" + s.region + "/" + s.service + "/aws4_request"
}

// stringToSign is what the signing key signs for creq at t.
func (s signer) stringToSign(t time.Time, creq string) string {
	sum := sha256.Sum256([]byte(creq))
	return sigAlgorithm + "\n" + t.UTC().Format(amzDateFormat) + "\n" + s.scope(t) + "\n" + hex.EncodeToString(sum[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// signature is the hex signature of sts made at t.
func (s signer) signature(t time.Time, sts string) string {
	k := hmacSHA256([]byte("AWS4"+string(s.secret)), t.UTC().Format("20060102"))
	k = hmacSHA256(k, s.region)
	k = hmacSHA256(k, s.service)
	k = hmacSHA256(k, "aws4_request")
	return hex.EncodeToString(hmacSHA256(k, sts))
}

// authorization is the Authorization header of a request whose canonical
// request is creq with signed headers signed, made at t.
func (s signer) authorization(t time.Time, creq, signed string) string {
	return sigAlgorithm + " Credential=" + s.accessKeyID + "/" + s.scope(t) +
		", SignedHeaders=" + signed + ", Signature=" + s.signature(t, s.stringToSign(t, creq))
}

// sign sets the X-Amz-Date, X-Amz-Content-Sha256 and Authorization headers
// of req, whose URL path is escapedPath and query query, signing Host and
// every header req has at this point. Headers the transport adds later
// (User-Agent, Content-Length) are not signed, which S3 allows.
func (s signer) sign(req *http.Request, escapedPath string, query url.Values, payloadHash string, t time.Time) {
	req.Header.Set("X-Amz-Date", t.UTC().Format(amzDateFormat))
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	h := req.Header.Clone()
	h.Set("Host", req.Host)
	creq, signed := canonicalRequest(req.Method, escapedPath, query, h, payloadHash)
	req.Header.Set("Authorization", s.authorization(t, creq, signed))
}
