package instance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

// Harness is a client of an instance's harness service (docs/protocol.md, "The harness service").
type Harness struct {
	url    string
	client *http.Client
	now    func() time.Time // the wall clock reported as clock_ms
}

// NewHarness returns a client of the service at url (TENURE_HARNESS_URL).
func NewHarness(url string) *Harness {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	return &Harness{url: url, client: &http.Client{Transport: tr}, now: time.Now}
}

func (h *Harness) clockMS() float64 { return float64(h.now().UnixNano()) / 1e6 }

// post sends one request and decodes the answer's JSON into out (when not nil); it returns the status.
func (h *Harness) post(ctx context.Context, path string, body, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode == http.StatusBadRequest {
		return resp.StatusCode, fmt.Errorf("instance: the harness refused POST %s: %s", path, bytes.TrimSpace(raw))
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("instance: POST %s answered %d with %q: %w", path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode, nil
}

// Ready tells the harness the instance is running (POST /ready).
func (h *Harness) Ready(ctx context.Context) error {
	code, err := h.post(ctx, "/ready", map[string]any{"clock_ms": h.clockMS()}, nil)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("instance: POST /ready answered %d", code)
	}
	return err
}

// Poll visits an endpoint (POST /poll): nil once the poll completed, a *sim.StaleTokenError when
// fencing refused the token.
func (h *Harness) Poll(ctx context.Context, endpoint string, token uint64) error {
	var ans struct {
		Error    string `json:"error"`
		MaxToken uint64 `json:"max_token"`
	}
	code, err := h.post(ctx, "/poll", map[string]any{"endpoint": endpoint, "token": token, "clock_ms": h.clockMS()}, &ans)
	switch {
	case err != nil:
		return err
	case code == http.StatusOK:
		return nil
	case code == http.StatusConflict:
		return &sim.StaleTokenError{MaxToken: ans.MaxToken}
	}
	return fmt.Errorf("instance: poll of %s answered %d: %s", endpoint, code, ans.Error)
}

// Belief reports a change of belief (POST /belief); b.Until, when set, is sent as the time left on now's
// clock. The instance's own clock is what b.Until is read on.
func (h *Harness) Belief(ctx context.Context, endpoint string, b history.Belief, now time.Time) error {
	body := map[string]any{"endpoint": endpoint, "held": b.Held, "token": b.Token, "clock_ms": h.clockMS()}
	if b.Reason != "" {
		body["reason"] = b.Reason
	}
	if !b.Until.IsZero() {
		body["valid_ms"] = float64(b.Until.Sub(now)) / float64(time.Millisecond)
	}
	code, err := h.post(ctx, "/belief", body, nil)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("instance: POST /belief answered %d", code)
	}
	return err
}
