package checker

// model is the history read as one model: the index of its events, the fault effects on every instance
// and on the backend, the lease record of every key, the confirmed leases, and the faults outside the
// system's assumptions with what each can explain. Every deadline and every allowance of the checker is
// a conclusion drawn from it (docs/checker.md).
type model struct {
	*index
	ef    *effects
	rec   *record
	ls    *leases
	scope *scope
	// beliefCache holds beliefsOf per endpoint (see believed).
	beliefCache map[string][]belief
}

func newModel(idx *index) *model {
	ef := newEffects(idx)
	return &model{index: idx, ef: ef, rec: newRecord(idx, ef), ls: newLeases(idx), scope: newScope(idx, ef)}
}
