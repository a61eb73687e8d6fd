// Package agentcert is the certificate the managers serve the node agents'
// reports with, and the CA the agents check it against. The pure part
// makes a CA and a serving certificate for the report Service's names,
// reads and writes them as a Secret's data, and decides, from that data
// and the time alone, whether to create, rotate, reissue or keep them
// (Decide). Keeper is the plumbing: it reads the Secret, carries out the
// decision, publishes the CA bundle (never a key) in a ConfigMap the
// agents may read, and hands the TLS server the current certificate.
package agentcert
