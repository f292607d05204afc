// Package readme keeps the repository's READMEs honest: its test extracts every Go code block of
// README.md and election/README.md and builds it as a complete program, so an example that stops
// compiling fails `make test`.
package readme
