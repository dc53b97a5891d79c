package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testClusterCA: managers starting together on one database end with one
// CA, the first one stored.
func testClusterCA(t *testing.T, e Engine) {
	f := newFixture(t, e)
	other := f.open(Options{Registry: f.reg})
	type pair struct{ cert, key string }
	got := make([]pair, 8)
	var wg sync.WaitGroup
	for i := range got {
		s := f.s
		if i%2 == 1 {
			s = other
		}
		wg.Go(func() {
			c, k, err := s.InitClusterCA(f.ctx, []byte{byte('a' + i)}, []byte{byte('A' + i)}, at(i))
			if err != nil {
				t.Errorf("init %d: %v", i, err)
			}
			got[i] = pair{string(c), string(k)}
		})
	}
	wg.Wait()
	for i, p := range got {
		if p != got[0] || len(p.cert) != 1 || p.key[0] != p.cert[0]-'a'+'A' {
			t.Fatalf("manager %d got CA %q/%q, manager 0 %q/%q: want one stored pair", i, p.cert, p.key, got[0].cert, got[0].key)
		}
	}
	c, _, err := f.s.InitClusterCA(f.ctx, []byte("later"), []byte("later"), at(100))
	f.must(err, "init again")
	if string(c) != got[0].cert {
		t.Fatalf("a later manager replaced the CA: %q", c)
	}
}

func testJoinTokens(t *testing.T, e Engine) {
	f := newFixture(t, e)
	cert := func(serial, agent string) store.AgentCertificate {
		return store.AgentCertificate{Serial: serial, Agent: domain.AgentID(agent), NotAfter: at(10000)}
	}
	f.must(f.s.CreateJoinToken(f.ctx, store.JoinToken{ID: "t2", CreatedAt: at(0), ExpiresAt: at(3600), Uses: 2},
		[]byte("hash-two")), "create two-use token")
	f.must(f.s.CreateJoinToken(f.ctx, store.JoinToken{ID: "tn", CreatedAt: at(0), ExpiresAt: at(60)},
		[]byte("hash-any")), "create token without a use limit")
	wantErr(t, f.s.CreateJoinToken(f.ctx, store.JoinToken{ID: "t2", CreatedAt: at(0), ExpiresAt: at(60)},
		[]byte("other")), store.ErrConflict, "token id reused")

	wantErr(t, f.s.JoinAgent(f.ctx, []byte("nope"), cert("s0", "a0"), at(1)), store.ErrUnknownJoinToken, "unknown token")
	f.must(f.s.JoinAgent(f.ctx, []byte("hash-two"), cert("s1", "a1"), at(1)), "first use")
	f.must(f.s.JoinAgent(f.ctx, []byte("hash-two"), cert("s2", "a2"), at(2)), "second use")
	wantErr(t, f.s.JoinAgent(f.ctx, []byte("hash-two"), cert("s3", "a3"), at(3)), store.ErrJoinTokenSpent, "third use")

	f.must(f.s.JoinAgent(f.ctx, []byte("hash-any"), cert("s4", "a4"), at(59)), "unlimited token before expiry")
	f.must(f.s.JoinAgent(f.ctx, []byte("hash-any"), cert("s5", "a5"), at(59)), "unlimited token again")
	wantErr(t, f.s.JoinAgent(f.ctx, []byte("hash-any"), cert("s6", "a6"), at(60)), store.ErrJoinTokenSpent, "expired token")
}

