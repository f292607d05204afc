package simcli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tenurelabs/tenure/reports"
)

const campaignMergeUsage = "simrun campaign merge OUT SHARD_DIR... (OUT a new or empty directory, then the --out of every shard of one campaign)"

// campaignMergeCmd joins the directories of a campaign's shards into one index, JUnit file and summary.
func campaignMergeCmd(args []string, stdout io.Writer) (int, error) {
	if isHelp(args) {
		fmt.Fprint(stdout, campaignHelp)
		return ExitOK, nil
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return ExitUsage, fmt.Errorf("%w: merge takes no flags (got %s): %s", errUsage, a, campaignMergeUsage)
		}
	}
	if len(args) < 2 {
		return ExitUsage, fmt.Errorf("%w: %s", errUsage, campaignMergeUsage)
	}
	out, dirs := args[0], args[1:]
	shards, err := loadShards(out, dirs)
	if err != nil {
		return ExitUsage, err
	}
	v, m, err := mergeShards(out, shards)
	if err != nil {
		return ExitUsage, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return ExitUsage, fmt.Errorf("create %s: %w", out, err)
	}
	werr := writeCampaignOutputs(out, m, v)
	fmt.Fprintf(stdout, "campaign %s: %d shards merged\n", v.def.ID, len(shards))
	v.printText(stdout, out)
	if werr != nil {
		return ExitUsage, fmt.Errorf("write the merged summary: %w", werr)
	}
	fmt.Fprintf(stdout, "summary: %s\nindex: %s\njunit: %s\n", filepath.Join(out, reports.FileSummary),
		filepath.Join(out, reports.FileIndex), filepath.Join(out, reports.FileJUnit))
	return campaignExit(v)
}

// loadedShard is a shard directory and its campaign.json.
type loadedShard struct {
	dir string
	m   campaignManifest
}

// loadShards reads every shard's campaign.json and checks that they are the shards of one campaign,
// each once and none missing, and that out is a fresh directory apart from them.
func loadShards(out string, dirs []string) ([]loadedShard, error) {
	if err := reports.CheckOut(out, reports.KindCampaign); err != nil {
		return nil, outDirError("OUT", err)
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%w: %s already holds files: merge into a new or empty directory", errUsage, out)
	}
	absOut, _ := filepath.Abs(out)
	var shards []loadedShard
	for _, d := range dirs {
		if abs, _ := filepath.Abs(d); abs == absOut {
			return nil, fmt.Errorf("%w: %s is both OUT and a shard: merge into a directory of its own (%s)", errUsage, d, campaignMergeUsage)
		}
		m, err := readManifest(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if m.Shard == 0 {
			return nil, fmt.Errorf("%w: %s is a merge of shards, not a shard: give the shards' own directories", errUsage, d)
		}
		if m.Shard > m.Campaign.Shards {
			return nil, fmt.Errorf("%w: %s calls itself shard %d of %d, which does not exist (was its %s edited?)", errUsage, d, m.Shard, m.Campaign.Shards, fileCampaign)
		}
		shards = append(shards, loadedShard{dir: d, m: m})
	}
	first := shards[0]
	for _, s := range shards[1:] {
		if s.m.Campaign.ID != first.m.Campaign.ID {
			return nil, fmt.Errorf("%w: %s and %s are shards of different campaigns (%s and %s): they differ in %s; run every shard with the same arguments",
				errUsage, first.dir, s.dir, first.m.Campaign.ID, s.m.Campaign.ID, strings.Join(diffDefs(first.m.Campaign, s.m.Campaign), "; "))
		}
	}
	def := first.m.Campaign
	given := map[int]string{}
	for _, s := range shards {
		if prev, ok := given[s.m.Shard]; ok {
			return nil, fmt.Errorf("%w: shard %d/%d is given twice: %s and %s", errUsage, s.m.Shard, def.Shards, prev, s.dir)
		}
		given[s.m.Shard] = s.dir
		if err := checkShardJobs(def, s); err != nil {
			return nil, err
		}
	}
	var missing []string
	var missingJobs []plannedJob
	for i := 1; i <= def.Shards; i++ {
		if _, ok := given[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, def.Shards))
			for _, k := range def.jobsOfShard(i) {
				missingJobs = append(missingJobs, def.Jobs[k])
			}
		}
	}
	if len(missing) > 0 {
		what, it := "shard "+missing[0]+" of campaign "+def.ID+" is", "it"
		if len(missing) > 1 {
			what, it = "shards "+strings.Join(missing, ", ")+" of campaign "+def.ID+" are", "them"
		}
		return nil, fmt.Errorf("%w: %s missing, and with %s %s: %s; run %s (%s --shard %s) and give the directories of every shard",
			errUsage, what, it, plural(len(missingJobs), "job"), jobList(missingJobs, 12), it, def.Command, missing[0])
	}
	slices.SortFunc(shards, func(a, b loadedShard) int { return a.m.Shard - b.m.Shard })
	return shards, nil
}

