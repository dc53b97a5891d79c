package api

import (
	"errors"
	"net/http"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

func (s *Server) clusterCARoutes() []route {
	return []route{
		{method: "GET", path: "/v1/cluster-ca", access: admin, summary: "The cluster CA and its rotation",
			desc:   "409 when agents have no identities (--insecure-shared-agent-token).",
			status: http.StatusOK, resp: v1.ClusterCA{}, handle: s.getClusterCA},
		{method: "POST", path: "/v1/cluster-ca/rotate", access: admin, summary: "Start rotating the cluster CA",
			desc: "A new CA is made and stored beside the current one. Both are trusted until the rotation is finished; " +
				"agents' certificates are issued by the new one, and each agent renews its certificate at its next " +
				"heartbeat, receiving both CAs to trust managers with. Managers keep certificates of the old CA until " +
				"the rotation finishes, as agents not yet renewed trust only that one. 409 while a rotation runs.",
			status: http.StatusOK, resp: v1.ClusterCA{}, handle: s.rotateClusterCA},
		{method: "POST", path: "/v1/cluster-ca/finish", access: admin, summary: "Finish rotating the cluster CA",
			desc: "Drops the old CA: certificates of it are refused from then on, and managers take certificates of " +
				"the new one. 409 when no rotation runs, or while a live agent still holds only certificates of the old " +
				"CA (named in the message: wait for it to renew, or remove it with DELETE /v1/agents/{id}).",
			status: http.StatusOK, resp: v1.ClusterCA{}, handle: s.finishClusterCA},
	}
}

// clusterCA reads the stored CA as the answer shows it.
func (s *Server) clusterCAState(r *http.Request) (v1.ClusterCA, error) {
	if s.clusterCA == nil {
		return v1.ClusterCA{}, conflict("agents have no identities here (--insecure-shared-agent-token): there is no cluster CA")
	}
	stored, err := s.store.ClusterCA(r.Context())
	if err != nil {
		return v1.ClusterCA{}, err
	}
	var trusted [][]byte
	if stored.PreviousCertPEM != nil {
		trusted = append(trusted, stored.PreviousCertPEM)
	}
	ca, err := pki.CACert(stored.CertPEM, trusted...)
	if err != nil {
		return v1.ClusterCA{}, err
	}
	out := v1.ClusterCA{Fingerprint: ca.Fingerprint(), Certificates: string(ca.Bundle())}
	if stored.PreviousCertPEM != nil {
		prev, err := pki.CACert(stored.PreviousCertPEM)
		if err != nil {
			return v1.ClusterCA{}, err
		}
		out.Rotating, out.Previous = true, prev.Fingerprint()
		stale, err := s.store.StaleAgents(r.Context(), out.Fingerprint, s.clock.Now())
		if err != nil {
			return v1.ClusterCA{}, err
		}
		for _, a := range stale {
			out.StaleAgents = append(out.StaleAgents, string(a))
		}
	}
	return out, nil
}

func (s *Server) getClusterCA(w http.ResponseWriter, r *http.Request) error {
	out, err := s.clusterCAState(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) rotateClusterCA(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.clusterCAState(r)
	if err != nil {
		return err
	}
	if cur.Rotating {
		return conflict("a CA rotation runs already (since CA %s): finish it first (sokovan ca rotate --finish)", cur.Previous)
	}
	certPEM, keyPEM, err := pki.NewCA("sokovan cluster CA", s.clock.Now())
	if err != nil {
		return err
	}
	err = s.store.RotateClusterCA(r.Context(), store.ClusterCA{CertPEM: certPEM, KeyPEM: keyPEM}, cur.Fingerprint, s.clock.Now())
	if errors.Is(err, store.ErrCARotating) {
		return conflict("a CA rotation runs already: finish it first (sokovan ca rotate --finish)")
	}
	if err != nil {
		return err
	}
	s.log.Info("cluster CA rotation started", "previous", cur.Fingerprint)
	return s.answerClusterCA(w, r)
}

func (s *Server) finishClusterCA(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.clusterCAState(r)
	if err != nil {
		return err
	}
	var pending *store.CARotationPending
	err = s.store.FinishCARotation(r.Context(), cur.Fingerprint, s.clock.Now())
	switch {
	case errors.As(err, &pending):
		return conflict("not finished: %v", pending)
	case errors.Is(err, store.ErrNoCARotation):
		return conflict("no CA rotation runs (start one with sokovan ca rotate)")
	case err != nil:
		return err
	}
	s.log.Info("cluster CA rotation finished", "ca", cur.Fingerprint, "dropped", cur.Previous)
	return s.answerClusterCA(w, r)
}

// answerClusterCA has this manager adopt the change at once, not at its
// next look at the store, and answers with the CA as it is now.
func (s *Server) answerClusterCA(w http.ResponseWriter, r *http.Request) error {
	if s.identityChanged != nil {
		s.identityChanged(r.Context())
	}
	out, err := s.clusterCAState(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
