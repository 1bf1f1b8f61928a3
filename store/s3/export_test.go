package s3

import (
	"context"
	"net"
	"net/http"
)

// DialOnly makes c connect to addr whatever the host of its requests, as
// a DNS that resolves BUCKET.DOMAIN there would.
func DialOnly(c *Client, addr string) {
	tr := c.http.Transport.(*http.Transport)
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
}
