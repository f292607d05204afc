// Package cifiles checks the CI files that docs/ci ships: they parse, they say what --shard auto needs,
// and their commands, run locally in shard form, make one merged campaign.
package cifiles

import (
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	_ "github.com/tenurelabs/tenure/systems/reference"
)

const (
	ciDir = "../../docs/ci"
	// build is the one build command the files may run: the test builds simrun itself instead.
	build = "go build -o bin/simrun ./cmd/simrun"
	// seeds is the seed count the local runs use instead of the files' (each seed is ciRunsPerSeed runs).
	seeds = "1"
)

// ciRunsPerSeed is how many runs one seed of the ci suite makes in virtual time: its scenarios but those
// virtual time refuses.
func ciRunsPerSeed(t *testing.T) int {
	t.Helper()
	su, err := scenarios.GetSuite("ci")
	require.NoError(t, err)
	n := 0
	for _, name := range su.Scenarios {
		sc, err := scenarios.Get(name)
		require.NoError(t, err)
		written := sc.System
		if written == "" {
			written = "reference"
		}
		sys, err := sim.Lookup(written)
		require.NoError(t, err)
		_, _, err = sim.Plan(sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 1, Virtual: true, Backend: "virtual"})
		if errors.Is(err, sim.ErrVirtual) {
			continue
		}
		require.NoError(t, err, name)
		n++
	}
	return n
}

// workdir returns a new directory of the test's holding bin/simrun, built from this module (the build
// step of the files, which the test does itself: the go tool's cache makes the second build a link).
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "simrun"), "../../cmd/simrun").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

// shell runs cmd with bash in dir, with env added to the test's environment, and returns its exit
// status and output.
func shell(t *testing.T, dir, cmd string, env map[string]string) (int, string) {
	t.Helper()
	c := exec.Command("bash", "-c", cmd)
	c.Dir = dir
	c.Env = os.Environ()
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	out, err := c.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "%s: %v", cmd, err)
		code = ee.ExitCode()
	}
	return code, string(out)
}

// junitRuns counts the runs of a campaign's JUnit file: one test suite each.
func junitRuns(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		Suites []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b, &doc))
	return len(doc.Suites)
}

// A shard's exit status is 0 (every run passed) or 1 (one did not): a campaign judges a system, and
// this test judges only that the commands run. 2 is a usage error: the file is wrong.
func requireRan(t *testing.T, what string, code int, out string) {
	t.Helper()
	require.Contains(t, []int{0, 1}, code, "%s exited %d:\n%s", what, code, out)
}

type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix map[string][]any `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
			With map[string]any    `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// The GitHub Actions workflow: a shard matrix whose jobs find their shard with --shard auto, and a merge
// job after them; run locally, each shard step with the index and count GitHub would give it, then
// the merge step over what the shards wrote, it makes one campaign with every run in it.
func TestGitHubActionsWorkflowRunsLocally(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(ciDir, "github-actions.yml"))
	require.NoError(t, err)
	var w workflow
	require.NoError(t, yaml.Unmarshal(b, &w))
	shardJob, ok := w.Jobs["shard"]
	require.True(t, ok, "a job named shard")
	merge, ok := w.Jobs["merge"]
	require.True(t, ok, "a job named merge")
	require.Equal(t, "shard", merge.Needs, "the merge job waits for the shards")
	n := len(shardJob.Strategy.Matrix["shard"])
	require.GreaterOrEqual(t, n, 2, "a matrix of shards")

	dir := workdir(t)
	env := map[string]string{}
	for k, v := range w.Env {
		env[k] = v
	}
	env["TENURE_SEEDS"] = seeds
	var shardRun string
	for _, st := range shardJob.Steps {
		if !strings.Contains(st.Run, "--shard auto") {
			continue
		}
		shardRun = st.Run
		require.Equal(t, "${{ strategy.job-index }}", st.Env["TENURE_SHARD_INDEX"])
		require.Equal(t, "${{ strategy.job-total }}", st.Env["TENURE_SHARD_TOTAL"])
	}
	require.NotEmpty(t, shardRun, "a step that runs a campaign with --shard auto")
	for _, st := range append(shardJob.Steps, merge.Steps...) {
		if st.Run != "" && strings.HasPrefix(st.Run, "go ") {
			require.Equal(t, build, st.Run, "the build step")
		}
	}
	for k := range n {
		e := maps(env, map[string]string{"TENURE_SHARD_INDEX": strconv.Itoa(k), "TENURE_SHARD_TOTAL": strconv.Itoa(n), "GITHUB_ACTIONS": "true"})
		code, out := shell(t, dir, shardRun, e)
		requireRan(t, "shard "+strconv.Itoa(k), code, out)
		require.Contains(t, out, "shard "+strconv.Itoa(k+1)+"/"+strconv.Itoa(n), out)
		require.Contains(t, out, "--shard auto: from TENURE_SHARD_INDEX/TENURE_SHARD_TOTAL", out)
	}
	ran := false
	for _, st := range merge.Steps {
		if strings.Contains(st.Run, "campaign merge") {
			code, out := shell(t, dir, st.Run, env)
			requireRan(t, "merge", code, out)
			require.Equal(t, ciRunsPerSeed(t), junitRuns(t, filepath.Join(dir, "merged", "junit.xml")), "every run of the campaign, from every shard")
			ran = true
		}
	}
	require.True(t, ran, "a merge step")
}

