package s3

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// suiteSigner is the signer of AWS's Signature Version 4 test suite.
var suiteSigner = signer{
	accessKeyID: "AKIDEXAMPLE",
	secret:      "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	region:      "us-east-1",
	service:     "service",
}

// suiteRequest is a request of the suite's .req files.
type suiteRequest struct {
	method, path string
	query        url.Values
	header       http.Header
	body         string
}

// parseSuiteRequest reads a .req file: a request line, headers (a line
// that starts with a space continues the previous header with another
// value, as the suite's multiline test wants), a blank line and the body.
func parseSuiteRequest(t *testing.T, text string) suiteRequest {
	t.Helper()
	head, body, _ := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	first := lines[0]
	sp1, sp2 := strings.Index(first, " "), strings.LastIndex(first, " ")
	if sp1 < 0 || sp2 <= sp1 {
		t.Fatalf("request line %q", first)
	}
	r := suiteRequest{method: first[:sp1], header: http.Header{}, body: body}
	target := first[sp1+1 : sp2]
	path, rawQuery, _ := strings.Cut(target, "?")
	r.path = path
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		t.Fatalf("query %q: %v", rawQuery, err)
	}
	r.query = q
	var last string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			r.header[last] = append(r.header[last], strings.TrimSpace(l))
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("header line %q", l)
		}
		last = http.CanonicalHeaderKey(name)
		r.header[last] = append(r.header[last], value)
	}
	return r
}

// TestSignatureSuite signs each request of AWS's Signature Version 4 test
// suite (testdata/sigv4, see its README) and compares the canonical
// request, the string to sign and the Authorization header with the
// suite's.
func TestSignatureSuite(t *testing.T) {
	dirs, err := filepath.Glob("testdata/sigv4/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		name := filepath.Base(dir)
		if name == "README" {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			read := func(ext string) string {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(dir, name+"."+ext))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			r := parseSuiteRequest(t, read("req"))
			at, err := time.Parse(amzDateFormat, r.header.Get("X-Amz-Date"))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(r.body))
			creq, signed := canonicalRequest(r.method, awsEscape(r.path, true), r.query, r.header, hex.EncodeToString(sum[:]))
			if diff := cmp.Diff(read("creq"), creq); diff != "" {
				t.Errorf("canonical request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(read("sts"), suiteSigner.stringToSign(at, creq)); diff != "" {
				t.Errorf("string to sign (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(read("authz"), suiteSigner.authorization(at, creq, signed)); diff != "" {
				t.Errorf("authorization (-want +got):\n%s", diff)
			}
		})
	}
	if n < 20 {
		t.Fatalf("%d test vectors found, want the 21 of testdata/sigv4", n)
	}
}

// TestSignS3Example checks sign against the GET example of S3's own
// documentation ("Signature Calculations for the Authorization Header:
// Transferring Payload in a Single Chunk"), which signs
// x-amz-content-sha256 and a Range header, as the client does.
func TestSignS3Example(t *testing.T) {
	s := signer{accessKeyID: "AKIAIOSFODNN7EXAMPLE", secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1", service: "s3"}
	req, err := http.NewRequest(http.MethodGet, "https://examplebucket.s3.amazonaws.com/test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=0-9")
	s.sign(req, "/test.txt", nil, emptyPayloadHash, time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if diff := cmp.Diff(want, req.Header.Get("Authorization")); diff != "" {
		t.Errorf("authorization (-want +got):\n%s", diff)
	}
}

func TestCanonicalQuerySortsByNameThenValue(t *testing.T) {
	got := canonicalQuery(url.Values{"a": {"2", "1"}, "a-b": {"x"}, "prefix": {"p/q r"}})
	want := "a=1&a=2&a-b=x&prefix=p%2Fq%20r"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
