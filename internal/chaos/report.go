package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable prints the report as a table of figures, one row per scenario.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "\nrelay-chaos: seed %d, %d files, %d POIs (%d malformed), %d expected relationships, %s\n\n",
		r.Seed, r.Files, r.POIs, r.Malformed, r.Edges, r.TotalTime.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRESULT\tWORKERS\tCONCURRENT\tKILLS\tSIGTERMS\tPG RESTARTS\tSTRANDED\tKILL TO RETRY MIN/MED/P99/MAX\tEXPEDITED\tPOIS\tFAILED_POIS\tRELATIONSHIPS\tLOST\tDUPLICATED\tPUBLISH\tWORK")
	for _, res := range r.Results {
		rescue := "-"
		if res.RescueMax > 0 {
			rescue = fmt.Sprintf("%s/%s/%s/%s", res.RescueMin.Round(100*time.Millisecond), res.RescueMedian.Round(100*time.Millisecond),
				res.RescueP99.Round(100*time.Millisecond), res.RescueMax.Round(100*time.Millisecond))
		}
		c := res.Check
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n",
			res.Scenario, passFail(res.Passed), res.Processes, res.Concurrent, res.Kills, res.SIGTERMs, res.PGRestarts,
			res.Stranded, rescue, res.Expedited, c.POIsStored+c.FailedPOIRows, c.FailedPOIRows, c.Relationships,
			res.Lost, res.Duplicated, res.Publish.Round(time.Millisecond), res.Work.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Results {
		for _, v := range res.Violations {
			fmt.Fprintf(w, "%s: violation: %s\n", res.Scenario, v)
		}
		for _, n := range res.Notes {
			fmt.Fprintf(w, "%s: note: %s\n", res.Scenario, n)
		}
		if res.SafetyNetFailures > 0 {
			fmt.Fprintf(w, "%s: %d batch failures logged with the POI ids that could not be written\n", res.Scenario, res.SafetyNetFailures)
		}
		if res.SIGTERMExitMax > 0 {
			fmt.Fprintf(w, "%s: slowest exit after SIGTERM %s\n", res.Scenario, res.SIGTERMExitMax.Round(time.Millisecond))
		}
	}
	return nil
}

// WriteJSON prints the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
