// Package pki is the cluster's certificate authority: one self-signed
// ECDSA P-256 CA (created by the first manager, kept in the store so every
// manager signs with the same one), the certificates it issues to agents
// and managers, and the checks that turn a verified certificate into an
// identity. An identity is a role and an id, written "agent:<id>" or
// "manager:<id>" in the certificate's URI SAN and its common name; it is
// what a peer is, whatever its request bodies say.
//
// It is a leaf below agentrpc (which reads serials of the connections it
// holds to agents): the agent binary links it to make its key and
// request, the manager to sign and verify.
//
// Imports: none.
package pki
