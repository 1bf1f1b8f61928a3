package s3

import (
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"errata/store"
)

// Client is a blob store in one bucket of an S3-compatible object store.
// It is safe for concurrent use.
type Client struct {
	bucket    string
	base      *url.URL // scheme and host of the endpoint
	pathStyle bool
	signer    signer
	http      *http.Client
	retries   int
	timeout   time.Duration
	pageSize  int
	now       func() time.Time
}

var _ store.BlobStore = (*Client)(nil)

// New returns a client for cfg. It does not contact the server; Check does.
func New(cfg Config) (*Client, error) {
	if err := checkBucket(cfg.Bucket); err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	base, err := url.Parse(cfg.endpoint())
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("s3: endpoint %q: want http(s)://HOST[:PORT]", cfg.Endpoint)
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("s3: an access key id and a secret access key are needed")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	dialTimeout := cfg.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 5 * time.Second
	}
	retries := cfg.Retries
	switch {
	case retries == 0:
		retries = 3
	case retries < 0:
		retries = 0
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		// Ranges are of the stored bytes: no transparent gzip.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}
	return &Client{
		bucket:    cfg.Bucket,
		base:      base,
		pathStyle: cfg.PathStyle,
		signer:    signer{accessKeyID: cfg.AccessKeyID, secret: cfg.SecretAccessKey, region: cfg.region(), service: "s3"},
		http:      &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		retries:   retries,
		timeout:   timeout,
		pageSize:  cmp.Or(cfg.ListPageSize, 1000),
		now:       time.Now,
	}, nil
}

