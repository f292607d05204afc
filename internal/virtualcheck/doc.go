// Package virtualcheck holds the test that a run in virtual time reaches the verdict a run in real time
// reaches on the same scenario, system and seed. It has no code of its own.
package virtualcheck
