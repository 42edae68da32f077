package journal

import (
	"fmt"
	"strconv"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// gpu-sample's Apps (flag bit 4): [app, app, ...] in Sample.Apps order,
// where an app is either
//
//	k                          the keyframe's app k (0-based), unchanged
//	[pid, name, used, bus, uuid]
//
// pid is a number when PIDStatus is OK, else [status, pid]; used is a
// Reading, name, bus and uuid are Texts, as in a row. A keyframe's apps
// are all written whole. When a sample's Apps equal its keyframe's, flag
// bit 5 says so and nothing is written; when Apps is nil neither flag is
// set, so nil and empty ([]) stay apart.

// keyframeApps is how many apps a sample may hold that its keyframe lacks
// before the sample is made a keyframe itself: a relaunch changes every
// process at once, and writing them whole in every sample until the next
// keyframe would cost more than one keyframe (about 100 bytes an app,
// against about 150 a GPU row, once).
const keyframeApps = 2

// unseenApps counts the apps of apps that ref lacks.
func unseenApps(apps, ref []event.ComputeApp) int {
	n := 0
	for i := range apps {
		if findApp(ref, &apps[i], i) < 0 {
			n++
		}
	}
	return n
}

// maxApps bounds a decoded Apps list (a host runs far fewer compute
// processes): a damaged line must not allocate without limit.
const maxApps = 1 << 16

// appendApps writes apps, naming by position those equal to an app of ref
// (the keyframe's; nil for a keyframe itself).
func appendApps(b []byte, apps, ref []event.ComputeApp) []byte {
	b = append(b, '[')
	for i := range apps {
		if i > 0 {
			b = append(b, ',')
		}
		if k := findApp(ref, &apps[i], i); k >= 0 {
			b = strconv.AppendInt(b, int64(k), 10)
			continue
		}
		b = appendApp(b, &apps[i])
	}
	return append(b, ']')
}

// findApp returns the position of a in ref, trying i first (lists are
// sorted and mostly unchanged), or -1.
func findApp(ref []event.ComputeApp, a *event.ComputeApp, i int) int {
	if i < len(ref) && ref[i] == *a {
		return i
	}
	for k := range ref {
		if ref[k] == *a {
			return k
		}
	}
	return -1
}

func appendApp(b []byte, a *event.ComputeApp) []byte {
	b = append(b, '[')
	if a.PIDStatus == event.CellOK {
		b = strconv.AppendInt(b, int64(a.PID), 10)
	} else {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(a.PIDStatus), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(a.PID), 10)
		b = append(b, ']')
	}
	b = append(b, ',')
	b = appendText(b, a.Name)
	b = append(b, ',')
	b = appendReading(b, a.UsedMiB)
	b = append(b, ',')
	b = appendText(b, a.BusID)
	b = append(b, ',')
	b = appendText(b, a.UUID)
	return append(b, ']')
}

// parseApps reads what appendApps writes; ref is the keyframe's Apps (nil
// when the sample is a keyframe or its keyframe is missing or damaged).
// The result is non-nil, and shares nothing with ref.
func parseApps(v []byte, ref []event.ComputeApp) ([]event.ComputeApp, error) {
	var arr [16][]byte
	el, err := splitArray(v, arr[:0])
	if err != nil {
		return nil, err
	}
	if len(el) > maxApps {
		return nil, fmt.Errorf("%d apps, more than %d", len(el), maxApps)
	}
	apps := make([]event.ComputeApp, len(el))
	var fs [6][]byte
	var sub [4][]byte
	for i, e := range el {
		if len(e) == 0 {
			return nil, errSyntax
		}
		if e[0] != '[' {
			k, ok := parseInt(e)
			if !ok || k < 0 {
				return nil, errSyntax
			}
			if k >= int64(len(ref)) {
				return nil, fmt.Errorf("app %d is its keyframe's app %d, and the keyframe has %d (or is missing or damaged)", i, k, len(ref))
			}
			apps[i] = ref[k]
			continue
		}
		f, err := splitArray(e, fs[:0])
		if err != nil || len(f) != 5 || len(f[0]) == 0 || len(f[1]) == 0 || len(f[2]) == 0 || len(f[3]) == 0 || len(f[4]) == 0 {
			return nil, fmt.Errorf("app %d: %w", i, errSyntax)
		}
		a := &apps[i]
		if f[0][0] == '[' {
			p, err := splitArray(f[0], sub[:0])
			if err != nil || len(p) != 2 {
				return nil, fmt.Errorf("app %d pid: %w", i, errSyntax)
			}
			st, ok1 := parseStatus(p[0])
			pid, ok2 := parseInt(p[1])
			if !ok1 || !ok2 || st == event.CellOK || pid < -1<<31 || pid >= 1<<31 {
				return nil, fmt.Errorf("app %d pid: %w", i, errSyntax)
			}
			a.PID, a.PIDStatus = int(pid), st
		} else {
			pid, ok := parseInt(f[0])
			if !ok || pid < -1<<31 || pid >= 1<<31 {
				return nil, fmt.Errorf("app %d pid: %w", i, errSyntax)
			}
			a.PID = int(pid)
		}
		var ok [4]bool
		a.Name, ok[0] = parseText(f[1], sub[:0])
		a.UsedMiB, ok[1] = parseReading(f[2], sub[:0])
		a.BusID, ok[2] = parseText(f[3], sub[:0])
		a.UUID, ok[3] = parseText(f[4], sub[:0])
		if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
			return nil, fmt.Errorf("app %d: %w", i, errSyntax)
		}
	}
	return apps, nil
}