// testAgentCertificates: an id with a live certificate cannot be joined
// again (the takeover through a second join), only renewed by its holder,
// until it is revoked.
func testAgentCertificates(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.must(f.s.CreateJoinToken(f.ctx, store.JoinToken{ID: "t", CreatedAt: at(0), ExpiresAt: at(3600)},
		[]byte("h")), "create token")
	c := func(serial, agent string, notAfter int) store.AgentCertificate {
		return store.AgentCertificate{Serial: serial, Agent: domain.AgentID(agent), NotAfter: at(notAfter)}
	}
	f.must(f.s.JoinAgent(f.ctx, []byte("h"), c("s1", "victim", 1000), at(1)), "victim joins")
	wantErr(t, f.s.JoinAgent(f.ctx, []byte("h"), c("s2", "victim", 1000), at(2)), store.ErrIdentityTaken, "second join of a live id")
	wantErr(t, f.s.RenewAgentCertificate(f.ctx, "s1", c("s3", "other", 1000), at(2)), store.ErrIdentityTaken,
		"renewal naming another agent")
	wantErr(t, f.s.RenewAgentCertificate(f.ctx, "ghost", c("s3", "victim", 1000), at(2)), store.ErrIdentityTaken,
		"renewal with an unknown certificate")
	f.must(f.s.RenewAgentCertificate(f.ctx, "s1", c("s3", "victim", 2000), at(500)), "renewal by the holder")
	wantErr(t, f.s.RenewAgentCertificate(f.ctx, "s1", c("s4", "victim", 3000), at(1000)), store.ErrIdentityTaken,
		"renewal with an expired certificate")

	revoked, err := f.s.RevokedCertificates(f.ctx, at(1))
	f.must(err, "revoked before rm")
	if len(revoked) != 0 {
		t.Fatalf("revoked before any revocation: %v", revoked)
	}
	n, err := f.s.RevokeAgentCertificates(f.ctx, "victim", at(600))
	f.must(err, "revoke")
	if n != 2 {
		t.Fatalf("revoked %d certificates, want 2", n)
	}
	revoked, err = f.s.RevokedCertificates(f.ctx, at(600))
	f.must(err, "revoked after rm")
	if !slices.Equal(revoked, []string{"s1", "s3"}) {
		t.Fatalf("revoked = %v, want s1 and s3", revoked)
	}
	revoked, err = f.s.RevokedCertificates(f.ctx, at(1500))
	f.must(err, "revoked once s1 expired")
	if !slices.Equal(revoked, []string{"s3"}) {
		t.Fatalf("revoked after s1 expired = %v, want s3 only", revoked)
	}
	wantErr(t, f.s.RenewAgentCertificate(f.ctx, "s3", c("s5", "victim", 3000), at(700)), store.ErrIdentityTaken,
		"renewal with a revoked certificate")
	f.must(f.s.JoinAgent(f.ctx, []byte("h"), c("s5", "victim", 3000), at(700)), "join again after revocation")
}

// testConcurrentJoins: joins of one id racing through two store instances,
// each with a token of its own, leave exactly one certificate.
func testConcurrentJoins(t *testing.T, e Engine) {
	f := newFixture(t, e)
	other := f.open(Options{Registry: f.reg})
	_, _, err := f.s.InitClusterCA(f.ctx, []byte("c"), []byte("k"), at(0))
	f.must(err, "init CA")
	const n = 32
	for i := range n {
		f.must(f.s.CreateJoinToken(f.ctx, store.JoinToken{ID: fmt.Sprint("t", i), CreatedAt: at(0), ExpiresAt: at(3600)},
			[]byte(fmt.Sprint("h", i))), "token %d", i)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		s := f.s
		if i%2 == 1 {
			s = other
		}
		wg.Go(func() {
			errs[i] = s.JoinAgent(f.ctx, []byte(fmt.Sprint("h", i)),
				store.AgentCertificate{Serial: fmt.Sprint("s", i), Agent: "same", NotAfter: at(1000)}, at(1))
		})
	}
	wg.Wait()
	won := winners(t, "join", errs, store.ErrIdentityTaken)
	if won != 1 {
		t.Fatalf("%d concurrent joins of one id succeeded, want 1", won)
	}
}

