package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// instanceService is the HTTP service of one process instance (docs/protocol.md, "The harness
// service"). Each instance has its own listener, so the address is the instance's identity: no request
// names an instance, none can act in another's name, and a crash closes it with the instance's links.
type instanceService struct {
	p    *procInstance
	srv  *http.Server
	url  string
	once sync.Once
	errs int // protocol errors noted in the history, bounded by maxNotedErrors
	// warnings counts the requests served with a warning (warn), the first maxNotedErrors of them noted.
	warnings int
}

// maxNotedErrors bounds the malformed requests of one instance that are noted in the history; every
// one is answered 400 and written to instances.log.
const maxNotedErrors = 5

// maxRequestBody bounds a request body: the protocol's bodies are a few dozen bytes.
const maxRequestBody = 64 << 10

func newInstanceService(p *procInstance) (*instanceService, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sim: service of instance %s: %w", p.in.id, err)
	}
	s := &instanceService{p: p, url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", s.handle(s.ready))
	mux.HandleFunc("/poll", s.handle(s.poll))
	mux.HandleFunc("/belief", s.handle(s.belief))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusNotFound, "no such request: the harness serves POST /ready, /poll and /belief (docs/protocol.md)")
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// close stops the service: the listener and every connection, so requests in flight end (a poll held
// for its duration is cut short, as a crashed process's would be).
func (s *instanceService) close() {
	s.once.Do(func() { _ = s.srv.Close() })
}

// handle checks the method and decodes the body into a fresh value before calling h.
func (s *instanceService) handle(h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			s.refuse(w, r, http.StatusMethodNotAllowed, "use POST")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		if err != nil {
			return // the instance went away while sending
		}
		if len(body) > maxRequestBody {
			s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("the body is over %d bytes", maxRequestBody))
			return
		}
		h(w, r, body)
	}
}

// refuse answers a request the protocol does not allow, and says so in instances.log (and, for the
// first few, in the history): an instance's client rarely shows what it was told.
func (s *instanceService) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	answer(w, code, map[string]any{"error": msg})
	p := s.p
	p.out.harness(fmt.Sprintf("%s %s answered %d: %s", r.Method, r.URL.Path, code, msg))
	p.mu.Lock()
	s.errs++
	noted := s.errs <= maxNotedErrors
	p.mu.Unlock()
	if noted {
		p.r.rec.Add(history.Event{Kind: history.KindNote, At: p.r.rec.Now(), Instance: p.in.id,
			Note: fmt.Sprintf("protocol error of instance %s: %s %s: %s", p.label, r.Method, r.URL.Path, msg)})
	}
}

// warn says in instances.log, and for the first few in the history, that a request was served in a way
// the instance may not expect (a clock reading that cannot be used); the request is still answered.
func (s *instanceService) warn(r *http.Request, msg string) {
	p := s.p
	p.mu.Lock()
	s.warnings++
	n := s.warnings
	p.mu.Unlock()
	switch {
	case n <= maxNotedErrors:
		p.out.harness(fmt.Sprintf("%s %s: %s", r.Method, r.URL.Path, msg))
		p.r.rec.Add(history.Event{Kind: history.KindNote, At: p.r.rec.Now(), Instance: p.in.id,
			Note: fmt.Sprintf("instance %s: %s %s: %s", p.label, r.Method, r.URL.Path, msg)})
	case n == maxNotedErrors+1:
		p.out.harness(fmt.Sprintf("%s %s: %s (further warnings of this instance are not logged)", r.Method, r.URL.Path, msg))
	}
}

