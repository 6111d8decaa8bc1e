package testnode

import (
	"github.com/gocql/gocql"
)

// HookSends makes the sessions of c call hook with each statement they execute (a batch's first
// statement) before the driver picks a host for it and sends it, for tests that stop a write
// between the caller's last check and the wire, as a pause of the process there would: the
// driver checks the statement's context again after hook returns, before it writes the frame.
// hook runs on the caller's goroutine and must be safe for concurrent use.
func HookSends(c *gocql.ClusterConfig, hook func(stmt string)) {
	p := c.PoolConfig.HostSelectionPolicy
	if p == nil {
		p = gocql.RoundRobinHostPolicy()
	}
	c.PoolConfig.HostSelectionPolicy = sendHook{HostSelectionPolicy: p, hook: hook}
}

// sendHook is a host selection policy that calls hook before it picks.
type sendHook struct {
	gocql.HostSelectionPolicy
	hook func(stmt string)
}

func (s sendHook) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	switch q := q.(type) {
	case *gocql.Query:
		s.hook(q.Statement())
	case *gocql.Batch:
		if len(q.Entries) > 0 {
			s.hook(q.Entries[0].Stmt)
		}
	}
	return s.HostSelectionPolicy.Pick(q)
}
