package deploy_test

import (
	"context"
	"strings"
	"testing"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/toxitest"
)

// Every deployment of several nodes takes its peer links from Options.Peers (a run passes its
// --toxiproxy server there): every one is on the server under the prefix, and the deployment removes
// them when it closes.
func TestPeerLinksOnGivenProxies(t *testing.T) {
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	url := toxitest.Start(t)
	for _, spec := range []string{deploy.TopologySentinel, deploy.TopologyIndependent, deploy.TopologyCluster} {
		t.Run(spec, func(t *testing.T) {
			remote, err := chaos.NewRemote(url)
			require.NoError(t, err)
			b, err := deploy.Open(context.Background(), spec, deploy.Options{TimeScale: 0.1, Peers: chaos.ForDeploy(remote, "run-"+spec+"-")})
			require.NoError(t, err)
			ps, err := toxiclient.NewClient(url).Proxies()
			require.NoError(t, err)
			require.NotEmpty(t, ps)
			for name := range ps {
				require.True(t, strings.HasPrefix(name, "run-"+spec+"-"), name)
			}
			require.NoError(t, b.Close())
			after, err := toxiclient.NewClient(url).Proxies()
			require.NoError(t, err)
			require.Empty(t, after, "the deployment removes the links it created")
			require.NoError(t, remote.Close(), "and their owner closing them again is no error")
		})
	}
}