// Error is an answer of the object store that is not a success, or a
// request that got no answer. It never holds the secret key. It wraps
// store.ErrNotFound for a missing object and store.ErrUnavailable for a
// server that could not be reached, answered 5xx after the retries, or
// refused errata (see Refused).
type Error struct {
	Op      string // the S3 operation: PutObject, GetObject...
	Key     string
	Status  int    // the HTTP status; 0 when there was no answer
	Code    string // the S3 error code, as AccessDenied or NoSuchKey
	Message string // the server's message
	Tries   int
	Err     error // the transport's error when there was no answer
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s3: %s", e.Op)
	if e.Key != "" {
		fmt.Fprintf(&b, " %s", e.Key)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Tries > 1 {
		fmt.Fprintf(&b, " (%d tries)", e.Tries)
	}
	return b.String()
}

// Refused reports whether the object store answered, and refused the
// request for a reason that retrying does not change (403 AccessDenied,
// 404 NoSuchBucket, ...): errata's configuration is wrong, not the store
// down.
func (e *Error) Refused() bool {
	return e.Status >= 400 && !retryableStatus(e.Status) &&
		!(e.Status == http.StatusNotFound && (e.Code == "" || e.Code == "NoSuchKey"))
}

func (e *Error) Unwrap() []error {
	var errs []error
	switch {
	case e.Status == http.StatusNotFound && (e.Code == "" || e.Code == "NoSuchKey"):
		errs = append(errs, store.ErrNotFound)
	case e.Status == 0 || retryableStatus(e.Status) || e.Refused():
		// A store that refuses errata (a revoked key, a bucket gone) is as
		// unavailable to a client as one that does not answer: 503.
		errs = append(errs, store.ErrUnavailable)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func retryableStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
}

// Check makes sure that the bucket exists and that the keys may list it.
// It lists (rather than HEADs) the bucket so that a failure comes with the
// server's error code, as NoSuchBucket or SignatureDoesNotMatch.
func (c *Client) Check(ctx context.Context) error {
	q := url.Values{"list-type": {"2"}, "max-keys": {"1"}}
	resp, err := c.do(ctx, request{op: "ListObjectsV2", method: http.MethodGet, query: q})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// CreateBucket creates the bucket; one that the keys own already is not
// an error. Tests and first setups use it.
func (c *Client) CreateBucket(ctx context.Context) error {
	resp, err := c.do(ctx, request{op: "CreateBucket", method: http.MethodPut, ok: []int{http.StatusConflict}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusConflict {
		e := c.answerError("CreateBucket", "", resp, 1)
		if e.Code != "BucketAlreadyOwnedByYou" {
			return e
		}
	}
	return nil
}

// Put stores size bytes of r under key, streamed with an unsigned payload
// (see unsignedPayload). A reader that ends early or fails is not retried
// and its error is returned; a request that fails before sending a byte,
// or whose reader can seek back, is retried.
func (c *Client) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("s3: PutObject %s: negative size %d", key, size)
	}
	body := &sizedBody{r: r, left: size}
	if s, ok := r.(io.Seeker); ok {
		if pos, err := s.Seek(0, io.SeekCurrent); err == nil {
			body.seeker, body.start = s, pos
		}
	}
	h := http.Header{}
	h.Set("Content-Type", "application/octet-stream")
	// Each attempt has until Timeout plus a second per MiB (1 MiB/s at
	// least) for its body: a server that stops reading cannot hold it.
	limit := c.timeout + time.Duration(size>>20)*time.Second
	resp, err := c.do(ctx, request{op: "PutObject", method: http.MethodPut, key: key, header: h, body: body, size: size, timeout: limit})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Get reads length bytes from offset of key (length < 0: to the end). A
// read past the end yields no bytes. A failure while the body is read
// wraps store.ErrUnavailable.
func (c *Client) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("s3: GetObject %s: negative offset %d", key, offset)
	}
	if length == 0 {
		if _, err := c.Stat(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	h := http.Header{}
	ranged := offset > 0 || length > 0
	if ranged {
		if length > 0 {
			h.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
		} else {
			h.Set("Range", fmt.Sprintf("bytes=%d-", offset))
		}
	}
	resp, err := c.do(ctx, request{op: "GetObject", method: http.MethodGet, key: key, header: h, ok: []int{http.StatusRequestedRangeNotSatisfiable}})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		resp.Body.Close()
		return io.NopCloser(strings.NewReader("")), nil
	}
	var rc io.ReadCloser = &readBody{rc: resp.Body, op: "GetObject", key: key}
	if ranged && resp.StatusCode == http.StatusOK {
		// The server ignored the range: skip and cut by hand.
		if _, err := io.CopyN(io.Discard, rc, offset); err != nil && !errors.Is(err, io.EOF) {
			rc.Close()
			return nil, err
		}
		if length > 0 {
			rc = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(rc, length), rc}
		}
	}
	return rc, nil
}

// Delete removes key; a missing key is not an error.
func (c *Client) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	resp, err := c.do(ctx, request{op: "DeleteObject", method: http.MethodDelete, key: key, ok: []int{http.StatusNotFound}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		if e := c.answerError("DeleteObject", key, resp, 1); e.Code != "" && e.Code != "NoSuchKey" {
			return e
		}
	}
	return nil
}

// Stat returns the size of key, store.ErrNotFound when it is missing.
func (c *Client) Stat(ctx context.Context, key string) (int64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	resp, err := c.do(ctx, request{op: "HeadObject", method: http.MethodHead, key: key})
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.ContentLength < 0 {
		return 0, &Error{Op: "HeadObject", Key: key, Status: resp.StatusCode, Message: "answer without Content-Length"}
	}
	return resp.ContentLength, nil
}

// listPage is the part of a ListObjectsV2 answer that List reads.
type listPage struct {
	IsTruncated           bool
	NextContinuationToken string
	Contents              []struct {
		Key  string
		Size int64
	}
}

// List calls fn for each key under prefix in key order, starting after
// after, a page (Config.ListPageSize keys) at a time; an error of fn ends it.
func (c *Client) List(ctx context.Context, prefix, after string, fn func(key string, size int64) error) error {
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "max-keys": {strconv.Itoa(c.pageSize)}}
		if prefix != "" {
			q.Set("prefix", prefix)
		}
		if token != "" {
			q.Set("continuation-token", token)
		} else if after != "" {
			q.Set("start-after", after)
		}
		resp, err := c.do(ctx, request{op: "ListObjectsV2", method: http.MethodGet, query: q})
		if err != nil {
			return err
		}
		var page listPage
		err = xml.NewDecoder(io.LimitReader(&readBody{rc: resp.Body, op: "ListObjectsV2", key: prefix}, 64<<20)).Decode(&page)
		resp.Body.Close()
		if err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				return err
			}
			return &Error{Op: "ListObjectsV2", Key: prefix, Status: resp.StatusCode, Message: "unreadable answer", Err: err}
		}
		for _, o := range page.Contents {
			if err := fn(o.Key, o.Size); err != nil {
				return err
			}
		}
		if !page.IsTruncated {
			return nil
		}
		if page.NextContinuationToken == "" {
			return &Error{Op: "ListObjectsV2", Key: prefix, Status: resp.StatusCode, Message: "truncated answer without a continuation token"}
		}
		token = page.NextContinuationToken
	}
}

// checkKey refuses the keys that S3 cannot keep as they are.
func checkKey(key string) error {
	if key == "" || len(key) > 1024 || strings.HasPrefix(key, "/") {
		return fmt.Errorf("s3: bad object key %q", key)
	}
	return nil
}

// request is one S3 operation.
type request struct {
	op     string // for errors
	method string
	key    string // "" for the bucket
	query  url.Values
	header http.Header
	body   *sizedBody // nil: no body
	size   int64
	// ok lists the statuses besides 2xx that the caller handles itself.
	ok []int
	// timeout, when set, bounds each attempt until its answer is closed.
	timeout time.Duration
}

