package s3

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Secret is a secret access key. It prints as [redacted] under every fmt
// verb and in slog, so that a Config or an error that holds one by mistake
// does not show it.
type Secret string

func (Secret) String() string               { return "[redacted]" }
func (Secret) GoString() string             { return "[redacted]" }
func (Secret) LogValue() slog.Value         { return slog.StringValue("[redacted]") }
func (s Secret) Format(f fmt.State, _ rune) { f.Write([]byte(s.String())) }
func (Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// LogValue logs c as its String.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Config says which bucket to use and how to reach it.
type Config struct {
	Bucket string
	// Prefix, without slashes at its ends, is the folder of the bucket
	// that BLOB_STORE names; the store puts it before its keys (the
	// client itself does not).
	Prefix string
	// Endpoint is the server's base URL, scheme included; empty means
	// AWS's https://s3.REGION.amazonaws.com.
	Endpoint        string
	Region          string // "us-east-1" when empty
	AccessKeyID     string
	SecretAccessKey Secret
	// PathStyle addresses the bucket in the path (ENDPOINT/BUCKET/KEY), as
	// MinIO, versitygw and Ceph RGW want; false puts it in the host name
	// (BUCKET.ENDPOINT/KEY), as AWS prefers.
	PathStyle bool
	// Timeout bounds each attempt of a request until its answer's headers
	// arrive (an upload's attempt gets a second more per MiB of its body);
	// 0 means 10s. A body is then read for as long as its reader wants,
	// under the caller's context.
	Timeout time.Duration
	// DialTimeout bounds each connection attempt; 0 means 5s.
	DialTimeout time.Duration
	// Retries is how many times a request that met a connection error or
	// a 5xx is tried again, waiting 100ms, 200ms, 400ms... (at most 2s)
	// between tries; 0 means 3, negative means none.
	Retries int
	// ListPageSize is how many keys a ListObjectsV2 page asks for; 0
	// means 1000, the most S3 gives.
	ListPageSize int
}

// ParseConfig reads the configuration of an S3 blob store from the
// environment: BLOB_STORE=s3://BUCKET[/PREFIX], S3_ENDPOINT, S3_REGION,
// S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY and S3_PATH_STYLE (true or
// false; true by default when S3_ENDPOINT is set, false for AWS). Its
// errors name variables, never the secret.
func ParseConfig(getenv func(string) string) (Config, error) {
	var c Config
	raw := getenv("BLOB_STORE")
	rest, ok := strings.CutPrefix(raw, "s3://")
	if !ok {
		return c, fmt.Errorf("BLOB_STORE %q: want s3://BUCKET[/PREFIX]", raw)
	}
	c.Bucket, c.Prefix, _ = strings.Cut(rest, "/")
	c.Prefix = strings.Trim(c.Prefix, "/")
	if err := checkBucket(c.Bucket); err != nil {
		return c, fmt.Errorf("BLOB_STORE: %w", err)
	}
	c.Region = getenv("S3_REGION")
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	c.Endpoint = getenv("S3_ENDPOINT")
	c.PathStyle = c.Endpoint != ""
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			return c, fmt.Errorf("S3_ENDPOINT %q: want http(s)://HOST[:PORT]", c.Endpoint)
		}
	}
	if v := getenv("S3_PATH_STYLE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("S3_PATH_STYLE %q: want true or false", v)
		}
		c.PathStyle = b
	}
	c.AccessKeyID = getenv("S3_ACCESS_KEY_ID")
	c.SecretAccessKey = Secret(getenv("S3_SECRET_ACCESS_KEY"))
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return c, fmt.Errorf("BLOB_STORE is s3: S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must both be set")
	}
	return c, nil
}

// String describes c for logs: where the blobs go, not with what key.
func (c Config) String() string {
	loc := "s3://" + c.Bucket
	if c.Prefix != "" {
		loc += "/" + c.Prefix
	}
	style := "virtual-host"
	if c.PathStyle {
		style = "path"
	}
	return fmt.Sprintf("%s at %s (%s, %s-style)", loc, c.endpoint(), c.region(), style)
}

// SameLocation reports whether c and o name the same folder of the same
// bucket on the same server: how BLOB_STORE was spelled (s3://b/p,
// s3://b//p/, a trailing slash on S3_ENDPOINT, its host's case) does not
// matter, since every spelling stores under the same keys.
func (c Config) SameLocation(o Config) bool {
	return strings.EqualFold(c.endpoint(), o.endpoint()) && c.Bucket == o.Bucket && c.Prefix == o.Prefix
}

func (c Config) region() string {
	if c.Region == "" {
		return "us-east-1"
	}
	return c.Region
}

func (c Config) endpoint() string {
	if c.Endpoint == "" {
		return "https://s3." + c.region() + ".amazonaws.com"
	}
	return strings.TrimRight(c.Endpoint, "/")
}

// checkBucket checks name against S3's rules for bucket names.
func checkBucket(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Errorf("bucket name %q: want 3 to 63 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return fmt.Errorf("bucket name %q: want lower-case letters, digits, '-' and '.'", name)
		}
	}
	if !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return fmt.Errorf("bucket name %q: must begin and end with a letter or digit", name)
	}
	return nil
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
