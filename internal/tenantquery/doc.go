// Package tenantquery confines the PromQL a policy's author writes to the
// policy's own namespace. Tailor runs such queries with the manager's
// Prometheus credentials, which read every namespace; escaping the
// template's fields keeps a pod name from ending a string, but not the
// author from naming another namespace. So each query is parsed, every
// series selector in it made to match namespace="<the policy's
// namespace>", and a query that names another namespace, or reads series
// it does not select, refused with what to change.
//
// Pure: a query and a namespace in, a query or a refusal out.
package tenantquery
