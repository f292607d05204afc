package chaos

import "github.com/tenurelabs/tenure/deploy"

// A Link is what a deployment's peer links must be.
var _ deploy.Link = Link(nil)

// ForDeploy returns p as the deploy.Proxies a deployment of several nodes puts in front of its nodes,
// each link's name prefixed with prefix (runs sharing a toxiproxy-server must not collide). The
// deployment closes the links it creates; p stays its owner's.
func ForDeploy(p Proxies, prefix string) deploy.Proxies { return deployProxies{p: p, prefix: prefix} }

type deployProxies struct {
	p      Proxies
	prefix string
}

func (d deployProxies) NewLink(name, upstream string) (deploy.Link, error) {
	l, err := d.p.NewLink(d.prefix+name, upstream)
	if err != nil {
		return nil, err
	}
	return l, nil
}