// testCARotation: a rotation keeps the old CA beside the new one and
// names the old CA in certificates recorded without an issuer; finishing
// is refused while a live agent holds only old certificates, naming it,
// and drops the old CA once every live agent has one of the new.
func testCARotation(t *testing.T, e Engine) {
	f := newFixture(t, e)
	_, _, err := f.s.InitClusterCA(f.ctx, []byte("ca1"), []byte("key1"), at(0))
	f.must(err, "init")
	wantErr(t, f.s.FinishCARotation(f.ctx, "fp1", at(1)), store.ErrNoCARotation, "finish without a rotation")
	f.must(f.s.CreateJoinToken(f.ctx, store.JoinToken{ID: "t", CreatedAt: at(0), ExpiresAt: at(3600)}, []byte("h")), "token")
	for _, a := range []string{"a", "b", "c", "gone"} {
		f.must(f.s.JoinAgent(f.ctx, []byte("h"), store.AgentCertificate{Serial: "s-" + a, Agent: domain.AgentID(a),
			NotAfter: at(1000)}, at(1)), "join %s", a)
	}
	f.must(f.s.RotateClusterCA(f.ctx, store.ClusterCA{CertPEM: []byte("ca2"), KeyPEM: []byte("key2")}, "fp1", at(2)), "rotate")
	wantErr(t, f.s.RotateClusterCA(f.ctx, store.ClusterCA{CertPEM: []byte("ca3"), KeyPEM: []byte("key3")}, "fp2", at(3)),
		store.ErrCARotating, "second rotation")
	ca, err := f.s.ClusterCA(f.ctx)
	f.must(err, "read")
	if string(ca.CertPEM) != "ca2" || string(ca.KeyPEM) != "key2" || string(ca.PreviousCertPEM) != "ca1" || string(ca.PreviousKeyPEM) != "key1" {
		t.Fatalf("during the rotation: %q", ca)
	}
	f.must(f.s.RenewAgentCertificate(f.ctx, "s-a", store.AgentCertificate{Serial: "s-a2", Agent: "a", NotAfter: at(2000),
		Issuer: "fp2"}, at(4)), "renew a under the new CA")
	// c renews under the new CA, then again through a manager that has
	// not seen the rotation yet: the old-CA certificate is the one it uses.
	f.must(f.s.RenewAgentCertificate(f.ctx, "s-c", store.AgentCertificate{Serial: "s-c2", Agent: "c", NotAfter: at(1500),
		Issuer: "fp2"}, at(4)), "renew c under the new CA")
	f.must(f.s.RenewAgentCertificate(f.ctx, "s-c2", store.AgentCertificate{Serial: "s-c3", Agent: "c", NotAfter: at(1800),
		Issuer: "fp1"}, at(5)), "renew c under the old CA")
	_, err = f.s.RevokeAgentCertificates(f.ctx, "gone", at(5))
	f.must(err, "revoke gone")
	stale, err := f.s.StaleAgents(f.ctx, "fp2", at(6))
	f.must(err, "stale")
	if fmt.Sprint(stale) != "[b c]" {
		t.Fatalf("stale agents %v, want [b c]", stale)
	}
	var pending *store.CARotationPending
	err = f.s.FinishCARotation(f.ctx, "fp2", at(6))
	if !errors.As(err, &pending) || fmt.Sprint(pending.Agents) != "[b c]" || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("finish with b and c on the old CA: %v, want a conflict naming b and c", err)
	}
	// c renews under the new CA again, and b's old certificate expires:
	// nothing uses the old CA any more.
	f.must(f.s.RenewAgentCertificate(f.ctx, "s-c3", store.AgentCertificate{Serial: "s-c4", Agent: "c", NotAfter: at(1900),
		Issuer: "fp2"}, at(7)), "renew c under the new CA again")
	f.must(f.s.FinishCARotation(f.ctx, "fp2", at(1000)), "finish")
	if ca, err = f.s.ClusterCA(f.ctx); err != nil || string(ca.CertPEM) != "ca2" || ca.PreviousCertPEM != nil {
		t.Fatalf("after finishing: %q, %v", ca, err)
	}
	f.must(f.s.RotateClusterCA(f.ctx, store.ClusterCA{CertPEM: []byte("ca3"), KeyPEM: []byte("key3")}, "fp2", at(1001)), "rotate again")
}
