package gpu

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"reflect"
	"testing"
)

// TestAbsentGPU: every Reading, Text and ClockEvents of the row is Absent,
// so a field added to GPU later cannot start as a silent 0 or "".
func TestAbsentGPU(t *testing.T) {
	g := event.AbsentGPU(3)
	if g.Index != 3 || g.Lost {
		t.Fatalf("index %d lost %v", g.Index, g.Lost)
	}
	v := reflect.ValueOf(g)
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch x := f.Interface().(type) {
		case event.Reading:
			if x != (event.Reading{Status: event.CellAbsent}) {
				t.Errorf("%s = %+v, want Absent", name, x)
			}
		case event.Text:
			if x != (event.Text{Status: event.CellAbsent}) {
				t.Errorf("%s = %+v, want Absent", name, x)
			}
		case event.ClockEvents:
			if x != (event.ClockEvents{Status: event.CellAbsent}) {
				t.Errorf("%s = %+v, want Absent", name, x)
			}
		case int, bool:
		default:
			t.Errorf("%s: type %T not covered by AbsentGPU's test", name, x)
		}
	}
}
