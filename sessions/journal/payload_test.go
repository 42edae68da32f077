package journal

import (
	"fmt"
	"math"
	"reflect"
	"time"
)

// diffPayload reports the first difference between a and b as the codec
// promises equality: times to the microsecond (any location), errors by
// their text, nil and empty slices and maps alike, NaN equal to NaN. It
// returns "" when they are equal.
func diffPayload(a, b any) string {
	return diffValue("", reflect.ValueOf(a), reflect.ValueOf(b))
}

var (
	timeType  = reflect.TypeFor[time.Time]()
	errorType = reflect.TypeFor[error]()
)

func diffValue(path string, a, b reflect.Value) string {
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			return fmt.Sprintf("%s: one side is missing", path)
		}
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %s != %s", path, a.Type(), b.Type())
	}
	if a.Type() == timeType {
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		if d := ta.Sub(tb); d >= time.Microsecond || d <= -time.Microsecond || ta.IsZero() != tb.IsZero() {
			return fmt.Sprintf("%s: time %s != %s", path, ta, tb)
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Interface:
		if a.Type() == errorType {
			ea, eb := a.Interface(), b.Interface()
			if (ea == nil) != (eb == nil) || (ea != nil && ea.(error).Error() != eb.(error).Error()) {
				return fmt.Sprintf("%s: error %v != %v", path, ea, eb)
			}
			return ""
		}
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil vs %v", path, b)
			}
			return ""
		}
		return diffValue(path, a.Elem(), b.Elem())
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil pointer on one side", path)
			}
			return ""
		}
		return diffValue(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if d := diffValue(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d != %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diffValue(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: map len %d != %d", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			if d := diffValue(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), b.MapIndex(k)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		if x != y && !(math.IsNaN(x) && math.IsNaN(y)) || math.Signbit(x) != math.Signbit(y) {
			return fmt.Sprintf("%s: %v != %v", path, x, y)
		}
		return ""
	}
	if a.CanInterface() && b.CanInterface() {
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %#v != %#v", path, a.Interface(), b.Interface())
		}
		return ""
	}
	return ""
}
