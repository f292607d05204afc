package simcli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --shard auto reads the shard of the CI job it runs in, whatever counts from 0 or from 1, and says
// what is missing when it cannot.
func TestShardAutoReadsTheCIsJobIndex(t *testing.T) {
	for name, tc := range map[string]struct {
		env     map[string]string
		i, n    int
		from    string
		wantErr string
	}{
		"explicit":             {env: map[string]string{"TENURE_SHARD": "3/4"}, i: 3, n: 4, from: "TENURE_SHARD"},
		"explicit wins":        {env: map[string]string{"TENURE_SHARD": "1/2", "CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "2"}, i: 1, n: 2, from: "TENURE_SHARD"},
		"github (from 0)":      {env: map[string]string{"GITHUB_ACTIONS": "true", "TENURE_SHARD_INDEX": "0", "TENURE_SHARD_TOTAL": "4"}, i: 1, n: 4, from: "TENURE_SHARD_INDEX"},
		"gitlab (from 1)":      {env: map[string]string{"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "3"}, i: 2, n: 3, from: "GitLab"},
		"kubernetes (from 0)":  {env: map[string]string{"JOB_COMPLETION_INDEX": "4", "TENURE_SHARD_TOTAL": "5"}, i: 5, n: 5, from: "Kubernetes"},
		"circleci":             {env: map[string]string{"CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "2"}, i: 2, n: 2, from: "CircleCI"},
		"buildkite":            {env: map[string]string{"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "3"}, i: 1, n: 3, from: "Buildkite"},
		"nothing":              {env: map[string]string{}, wantErr: "no shard in the environment: set TENURE_SHARD=i/n"},
		"kubernetes, no total": {env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, wantErr: "TENURE_SHARD_TOTAL is not: set it to the number of shards"},
		"index past total":     {env: map[string]string{"JOB_COMPLETION_INDEX": "5", "TENURE_SHARD_TOTAL": "5"}, wantErr: "names no shard"},
		"not a number":         {env: map[string]string{"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "2"}, wantErr: "want whole numbers"},
		"bad explicit":         {env: map[string]string{"TENURE_SHARD": "3"}, wantErr: "TENURE_SHARD: want i/n"},
	} {
		t.Run(name, func(t *testing.T) {
			i, n, from, err := shardFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, [2]int{tc.i, tc.n}, [2]int{i, n})
			require.Contains(t, from, tc.from)
		})
	}
}