// checkShardJobs checks that a shard recorded exactly the jobs its campaign gives it.
func checkShardJobs(def campaignDef, s loadedShard) error {
	want := def.jobsOfShard(s.m.Shard)
	ok := len(want) == len(s.m.Jobs)
	for i := 0; ok && i < len(want); i++ {
		r, p := s.m.Jobs[i], def.Jobs[want[i]]
		ok = r.Job == want[i] && r.Scenario == p.Scenario && r.Seed == p.Seed
	}
	if !ok {
		return fmt.Errorf("%w: %s does not record the jobs of shard %d/%d of campaign %s (was its %s edited?)",
			errUsage, s.dir, s.m.Shard, def.Shards, def.ID, fileCampaign)
	}
	return nil
}

// mergeShards joins the shards' records into one view, their directories relative to out.
func mergeShards(out string, shards []loadedShard) (campaignView, campaignManifest, error) {
	def := shards[0].m.Campaign
	absOut, err := filepath.Abs(out)
	if err != nil {
		return campaignView{}, campaignManifest{}, err
	}
	m := campaignManifest{Campaign: def}
	var records []jobRecord
	for _, s := range shards {
		absDir, err := filepath.Abs(s.dir)
		if err != nil {
			return campaignView{}, campaignManifest{}, err
		}
		rel, err := filepath.Rel(absOut, absDir)
		if err != nil {
			rel = absDir
		}
		m.Merged = append(m.Merged, mergedShard{Shard: s.m.Shard, Dir: rel, Started: s.m.Started, Wall: s.m.Wall, Interrupted: s.m.Interrupted})
		if m.Started.IsZero() || s.m.Started.Before(m.Started) {
			m.Started = s.m.Started
		}
		m.Wall = max(m.Wall, s.m.Wall)
		m.Interrupted = m.Interrupted || s.m.Interrupted
		for _, r := range s.m.Jobs {
			if r.Dir != "" {
				r.Dir = filepath.Join(rel, r.Dir)
			}
			records = append(records, r)
		}
	}
	m.Jobs = sortedRecords(records)
	v := campaignView{def: def, records: m.Jobs, interrupted: m.Interrupted, shards: m.Merged}
	return v, m, nil
}

// jobList names up to limit jobs.
func jobList(jobs []plannedJob, limit int) string {
	var parts []string
	for i, j := range jobs {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(jobs)-limit))
			break
		}
		parts = append(parts, j.name())
	}
	return strings.Join(parts, ", ")
}

// diffDefs says how two campaign definitions differ, field by field.
func diffDefs(a, b campaignDef) []string {
	var out []string
	diff := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s (%s vs %s)", what, x, y))
		}
	}
	diff("suite", orNone(a.Suite), orNone(b.Suite))
	diff("scenarios", strings.Join(a.Scenarios, ","), strings.Join(b.Scenarios, ","))
	diff("seeds", a.seedSource()+": "+seedsText(a.Seeds), b.seedSource()+": "+seedsText(b.Seeds))
	diff("time scale", fmt.Sprint(a.TimeScale), fmt.Sprint(b.TimeScale))
	diff("instances", fmt.Sprint(a.Instances), fmt.Sprint(b.Instances))
	diff("endpoints", fmt.Sprint(a.Endpoints), fmt.Sprint(b.Endpoints))
	diff("shard count", fmt.Sprint(a.Shards), fmt.Sprint(b.Shards))
	diff("systems", jobField(a, func(p plannedJob) string { return p.System }), jobField(b, func(p plannedJob) string { return p.System }))
	diff("backends", jobField(a, func(p plannedJob) string { return p.Backend }), jobField(b, func(p plannedJob) string { return p.Backend }))
	if len(out) == 0 {
		out = append(out, "how their jobs are split (built by different versions of simrun?)")
	}
	return out
}

// jobField lists the distinct values of one field over a definition's jobs.
func jobField(d campaignDef, field func(plannedJob) string) string {
	var vals []string
	for _, j := range d.Jobs {
		if v := field(j); !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	return strings.Join(vals, ",")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
