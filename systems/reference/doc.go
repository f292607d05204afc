// Package reference puts Tenure's own libraries through the harness: the lease manager (package lease)
// as the system "reference", and the leader election (package election) as "election-redis" and
// "election-postgres". These are the systems every matrix cell must pass.
//
// Built with the tenure_mutants tag, it also registers their checker-power mutants as hidden systems
// (listed by no `simrun list`, run by name with --system): "mutant-<mechanism>" for each entry of
// mutation.Mutants, the reference or election-redis with that one safety mechanism removed, for the
// tests that show a scenario catches it (docs/mutants.md). Without the tag, asking for one says how to
// build a simrun that has them. Hidden too is "reference-wait", the reference with
// lease.Config.WaitReplicas = 1, which holds nothing on a Redis without replicas. On a go-redis
// ClusterClient the reference runs in the cluster key layout.
//
// The systems register themselves with sim.Register when the package is imported, as a user's system
// does; simcli imports the package, since its defaults and the matrix's verdict name these systems.
package reference
