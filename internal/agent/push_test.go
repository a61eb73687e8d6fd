package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A push is taken when the manager answers 204, or 200 whatever its body
// (a manager newer than the agent may say more than the agent reads); any
// other status is a failure that carries the manager's words, and no token
// goes over plain http.
func TestPushToStatuses(t *testing.T) {
	for name, tc := range map[string]struct {
		status  int
		body    string
		wantErr string
	}{
		"no content":   {status: http.StatusNoContent},
		"200 and body": {status: http.StatusOK, body: `{"something":"newer"}`},
		"refused":      {status: http.StatusForbidden, body: "not the agent", wantErr: "not the agent"},
		"unavailable":  {status: http.StatusServiceUnavailable, body: "not ready", wantErr: "503"},
	} {
		t.Run(name, func(t *testing.T) {
			var token string
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				token = r.Header.Get("Authorization")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			err := pushTo(context.Background(), srv.Client(), srv.URL, "the-token", []byte("{}"))
			if token != "Bearer the-token" {
				t.Errorf("the manager got Authorization %q", token)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a token went over plain http")
	}))
	defer plain.Close()
	if err := pushTo(context.Background(), plain.Client(), plain.URL, "the-token", []byte("{}")); err == nil || !strings.Contains(err.Error(), "not https") {
		t.Errorf("plain http: error %v, want a refusal", err)
	}
}
