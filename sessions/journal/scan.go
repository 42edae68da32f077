package journal

import "github.com/flightdeck-dev/flightdeck/sessions/event"

// ScanLight is Scan for readers that take every event but read neither
// GPU rows nor log lines (the report and its ledger: `journal show`,
// history): the bulk kinds gpu-sample, log-lines, throughput and prefill
// are passed undecoded, as their empty payload (event.GPUSample{},
// event.LogLines{}, ...) at their time, which costs nothing. Everything
// else is decoded as Scan decodes it.
func (j *Journal) ScanLight(fn func(e event.Event) error) error {
	st := decState{created: j.h.Created}
	for i := range j.entries {
		e := &j.entries[i]
		var bare event.Payload
		switch e.kind {
		case gpuSampleID:
			bare = event.GPUSample{}
		case logLinesID:
			bare = event.LogLines{}
		case throughputID:
			bare = event.Throughput{}
		case prefillID:
			bare = event.Prefill{}
		}
		if bare != nil {
			if err := fn(event.Event{At: j.h.Created.Add(e.t.Duration()).Local(), Data: bare}); err != nil {
				return err
			}
			continue
		}
		ev, err := j.decodeEntry(i, &st)
		if err != nil {
			j.undecodable(i)
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// ScanKinds is Scan for the events of kinds only, decoding nothing else:
// cheap on a long journal (its GPU samples are skipped unread). The
// gpu-sample kind, whose deltas need the lines before them, is not one it
// takes: use Scan.
func (j *Journal) ScanKinds(fn func(e event.Event) error, kinds ...event.Kind) error {
	var want [event.NumKinds]bool
	for _, k := range kinds {
		if k != gpuSampleID && int(k) < event.NumKinds {
			want[k] = true
		}
	}
	st := decState{created: j.h.Created}
	for i := range j.entries {
		if !want[j.entries[i].kind] {
			continue
		}
		ev, err := j.decodeEntry(i, &st)
		if err != nil {
			j.undecodable(i)
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}
