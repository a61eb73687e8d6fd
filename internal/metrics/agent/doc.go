// Package agent is the manager's side of the node agent: Receiver takes the
// agents' reports (served over TLS only, with the certificate
// internal/agentcert keeps), authenticating each (a TokenReview of the
// agent's projected service-account token, whose pod binding names the
// node it runs on) and keeping the newest report per node; Source answers
// usage from those reports, and from a fallback source (the kubelet) for
// pods on nodes with no fresh report. An agent can only speak for the node
// its token is bound to.
package agent