// maps returns a copy of a with b's entries over it.
func maps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

type k8sJob struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// The Kubernetes manifest: an Indexed Job whose pods find their shard with --shard auto (the index
// from JOB_COMPLETION_INDEX, the count from TENURE_SHARD_TOTAL, equal to its completions), then a
// merge Job; run locally, each pod's command with its index, then the merge's, they make one campaign.
func TestKubernetesIndexedJobRunsLocally(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join(ciDir, "kubernetes-indexed-job.yaml"))
	require.NoError(t, err)
	defer f.Close()
	var jobs []k8sJob
	dec := yaml.NewDecoder(f)
	for {
		var j k8sJob
		if err := dec.Decode(&j); err != nil {
			require.ErrorContains(t, err, "EOF")
			break
		}
		jobs = append(jobs, j)
	}
	require.Len(t, jobs, 2, "the shards' Job and the merge's")
	shards, merge := jobs[0], jobs[1]
	require.Equal(t, "Job", shards.Kind)
	require.Equal(t, "Indexed", shards.Spec.CompletionMode)
	n := shards.Spec.Completions
	require.GreaterOrEqual(t, n, 2)

	command := func(j k8sJob) (string, map[string]string) {
		cs := j.Spec.Template.Spec.Containers
		require.Len(t, cs, 1, j.Metadata.Name)
		require.Equal(t, []string{"bash", "-c"}, cs[0].Command, j.Metadata.Name)
		require.Len(t, cs[0].Args, 1, j.Metadata.Name)
		first, rest, ok := strings.Cut(cs[0].Args[0], " && ")
		require.True(t, ok, "%s: the build, then the command", j.Metadata.Name)
		require.Equal(t, build, first, j.Metadata.Name)
		env := map[string]string{}
		for _, e := range cs[0].Env {
			env[e.Name] = e.Value
		}
		return rest, env
	}
	shardCmd, shardEnv := command(shards)
	require.Equal(t, strconv.Itoa(n), shardEnv["TENURE_SHARD_TOTAL"], "TENURE_SHARD_TOTAL is the Job's completions")
	require.Contains(t, shardCmd, "--shard auto")
	mergeCmd, mergeEnv := command(merge)

	dir := workdir(t)
	results := filepath.Join(dir, "results")
	require.NoError(t, os.Mkdir(results, 0o755))
	for k := range n {
		e := maps(shardEnv, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(k), "TENURE_RESULTS": results, "TENURE_SEEDS": seeds})
		code, out := shell(t, dir, shardCmd, e)
		requireRan(t, "pod "+strconv.Itoa(k), code, out)
		require.Contains(t, out, "shard "+strconv.Itoa(k+1)+"/"+strconv.Itoa(n), out)
		require.Contains(t, out, "--shard auto: from a Kubernetes Indexed Job", out)
	}
	code, out := shell(t, dir, mergeCmd, maps(mergeEnv, map[string]string{"TENURE_RESULTS": results}))
	requireRan(t, "merge", code, out)
	require.Equal(t, ciRunsPerSeed(t), junitRuns(t, filepath.Join(results, "merged", "junit.xml")), "every run of the campaign, from every pod")
}
