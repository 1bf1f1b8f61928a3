package authn

import (
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClientAddr(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8, 2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		remote  string
		xff     []string
		want    string
	}{
		{"no trusted proxies: the header is ignored", nil, "10.0.0.3:5000", []string{"203.0.113.5"}, "10.0.0.3"},
		{"a connection from elsewhere: the header is ignored", proxies, "198.51.100.1:5000", []string{"203.0.113.5"}, "198.51.100.1"},
		{"one proxy", proxies, "10.0.0.3:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"a chain of proxies", proxies, "10.0.0.3:5000", []string{"203.0.113.5, 10.0.0.2,10.9.9.9"}, "203.0.113.5"},
		{"spoofed entries to the left are never reached", proxies, "10.0.0.3:5000", []string{"10.0.0.7, 1.2.3.4, 203.0.113.5, 10.0.0.2"}, "203.0.113.5"},
		{"headers joined in order", proxies, "10.0.0.3:5000", []string{"1.2.3.4", "203.0.113.5", "10.0.0.2"}, "203.0.113.5"},
		{"every hop trusted: the connection", proxies, "10.0.0.3:5000", []string{"10.0.0.1, 10.0.0.2"}, "10.0.0.3"},
		{"no header: the connection", proxies, "10.0.0.3:5000", nil, "10.0.0.3"},
		{"an empty header: the connection", proxies, "10.0.0.3:5000", []string{""}, "10.0.0.3"},
		{"garbage: the connection", proxies, "10.0.0.3:5000", []string{"garbage"}, "10.0.0.3"},
		{"garbage ends the walk at the last good address", proxies, "10.0.0.3:5000", []string{"203.0.113.5, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"an empty hop ends the walk", proxies, "10.0.0.3:5000", []string{"203.0.113.5,,10.0.0.2"}, "10.0.0.2"},
		{"a hop with a port", proxies, "10.0.0.3:5000", []string{"203.0.113.5:4711"}, "203.0.113.5"},
		{"IPv6 proxy and client", proxies, "[2001:db8::1]:443", []string{"2a00:1450::5, 2001:db8:ff::2"}, "2a00:1450::5"},
		{"an IPv6 hop with a port", proxies, "[2001:db8::1]:443", []string{"[2a00:1450::5]:4711"}, "2a00:1450::5"},
		{"an IPv4 connection mapped in IPv6", proxies, "[::ffff:10.0.0.3]:5000", []string{"::ffff:203.0.113.5"}, "203.0.113.5"},
		{"a zone is dropped", nil, "[fe80::1%eth0]:5000", nil, "fe80::1"},
		{"no address", proxies, "pipe", []string{"203.0.113.5"}, "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/_allauth/browser/v1/auth/login", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := ClientAddr(r, tt.trusted).String(); got != tt.want {
				t.Errorf("ClientAddr = %s, want %s", got, tt.want)
			}
		})
	}
}

// FuzzClientAddr: whatever X-Forwarded-For holds, the answer is a valid
// address: the connection's, or a hop of the header that is not trusted,
// or a trusted one where a malformed hop ended the walk.
func FuzzClientAddr(f *testing.F) {
	for _, s := range []string{"203.0.113.5", "1.2.3.4, 10.0.0.2", "garbage,10.0.0.2", "[2a00::5]:1", "", ",", " , ::ffff:1.2.3.4%x"} {
		f.Add(s)
	}
	proxies, err := ParseTrustedProxies("10.0.0.0/8,2001:db8::/32")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.3:5000"
		r.Header.Set("X-Forwarded-For", header)
		got := ClientAddr(r, proxies)
		if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
			t.Fatalf("header %q: ClientAddr %v", header, got)
		}
		if got == netip.MustParseAddr("10.0.0.3") {
			return
		}
		var hops []netip.Addr
		for hop := range strings.SplitSeq(header, ",") {
			hops = append(hops, parseHop(hop))
		}
		if !slices.Contains(hops, got) {
			t.Errorf("header %q: ClientAddr %v is no hop of it", header, got)
		}
		if r.RemoteAddr = "198.51.100.1:5000"; ClientAddr(r, proxies) != netip.MustParseAddr("198.51.100.1") {
			t.Errorf("header %q: read from an untrusted connection", header)
		}
	})
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.1.2.3/8, 192.0.2.1 ,2001:db8::1, ::ffff:192.0.2.0/120,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.0.2.1/32"),
		netip.MustParsePrefix("2001:db8::1/128"),
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("fd00::/8"),
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("prefixes (-want +got):\n%s", diff)
	}
	for _, empty := range []string{"", "  "} {
		if got, err := ParseTrustedProxies(empty); err != nil || got != nil {
			t.Errorf("%q: %v, %v, want none", empty, got, err)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.1,", "fe80::1%eth0", "10.0.0.0/8;10.1.0.0/16"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
