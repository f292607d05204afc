// Package reference puts Tenure's own libraries through the harness: the lease manager (package lease)
// as the system "reference", and the leader election (package election) as "election-redis" and
// "election-postgres". These are the systems every matrix cell must pass.
//
// It also registers their checker-power mutants as hidden systems (listed by no `simrun list`, run by
// name with --system): "mutant-<mechanism>" for each entry of LeaseMutants, and the election mutants
// "mutant-election-term-unchecked" and "mutant-election-no-cancel". Each is the reference with one
// safety mechanism of internal/mutation removed, for the tests that show a scenario catches it.
//
// The systems register themselves with sim.Register when the package is imported, as a user's system
// does; simcli imports the package, since its defaults and the matrix's verdict name these systems.
package reference