func answer(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a request body strictly, or answers 400 saying what is wrong.
func (s *instanceService) decode(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	if err := strictJSON(body, v); err != nil {
		msg := jsonProblem(err, "")
		if len(body) == 0 {
			msg = "the body is empty: send a JSON object (docs/protocol.md)"
		}
		s.refuse(w, r, http.StatusBadRequest, msg)
		return false
	}
	return true
}

// fencingToken is a token as the protocol sends it: a JSON number, or a decimal string for tokens past
// 2^53.
type fencingToken uint64

func (t *fencingToken) UnmarshalJSON(b []byte) error {
	str := strings.Trim(string(b), `"`)
	n, err := strconv.ParseUint(str, 10, 64)
	if err != nil {
		return fmt.Errorf("token %s: want a non-negative integer (or a decimal string of one)", b)
	}
	*t = fencingToken(n)
	return nil
}

// readyReport is what POST /ready told: the instance's clock, and the harness's at that moment.
type readyReport struct {
	clockMS float64
	wall    time.Time
}

func (s *instanceService) ready(w http.ResponseWriter, r *http.Request, body []byte) {
	wall, at := time.Now(), s.p.r.rec.Now()
	var req struct {
		ClockMS *float64 `json:"clock_ms"`
	}
	if !s.decode(w, r, body, &req) {
		return
	}
	if req.ClockMS == nil {
		s.refuse(w, r, http.StatusBadRequest, `field "clock_ms": missing: the instance's wall clock in milliseconds since the Unix epoch`)
		return
	}
	s.p.sample(at, req.ClockMS)
	select {
	case s.p.ready <- readyReport{clockMS: *req.ClockMS, wall: wall}:
	default: // a second /ready changes nothing
	}
	answer(w, http.StatusOK, struct{}{})
}

func (s *instanceService) poll(w http.ResponseWriter, r *http.Request, body []byte) {
	at := s.p.r.rec.Now()
	var req struct {
		Endpoint string       `json:"endpoint"`
		Token    fencingToken `json:"token"`
		ClockMS  *float64     `json:"clock_ms"`
	}
	if !s.decode(w, r, body, &req) {
		return
	}
	if req.Endpoint == "" {
		s.refuse(w, r, http.StatusBadRequest, `field "endpoint": missing: the target polled (a session ID, or a role)`)
		return
	}
	p := s.p
	p.sample(at, req.ClockMS)
	err := p.in.poll(p.r.svc)(r.Context(), req.Endpoint, uint64(req.Token))
	var stale *StaleTokenError
	switch {
	case err == nil:
		p.r.polled(req.Endpoint, p.in.id)
		answer(w, http.StatusOK, map[string]bool{"ok": true})
	case errors.As(err, &stale):
		answer(w, http.StatusConflict, map[string]any{"error": "stale token", "max_token": stale.MaxToken})
	case errors.Is(err, errDead):
		answer(w, http.StatusGone, map[string]string{"error": "instance is not running"})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The instance closed the connection: nobody to answer.
	default:
		answer(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
}

func (s *instanceService) belief(w http.ResponseWriter, r *http.Request, body []byte) {
	// The moment of receipt, read together on the run's clock, the real clock and the harness's model of
	// the instance's clock (see reportAge).
	at, now, model := s.p.r.rec.Now(), time.Now(), s.p.in.clock.Now()
	var req struct {
		Endpoint string       `json:"endpoint"`
		Held     *bool        `json:"held"`
		Token    fencingToken `json:"token"`
		ValidMS  *float64     `json:"valid_ms"`
		Reason   string       `json:"reason"`
		ClockMS  *float64     `json:"clock_ms"`
	}
	if !s.decode(w, r, body, &req) {
		return
	}
	switch {
	case req.Endpoint == "":
		s.refuse(w, r, http.StatusBadRequest, `field "endpoint": missing: the target the belief is about`)
		return
	case req.Held == nil:
		s.refuse(w, r, http.StatusBadRequest, `field "held": missing: true while the instance believes it holds the target`)
		return
	}
	p := s.p
	p.sample(at, req.ClockMS)
	b := history.Belief{Held: *req.Held, Token: uint64(req.Token), Reason: req.Reason}
	if req.ValidMS != nil {
		// valid_ms runs on the instance's clock from clock_ms, the moment the instance sent the report,
		// not from its receipt: a report sent just before a pause arrives after it, its deadline already
		// that much nearer. What is left of it at receipt is a span on the instance's clock from now,
		// which the recorder turns into run time at the clock's rate (vinstance.observe). Without a
		// usable clock_ms it runs from the receipt.
		age, problem := p.reportAge(now, req.ClockMS)
		if problem != "" {
			s.warn(r, problem)
		}
		b.Until = model.Add(time.Duration(*req.ValidMS*float64(time.Millisecond)) - age)
	}
	p.in.observe(p.r.rec, p.r.believe)(req.Endpoint, b)
	answer(w, http.StatusOK, struct{}{})
}
