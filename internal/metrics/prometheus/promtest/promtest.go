// Package promtest serves a Prometheus stand-in for the tests of tailor's
// Prometheus clients (the manager's source, tailor report): it checks each
// request as a secured Prometheus would (credentials, headers, TLS) and
// answers the queries with no series, counting what it served and refused.
package promtest

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// Server is a running stand-in.
type Server struct {
	*httptest.Server
	// Served and Refused count the requests answered and those check
	// refused (or sent to a path Prometheus does not serve).
	Served, Refused atomic.Int32
	// CAFile, under TLS, holds the server's own certificate: the CA its
	// clients check it against, httptest's certificate being self-signed.
	CAFile string
}

// New starts a stand-in until the test ends. It answers /api/v1/query with
// an empty vector and /api/v1/query_range with an empty matrix when check
// passes on the request, and 401 with check's complaint when it does not.
// tlsConfig nil serves plain HTTP; &tls.Config{} serves httptest's
// self-signed certificate.
func New(t testing.TB, tlsConfig *tls.Config, check func(*http.Request) error) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := check(r); err != nil {
			s.Refused.Add(1)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		resultType := "vector"
		switch r.URL.Path {
		case "/api/v1/query":
		case "/api/v1/query_range":
			resultType = "matrix"
		default:
			s.Refused.Add(1)
			http.NotFound(w, r)
			return
		}
		s.Served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[]}}`, resultType)
	}))
	// Quiet the log of a handshake the client refuses.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tlsConfig == nil {
		s.Start()
	} else {
		s.TLS = tlsConfig
		s.StartTLS()
		s.CAFile = WriteFile(t, "ca.crt", s.CertPEM())
	}
	t.Cleanup(s.Close)
	return s
}

// CertPEM is the PEM of the server's certificate.
func (s *Server) CertPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
}

// WriteFile writes content to a file of its own, removed when the test
// ends, and returns its path: the token, password and certificate files
// the clients are given.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