// do sends r, trying again after connection errors and 5xx answers while
// the body can be sent again, and returns an answer whose status is 2xx or
// one of r.ok. Any other answer is an *Error.
func (c *Client) do(ctx context.Context, r request) (*http.Response, error) {
	var last *Error
	for try := 1; ; try++ {
		if try > 1 {
			wait := min(100*time.Millisecond<<(try-2), 2*time.Second)
			wait = wait/2 + rand.N(wait/2+1)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("s3: %s %s: %w (after %v)", r.op, r.key, ctx.Err(), last)
			case <-t.C:
			}
			if r.body != nil {
				if err := r.body.rewind(); err != nil {
					return nil, last
				}
			}
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if r.timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, r.timeout)
		}
		resp, err := c.send(actx, r)
		if err != nil {
			cancel()
			if ferr := r.body.failureOf(); ferr != nil {
				// The caller's reader failed or ended early: not the
				// server's fault, and nothing to retry.
				return nil, fmt.Errorf("s3: %s %s: reading the body: %w", r.op, r.key, ferr)
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("s3: %s %s: %w", r.op, r.key, ctx.Err())
			}
			last = &Error{Op: r.op, Key: r.key, Tries: try, Err: err}
		} else {
			if resp.StatusCode/100 == 2 || containsInt(r.ok, resp.StatusCode) {
				resp.Body = cancelOnClose{resp.Body, cancel}
				return resp, nil
			}
			last = c.answerError(r.op, r.key, resp, try)
			resp.Body.Close()
			cancel()
			if !retryableStatus(resp.StatusCode) {
				return nil, last
			}
		}
		if try > c.retries || (r.body != nil && !r.body.canRewind()) {
			return nil, last
		}
	}
}

// send makes one attempt of r.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	u := *c.base
	path := "/"
	if c.pathStyle {
		path += c.bucket
		if r.key != "" {
			path += "/" + r.key
		}
	} else {
		u.Host = c.bucket + "." + u.Host
		path += r.key
	}
	u.Path = path
	u.RawPath = awsEscape(path, true)
	u.RawQuery = canonicalQuery(r.query)
	var body io.Reader
	if r.body != nil && r.size > 0 {
		body = r.body.attempt()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if r.body != nil {
		req.ContentLength = r.size
		if r.size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	payload := emptyPayloadHash
	if r.body != nil && r.size > 0 {
		payload = unsignedPayload
	}
	c.signer.sign(req, u.RawPath, r.query, payload, c.now())
	return c.http.Do(req)
}

// answerError reads the S3 error document of resp, if any.
func (c *Client) answerError(op, key string, resp *http.Response, tries int) *Error {
	e := &Error{Op: op, Key: key, Status: resp.StatusCode, Tries: tries}
	var doc struct {
		Code    string
		Message string
	}
	if b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); err == nil && len(b) > 0 {
		if xml.Unmarshal(b, &doc) == nil {
			e.Code, e.Message = doc.Code, doc.Message
		}
	}
	// The server has no reason to send the secret back; make sure.
	if s := string(c.signer.secret); s != "" {
		e.Message = strings.ReplaceAll(e.Message, s, "[redacted]")
	}
	return e
}

// cancelOnClose ends an attempt's context once its answer is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func containsInt(list []int, n int) bool {
	for _, v := range list {
		if v == n {
			return true
		}
	}
	return false
}

// sizedBody is the body of a PutObject: exactly left bytes of r. It
// remembers the reader's own failure, so that it is not taken for the
// server's, and whether a retry can send it again. Each attempt reads it
// through its own attemptBody: the transport may still read an attempt's
// body after that attempt failed, and those late reads must not take
// bytes from the next attempt.
type sizedBody struct {
	mu     sync.Mutex
	gen    int // the attempt that may read
	r      io.Reader
	left   int64
	read   int64 // bytes given to the transport so far
	err    error // the reader's failure, or io.ErrUnexpectedEOF
	seeker io.Seeker
	start  int64
}

// errStaleAttempt is what a failed attempt reads once the next began.
var errStaleAttempt = errors.New("s3: body of an abandoned attempt")

// attemptBody is the body of one attempt.
type attemptBody struct {
	b   *sizedBody
	gen int
}

func (b *sizedBody) attempt() io.Reader {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &attemptBody{b: b, gen: b.gen}
}

func (a *attemptBody) Read(p []byte) (int, error) {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	if a.gen != a.b.gen {
		return 0, errStaleAttempt
	}
	return a.b.readLocked(p)
}

// failureOf is the reader's own failure, if any; nil for no body.
func (b *sizedBody) failureOf() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *sizedBody) readLocked(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	b.read += int64(n)
	switch {
	case err == io.EOF && b.left > 0:
		b.err = fmt.Errorf("%w: %d bytes missing", io.ErrUnexpectedEOF, b.left)
		return n, b.err
	case err != nil && err != io.EOF:
		b.err = err
		return n, err
	case b.left == 0:
		return n, io.EOF
	}
	return n, nil
}

func (b *sizedBody) canRewind() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read == 0 || b.seeker != nil
}

// rewind makes the body ready for another attempt.
func (b *sizedBody) rewind() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	if b.read == 0 {
		return nil
	}
	if b.seeker == nil {
		return errors.New("body cannot be sent again")
	}
	if _, err := b.seeker.Seek(b.start, io.SeekStart); err != nil {
		return err
	}
	b.left += b.read
	b.read = 0
	return nil
}

// readBody is an answer's body whose read failures (a connection lost
// half-way) wrap store.ErrUnavailable.
type readBody struct {
	rc      io.ReadCloser
	op, key string
}

func (b *readBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = &Error{Op: b.op, Key: b.key, Message: "reading the answer", Err: err}
	}
	return n, err
}

func (b *readBody) Close() error { return b.rc.Close() }
