package lease

// noteGuardLocked is called when the fresh-dataset guard refused an acquire. The first refusal of a
// guard is worth an INFO line: on a new Redis (or after a restart) no instance gets any lease for one
// LeaseTTL, by design, and without a word that looks like a hang. The guard ends at most one LeaseTTL
// after it was armed, and it was armed before this reply came back, so the line says "until" at the
// latest now + LeaseTTL; refusals up to then belong to the same guard and are not logged again (they
// stay at debug). Called with m.mu held.
func (m *Manager) noteGuardLocked() {
	now := m.clock.Now()
	if now.Before(m.guardLogged) {
		return
	}
	m.guardLogged = now.Add(m.cfg.LeaseTTL)
	m.log.Info("lease: holding grants until "+m.guardLogged.Format("15:04:05.000")+": fresh dataset",
		"instance", m.id, "until", m.guardLogged, "reason", "a new or restarted Redis grants no lease for one LeaseTTL, "+
			"so that holders from before it stop first (MarkEstablished skips this where no such holder can exist)")
}
