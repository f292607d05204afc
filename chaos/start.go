package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Start adds Count new instances to the fleet (scale up). They start concurrently, at most
// startParallel at once, as a deploy brings up many processes at a time; every start is attempted
// even when some fail. The instances that started are the fault's targets; the error names each
// failed start.
type Start struct {
	Count int `json:"count"`
}

// startParallel bounds how many instances Start brings up at once.
const startParallel = 16

// Name implements Fault.
func (Start) Name() string { return "start" }

// Apply implements Fault.
func (f Start) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	n := f.Count
	if n <= 0 {
		n = 1
	}
	a := Applied{Params: map[string]string{"count": strconv.Itoa(n)}}
	ids := make([]string, n)
	errs := make([]error, n)
	sem := make(chan struct{}, startParallel)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			id, err := env.StartInstance(ctx)
			if err != nil {
				errs[i] = fmt.Errorf("start %d of %d: %w", i+1, n, err)
				return
			}
			ids[i] = id
		}(i)
	}
	wg.Wait()
	for _, id := range ids {
		if id != "" {
			a.Targets = append(a.Targets, id)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, a, fmt.Errorf("%d of %d instances did not start: %w", n-len(a.Targets), n, err)
	}
	return nil, a, nil
}
