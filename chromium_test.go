package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"errata/authn"
)

// devtools speaks the Chrome DevTools Protocol with a Chromium started with
// --remote-debugging-pipe: JSON messages separated by NUL bytes, written to
// its file descriptor 3 and read from its descriptor 4. The pipe needs no
// WebSocket client.
type devtools struct {
	t      *testing.T
	w      *os.File
	msgs   chan devtoolsMessage
	nextID int
	events []devtoolsMessage
}

type devtoolsMessage struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startChromium starts headless Chromium with the DevTools pipe.
func startChromium(t *testing.T, chromium string) *devtools {
	t.Helper()
	toBrowserR, toBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromBrowserR, fromBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowserR, fromBrowserW} // fds 3 and 4
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toBrowserR.Close()
	fromBrowserW.Close()
	d := &devtools{t: t, w: toBrowserW, msgs: make(chan devtoolsMessage, 64)}
	go func() {
		defer close(d.msgs)
		r := bufio.NewReader(fromBrowserR)
		for {
			b, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m devtoolsMessage
			if json.Unmarshal(b[:len(b)-1], &m) == nil {
				d.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		// Ask the browser to close, so that it takes its child processes
		// with it; kill it when it does not.
		d.send("", "Browser.close", nil)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		toBrowserW.Close()
		fromBrowserR.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	return d
}

func (d *devtools) send(session, method string, params any) int {
	d.nextID++
	msg := map[string]any{"id": d.nextID, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	d.w.Write(append(b, 0)) //nolint:errcheck // a dead browser fails the next read
	return d.nextID
}

// call sends a command and decodes its result into out.
func (d *devtools) call(session, method string, params, out any) {
	d.t.Helper()
	id := d.send(session, method, params)
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-d.msgs:
			if !ok {
				d.t.Fatalf("%s: chromium closed the pipe", method)
			}
			if m.ID == 0 {
				d.events = append(d.events, m)
				continue
			}
			if m.ID != id {
				continue
			}
			if m.Error != nil {
				d.t.Fatalf("%s: %s", method, m.Error.Message)
			}
			if out != nil {
				if err := json.Unmarshal(m.Result, out); err != nil {
					d.t.Fatalf("%s result: %v", method, err)
				}
			}
			return
		case <-timeout:
			d.t.Fatalf("%s: no answer from chromium", method)
		}
	}
}

// waitEvent waits for the event method of session.
func (d *devtools) waitEvent(session, method string) {
	d.t.Helper()
	for i, e := range d.events {
		if e.Method == method && e.SessionID == session {
			d.events = append(d.events[:i:i], d.events[i+1:]...)
			return
		}
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-d.msgs:
			if !ok {
				d.t.Fatalf("waiting for %s: chromium closed the pipe", method)
			}
			if m.Method == method && m.SessionID == session {
				return
			}
		case <-timeout:
			d.t.Fatalf("timed out waiting for %s", method)
		}
	}
}

// outerHTML returns the document of session as HTML.
func (d *devtools) outerHTML(session string) string {
	d.t.Helper()
	var doc struct{ Root struct{ NodeID int } }
	d.call(session, "DOM.getDocument", map[string]any{}, &doc)
	var html struct{ OuterHTML string }
	d.call(session, "DOM.getOuterHTML", map[string]any{"nodeId": doc.Root.NodeID}, &html)
	return html.OuterHTML
}

// TestChromiumConfirmPage opens the link of a confirmation message in
// headless Chromium and clicks the page's button with a real mouse event:
// the page runs no script, so only its form can verify the address.
func TestChromiumConfirmPage(t *testing.T) {
	t.Parallel()
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		t.Fatal("CHROMIUM is not set: run the tests with ./dev.sh test, which installs chromium")
	}
	// No EMAIL_URL: the message is logged without its text, and a sent
	// message keeps none. The test signs the link the message carried with
	// the server's secret, as the server did.
	srv := startErrata(t, nil)
	srv.token = srv.user(t, "ann@example.com", "org:read")
	status, body := srv.api(t, "POST", "/api/0/users/me/emails/", map[string]any{"email": "work@example.com"})
	if status != 201 {
		t.Fatalf("POST emails: %d %s", status, body)
	}
	var me struct{ ID string }
	if code := srv.getJSON(t, "/api/0/users/me/", &me); code != 200 {
		t.Fatalf("GET users/me: %d", code)
	}
	userID, _ := strconv.ParseInt(me.ID, 10, 64)
	key := authn.NewEmailKeys(srv.env["SECRET_KEY"]).Sign(authn.EmailKey{
		UserID: userID, Email: "work@example.com", Expires: time.Now().Add(authn.EmailKeyLifetime)})
	link := srv.env["PUBLIC_URL"] + "/profile/confirm-email/" + key + "/"

	d := startChromium(t, chromium)
	var target struct{ TargetID string }
	d.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	d.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	s := attached.SessionID
	d.call(s, "Page.enable", nil, nil)
	d.call(s, "Page.navigate", map[string]any{"url": link}, nil)
	d.waitEvent(s, "Page.loadEventFired")

	page := d.outerHTML(s)
	if !strings.Contains(page, "Confirm work@example.com") || strings.Contains(strings.ToLower(page), "<script") {
		t.Fatalf("confirmation page:\n%s", page)
	}
	if got := srv.emails(t); !slices.Contains(got, "work@example.com verified=false primary=false") {
		t.Fatalf("showing the page changed the address: %q", got)
	}

	// Click the button where it is drawn, as a user does.
	var doc struct{ Root struct{ NodeID int } }
	d.call(s, "DOM.getDocument", map[string]any{}, &doc)
	var button struct{ NodeID int }
	d.call(s, "DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": "#confirm"}, &button)
	if button.NodeID == 0 {
		t.Fatal("no button on the page")
	}
	var box struct{ Model struct{ Content []float64 } }
	d.call(s, "DOM.getBoxModel", map[string]any{"nodeId": button.NodeID}, &box)
	q := box.Model.Content
	x, y := (q[0]+q[4])/2, (q[1]+q[5])/2
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		d.call(s, "Input.dispatchMouseEvent", map[string]any{
			"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1,
		}, nil)
	}
	d.waitEvent(s, "Page.loadEventFired")

	result := d.outerHTML(s)
	if !strings.Contains(result, "work@example.com is confirmed") {
		t.Errorf("result page:\n%s", result)
	}
	want := "work@example.com verified=true primary=false"
	if got := srv.emails(t); !slices.Contains(got, want) {
		t.Errorf("emails = %q, want %q among them", got, want)
	}
	var verified bool
	srv.db(t).QueryRow(context.Background(),
		`SELECT is_verified FROM email_addresses WHERE email = 'work@example.com'`).Scan(&verified)
	if !verified {
		t.Error("the database does not show the address verified")
	}
}
