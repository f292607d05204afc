// Package virtualcheck holds the tests that a run in virtual time reaches the verdict a run in real time
// reaches on the same scenario, system and seeds: against a recorded real matrix of the ci suite's cells
// (testdata/real-verdicts.tsv, measured by make agree), and live on ten cells. It has no code of its own.
package virtualcheck
